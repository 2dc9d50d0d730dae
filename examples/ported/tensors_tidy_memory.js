// (a) Tensors, tidy and memory: the first TF.js program of the newcomer test (TF.js 4.22, Node).
// Its ndflow port, line for line: tensors_tidy_memory.py.
const tf = require('@tensorflow/tfjs-node');

async function main() {
  const a = tf.tensor2d([[1, 2], [3, 4]]);
  const b = tf.tensor2d([[5, 6], [7, 8]]);
  console.log('shape:', a.shape, 'dtype:', a.dtype, 'rank:', a.rank);

  const c = tf.matMul(a, b);
  console.log('matMul:', await c.array());

  // tidy frees every tensor made inside the function but the one it returns
  const y = tf.tidy(() => tf.sum(tf.add(tf.square(a), b)));
  console.log('sum(a^2 + b):', y.dataSync()[0]);
  console.log('tensors after tidy:', tf.memory().numTensors);

  const squares = a.square();  // outside tidy: yours to dispose
  const z = squares.mean();
  console.log('mean(a^2):', (await z.data())[0]);
  console.log('tensors before dispose:', tf.memory().numTensors);

  tf.dispose([a, b, c, y, squares, z]);
  console.log('tensors after dispose:', tf.memory().numTensors);
}

main();
