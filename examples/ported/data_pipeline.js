// (e) A tf.data pipeline: a dataset of points, shuffled and batched, that a model fits with fitDataset
// (TF.js 4.22, Node). Its ndflow port, line for line: data_pipeline.py.
const tf = require('@tensorflow/tfjs-node');

async function main() {
  // 64 points on y = 3x + 2
  const points = [];
  for (let i = 0; i < 64; i++) {
    const x = i / 32 - 1;
    points.push({xs: [x], ys: [3 * x + 2]});
  }
  const dataset = tf.data.array(points).shuffle(64, 'points').batch(8);

  const first = await dataset.take(1).toArray();
  console.log('batch shapes:', first[0].xs.shape, first[0].ys.shape);
  tf.dispose(first);

  const model = tf.sequential({layers: [tf.layers.dense({units: 1, inputShape: [1]})]});
  const optimizer = tf.train.adam(0.1);
  model.compile({optimizer: optimizer, loss: 'meanSquaredError'});
  const history = await model.fitDataset(dataset, {epochs: 40, verbose: 0});
  console.log('first loss:', history.history.loss[0]);
  console.log('last loss:', history.history.loss[39]);

  const input = tf.tensor2d([[2]]);
  const prediction = model.predict(input);
  console.log('prediction for 2:', prediction.dataSync()[0]);

  tf.dispose([input, prediction]);
  model.dispose();
  optimizer.dispose();  // an optimizer object is not the model's to dispose
  console.log('tensors at the end:', tf.memory().numTensors);
}

main();
