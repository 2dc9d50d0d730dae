"""(b) A sequential model: compile, fit, save, load and predict, each awaited as in every TF.js program.
The ndflow port of sequential_fit_save.js, line for line."""

import asyncio
import sys

import ndflow as nf


async def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else "linear-model"
    model = nf.sequential()
    model.add(nf.layers.dense(units=1, input_shape=[1]))
    model.compile(optimizer=nf.train.sgd(0.05), loss="mean_squared_error")

    # y = 2x - 1
    xs = nf.tensor2d([-1, 0, 1, 2, 3, 4], [6, 1])
    ys = nf.tensor2d([-3, -1, 1, 3, 5, 7], [6, 1])
    history = await model.fit(xs, ys, epochs=250, verbose=0)
    print("epochs:", len(history.epoch))
    print("first loss:", history.history["loss"][0])
    print("last loss:", history.history["loss"][249])

    save_result = await model.save("file://" + directory)
    print("saved weight bytes:", save_result.model_artifacts_info.weight_data_bytes)

    loaded = await nf.load_layers_model("file://" + directory + "/model.json")
    input = nf.tensor2d([10], [1, 1])
    prediction = loaded.predict(input)
    print("prediction for 10:", prediction.data_sync()[0])

    nf.dispose([xs, ys, input, prediction])
    model.dispose()
    loaded.dispose()
    print("tensors at the end:", nf.memory().num_tensors)


asyncio.run(main())
