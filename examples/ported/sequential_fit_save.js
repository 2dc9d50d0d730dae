// (b) A sequential model: compile, fit, save, load and predict, each awaited as in every TF.js program
// (TF.js 4.22, Node). Its ndflow port, line for line: sequential_fit_save.py.
const tf = require('@tensorflow/tfjs-node');

async function main() {
  const dir = process.argv[2] || 'linear-model';
  const model = tf.sequential();
  model.add(tf.layers.dense({units: 1, inputShape: [1]}));
  model.compile({optimizer: tf.train.sgd(0.05), loss: 'meanSquaredError'});

  // y = 2x - 1
  const xs = tf.tensor2d([-1, 0, 1, 2, 3, 4], [6, 1]);
  const ys = tf.tensor2d([-3, -1, 1, 3, 5, 7], [6, 1]);
  const history = await model.fit(xs, ys, {epochs: 250, verbose: 0});
  console.log('epochs:', history.epoch.length);
  console.log('first loss:', history.history.loss[0]);
  console.log('last loss:', history.history.loss[249]);

  const saveResult = await model.save('file://' + dir);
  console.log('saved weight bytes:', saveResult.modelArtifactsInfo.weightDataBytes);

  const loaded = await tf.loadLayersModel('file://' + dir + '/model.json');
  const input = tf.tensor2d([10], [1, 1]);
  const prediction = loaded.predict(input);
  console.log('prediction for 10:', prediction.dataSync()[0]);

  tf.dispose([xs, ys, input, prediction]);
  model.dispose();
  loaded.dispose();
  console.log('tensors at the end:', tf.memory().numTensors);
}

main();
