// (c) A custom training loop with Adam: fit a cubic's coefficients with variables, a loss function and
// optimizer.minimize (TF.js 4.22, Node). Its ndflow port, line for line: custom_loop_adam.py.
const tf = require('@tensorflow/tfjs-node');

// the curve to find: y = -0.8 x^3 - 0.2 x^2 + 0.9 x + 0.5
const xs = tf.linspace(-1, 1, 100);
const ys = tf.tidy(() => xs.pow(3).mul(-0.8).add(xs.square().mul(-0.2)).add(xs.mul(0.9)).add(0.5));

const a = tf.variable(tf.scalar(0.1));
const b = tf.variable(tf.scalar(0.1));
const c = tf.variable(tf.scalar(0.1));
const d = tf.variable(tf.scalar(0.1));

function predict(x) {
  return tf.tidy(() => a.mul(x.pow(3)).add(b.mul(x.square())).add(c.mul(x)).add(d));
}

function loss(predictions, labels) {
  return predictions.sub(labels).square().mean();
}

const optimizer = tf.train.adam(0.05);
const before = tf.memory().numTensors;
for (let i = 0; i < 600; i++) {
  const cost = optimizer.minimize(() => loss(predict(xs), ys), true);
  if (i % 200 === 0) {
    console.log(`step ${i}: loss ${cost.dataSync()[0]}`);
  }
  cost.dispose();
}
// Adam's two moments per variable, made at the first step; nothing per step
console.log('new tensors after 600 steps:', tf.memory().numTensors - before);
console.log('a:', a.dataSync()[0]);
console.log('b:', b.dataSync()[0]);
console.log('c:', c.dataSync()[0]);
console.log('d:', d.dataSync()[0]);
