"""(e) A tf.data pipeline: a dataset of points, shuffled and batched, that a model fits with fit_dataset.
The ndflow port of data_pipeline.js, line for line."""

import asyncio

import ndflow as nf


async def main():
    # 64 points on y = 3x + 2
    points = []
    for i in range(64):
        x = i / 32 - 1
        points.append({"xs": [x], "ys": [3 * x + 2]})
    dataset = nf.data.array(points).shuffle(64, "points").batch(8)

    first = await dataset.take(1).to_array()
    print("batch shapes:", first[0]["xs"].shape, first[0]["ys"].shape)
    nf.dispose(first)

    model = nf.sequential(layers=[nf.layers.dense(units=1, input_shape=[1])])
    optimizer = nf.train.adam(0.1)
    model.compile(optimizer=optimizer, loss="mean_squared_error")
    history = await model.fit_dataset(dataset, epochs=40, verbose=0)
    print("first loss:", history.history["loss"][0])
    print("last loss:", history.history["loss"][39])

    input = nf.tensor2d([[2]])
    prediction = model.predict(input)
    print("prediction for 2:", prediction.data_sync()[0])

    nf.dispose([input, prediction])
    model.dispose()
    optimizer.dispose()  # an optimizer object is not the model's to dispose
    print("tensors at the end:", nf.memory().num_tensors)


asyncio.run(main())
