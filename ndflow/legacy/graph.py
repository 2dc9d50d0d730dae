"""deeplearn.js 0.x's graph API: ``Graph`` of symbolic tensors, evaluated and trained by a ``Session``.

A graph describes one example (placeholders have no batch dimension, as in deeplearn.js); the
session runs it once per example of a batch. Each node's ``forward`` is a few ndflow ops, so
gradients come from ndflow's autodiff rather than from hand-written backward passes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ops
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .ndarray import to_legacy

Forward = Callable[[dict[str, Tensor]], Tensor]
_next_tensor_id = itertools.count().__next__
_next_node_id = itertools.count().__next__


class SymbolicTensor:
    """A graph edge: the output of a node, with a static ``shape`` and no values."""

    def __init__(self, shape: Sequence[int]) -> None:
        self.shape = [int(d) for d in shape]
        self.id = _next_tensor_id()
        self.node: Node | None = None

    @property
    def size(self) -> int:
        """The number of elements."""
        return math.prod(self.shape)

    def __repr__(self) -> str:
        name = self.node.name if self.node is not None else "?"
        return f"SymbolicTensor(id={self.id}, shape={self.shape}, node={name!r})"


class Node:
    """A graph node: ``inputs`` by name, one ``output``."""

    def __init__(self, graph: Graph, name: str, inputs: dict[str, SymbolicTensor], output: SymbolicTensor) -> None:
        self.graph = graph
        self.name = name
        self.inputs = inputs
        self.output = output
        self.id = _next_node_id()
        output.node = self

    def validate(self) -> None:
        """Raise if the inputs do not fit the op."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, shape={self.output.shape})"


class VariableNode(Node):
    """A trainable value; ``data`` is its array (after training: the trained variable)."""

    def __init__(self, graph: Graph, name: str, data: Tensor) -> None:
        if not isinstance(data, Tensor):
            raise TypeError(f"variable: data for variable '{name}' must be an NDArray, got {type(data).__name__}")
        super().__init__(graph, name, {}, SymbolicTensor(data.shape))
        self.data = data


class PlaceholderNode(Node):
    """An input fed at run time through a feed entry."""

    def __init__(self, graph: Graph, name: str, shape: Sequence[int]) -> None:
        super().__init__(graph, name, {}, SymbolicTensor(shape))


class ConstantNode(Node):
    """A fixed value: an NDArray given by the caller, or numbers the session turns into one."""

    def __init__(self, graph: Graph, data: Any) -> None:
        shape = list(data.shape) if isinstance(data, Tensor) else list(np.shape(data))
        super().__init__(graph, "Constant", {}, SymbolicTensor(shape))
        self.data = data


class OpNode(Node):
    """An operation: ``forward(inputs)`` computes its output from its inputs' values."""

    def __init__(
        self,
        graph: Graph,
        name: str,
        inputs: dict[str, SymbolicTensor],
        shape: Sequence[int],
        forward: Forward,
        check: Callable[[], str | None] | None = None,
    ) -> None:
        super().__init__(graph, name, inputs, SymbolicTensor(shape))
        self.forward = forward
        self._check = check

    def validate(self) -> None:
        """Raise ``ValueError`` with deeplearn.js's message if the inputs do not fit."""
        problem = self._check() if self._check is not None else None
        if problem:
            raise ValueError(f"Error adding {self.name} op: {problem}")


def _size(shape: Sequence[int]) -> int:
    return math.prod(shape)


def _scalarized(t: Tensor) -> Tensor:
    """A size-1 operand broadcasts as a scalar (deeplearn.js's ``scalarPlusArray``...)."""
    return ops.reshape(t, []) if t.size == 1 and t.rank > 0 else t


def _elementwise(name: str, fn: Callable[[Tensor, Tensor], Tensor], broadcast_2d_1d: bool) -> Callable[..., Any]:
    def build(self: Graph, x1: SymbolicTensor, x2: SymbolicTensor) -> SymbolicTensor:
        s1, s2 = x1.shape, x2.shape
        if _size(s1) == 1:
            shape = s2
        elif _size(s2) == 1 or len(s1) >= len(s2):
            shape = s1
        else:
            shape = s2

        def check() -> str | None:
            row_bias = len(s1) + len(s2) == 3 and (s1[-1] == s2[-1])
            if _size(s1) == 1 or _size(s2) == 1 or s1 == s2 or (broadcast_2d_1d and row_bias):
                return None
            return f"one of the inputs must be a scalar or the shapes {s1} and {s2} must match"

        def forward(v: dict[str, Tensor]) -> Tensor:
            return ops.reshape(fn(_scalarized(v["t1"]), _scalarized(v["t2"])), shape)

        return self._add(OpNode(self, name, {"t1": x1, "t2": x2}, shape, forward, check))

    build.__name__ = name
    return build


def _matmul_shape(s1: list[int], s2: list[int]) -> tuple[list[int], str | None]:
    if len(s1) == 2 and len(s2) == 2:
        ok, shape = s1[1] == s2[0], [s1[0], s2[1]]
    elif len(s1) == 2 and len(s2) == 1:
        ok, shape = s1[1] == s2[0], [s1[0]]
    elif len(s1) == 1 and len(s2) == 2:
        ok, shape = s1[0] == s2[0], [s2[1]]
    elif len(s1) == 1 and len(s2) == 1:
        ok, shape = s1[0] == s2[0], [1]
    else:
        return [], f"inputs must be vectors or matrices, got shapes {s1} and {s2}"
    return shape, None if ok else f"inner dimensions of shapes {s1} and {s2} must match"


def _matmul(a: Tensor, b: Tensor) -> Tensor:
    """deeplearn.js's matmul: matrix x matrix, matrix x vector, vector x matrix, vector x vector."""
    a2 = ops.reshape(a, [1, -1]) if a.rank == 1 else a
    b2 = ops.reshape(b, [-1, 1]) if b.rank == 1 else b
    product = ops.mat_mul(a2, b2)
    return ops.reshape(product, [-1]) if a.rank == 1 or b.rank == 1 else product


def _conv_shape(shape: list[int], field: int, depth: int, stride: int, pad: int | None) -> tuple[list[int], int]:
    if len(shape) != 3:
        raise ValueError(f"Error adding conv2d/maxPool op: input must be of rank 3, got shape {shape}")
    if pad is None:
        pad = (shape[0] * (stride - 1) - stride + field) // 2
    rows, cols = ((n - field + 2 * pad) / stride + 1 for n in shape[:2])
    if rows != int(rows) or cols != int(cols):
        raise ValueError(f"the output shape ({rows}, {cols}) must be integers: change the stride and/or zero pad")
    return [int(rows), int(cols), depth], pad


class Graph:
    """A graph of ops on symbolic tensors; methods add a node and return its output."""

    def __init__(self) -> None:
        self.nodes: list[Node] = []
        self.layers = GraphLayers(self)

    def _add(self, node: Node) -> SymbolicTensor:
        node.validate()
        self.nodes.append(node)
        return node.output

    def _unary(self, name: str, x: SymbolicTensor, fn: Callable[[Tensor], Tensor], shape: Any = None) -> SymbolicTensor:
        return self._add(OpNode(self, name, {"x": x}, x.shape if shape is None else shape, lambda v: fn(v["x"])))

    def getNodes(self) -> list[Node]:
        """Every node, in the order they were added."""
        return list(self.nodes)

    # -- inputs ------------------------------------------------------------------------------------
    def variable(self, name: str, data: Tensor) -> SymbolicTensor:
        """A trainable variable initialised with ``data`` (the graph takes ownership of the array)."""
        node = VariableNode(self, name, data)
        ENGINE.keep(data)  # the graph owns it now: no scope may dispose it
        return self._add(node)

    def placeholder(self, name: str, shape: Sequence[int]) -> SymbolicTensor:
        """An input of ``shape`` (one example), fed by a feed entry."""
        return self._add(PlaceholderNode(self, name, shape))

    def constant(self, value: Any) -> SymbolicTensor:
        """A constant: a number, nested lists of numbers, or an NDArray (which stays the caller's)."""
        if not isinstance(value, Tensor | int | float | list | tuple | np.ndarray) or isinstance(value, bool):
            raise TypeError(f"constant: unimplemented constant type {type(value).__name__}")
        return self._add(ConstantNode(self, value))

    # -- ops ---------------------------------------------------------------------------------------
    def reshape(self, x: SymbolicTensor, shape: Sequence[int]) -> SymbolicTensor:
        """``x`` with a new shape of the same size."""
        shape = [int(d) for d in shape]

        def check() -> str | None:
            return None if _size(x.shape) == _size(shape) else f"size of shape {x.shape} does not match {shape}"

        return self._add(OpNode(self, "Reshape", {"x": x}, shape, lambda v: ops.reshape(v["x"], shape), check))

    def fusedLinearCombination(
        self, x1: SymbolicTensor, x2: SymbolicTensor, c1: SymbolicTensor, c2: SymbolicTensor
    ) -> SymbolicTensor:
        """``c1 * x1 + c2 * x2`` for scalars ``c1`` and ``c2``."""

        def check() -> str | None:
            if x1.shape != x2.shape:
                return f"shapes {x1.shape} and {x2.shape} must match"
            if c1.shape or c2.shape:
                return f"c1 and c2 must be scalars, got shapes {c1.shape} and {c2.shape}"
            return None

        def forward(v: dict[str, Tensor]) -> Tensor:
            return ops.add(ops.mul(v["c1"], v["t1"]), ops.mul(v["c2"], v["t2"]))

        inputs = {"t1": x1, "t2": x2, "c1": c1, "c2": c2}
        return self._add(OpNode(self, "Linear Combination", inputs, x1.shape, forward, check))

    add = _elementwise("Add", ops.add, True)
    subtract = _elementwise("Subtract", ops.sub, False)
    multiply = _elementwise("Multiply", ops.mul, False)
    divide = _elementwise("Divide", ops.div, False)

    def reduceSum(self, x: SymbolicTensor) -> SymbolicTensor:
        """The sum of every element (a scalar)."""
        return self._unary("ReduceSum", x, ops.sum, [])

    def _concat(self, rank: int, x1: SymbolicTensor, x2: SymbolicTensor, axis: int) -> SymbolicTensor:
        s1, s2 = x1.shape, x2.shape
        pairs = list(enumerate(zip(s1, s2, strict=False)))
        ok = len(s1) == len(s2) == rank and all(a == b for i, (a, b) in pairs if i != axis)
        shape = [a + b if i == axis else a for i, (a, b) in pairs]

        def check() -> str | None:
            return None if ok else f"shapes {s1} and {s2} must be rank {rank} and match except on axis {axis}"

        forward: Forward = lambda v: ops.concat([v["x1"], v["x2"]], axis)  # noqa: E731
        return self._add(OpNode(self, f"Concat{rank}D", {"x1": x1, "x2": x2}, shape, forward, check))

    def concat1d(self, x1: SymbolicTensor, x2: SymbolicTensor) -> SymbolicTensor:
        """Two vectors joined."""
        return self._concat(1, x1, x2, 0)

    def concat2d(self, x1: SymbolicTensor, x2: SymbolicTensor, axis: int) -> SymbolicTensor:
        """Two matrices joined along ``axis``."""
        return self._concat(2, x1, x2, axis)

    def concat3d(self, x1: SymbolicTensor, x2: SymbolicTensor, axis: int) -> SymbolicTensor:
        """Two rank-3 tensors joined along ``axis``."""
        return self._concat(3, x1, x2, axis)

    def concat4d(self, x1: SymbolicTensor, x2: SymbolicTensor, axis: int) -> SymbolicTensor:
        """Two rank-4 tensors joined along ``axis``."""
        return self._concat(4, x1, x2, axis)

    def matmul(self, x1: SymbolicTensor, x2: SymbolicTensor) -> SymbolicTensor:
        """Matrix (or vector) product: ``[m, n] x [n]`` is ``[m]``, ``[m] x [m, n]`` is ``[n]``."""
        shape, problem = _matmul_shape(x1.shape, x2.shape)
        forward: Forward = lambda v: _matmul(v["x1"], v["x2"])  # noqa: E731
        return self._add(OpNode(self, "MatMul", {"x1": x1, "x2": x2}, shape, forward, lambda: problem))

    def conv2d(
        self,
        x: SymbolicTensor,
        w: SymbolicTensor,
        b: SymbolicTensor,
        fieldSize: int,
        outputDepth: int,
        stride: int = 1,
        zeroPad: int | None = None,
    ) -> SymbolicTensor:
        """2D convolution of an ``[h, w, d]`` input with ``w`` ``[f, f, d, outputDepth]`` plus bias ``b``."""
        shape, pad = _conv_shape(x.shape, fieldSize, outputDepth, stride, zeroPad)

        def check() -> str | None:
            if len(w.shape) != 4 or len(b.shape) != 1:
                return f"weights must be rank 4 and biases rank 1, got shapes {w.shape} and {b.shape}"
            if w.shape[:2] != [fieldSize, fieldSize] or w.shape[2] != x.shape[2] or w.shape[3] != outputDepth:
                return f"weights of shape {w.shape} do not fit field size {fieldSize}, input {x.shape}"
            return None

        def forward(v: dict[str, Tensor]) -> Tensor:
            return ops.add(ops.conv2d(v["x"], v["w"], stride, pad), v["b"])

        return self._add(OpNode(self, "Convolution 2D", {"x": x, "w": w, "b": b}, shape, forward, check))

    def maxPool(self, x: SymbolicTensor, fieldSize: int, stride: int = 1, zeroPad: int | None = None) -> SymbolicTensor:
        """Max pooling of an ``[h, w, d]`` input."""
        shape, pad = _conv_shape(x.shape, fieldSize, x.shape[2] if len(x.shape) == 3 else 0, stride, zeroPad)
        return self._unary("Max pool", x, lambda t: ops.max_pool(t, fieldSize, stride, pad), shape)

    def exp(self, x: SymbolicTensor) -> SymbolicTensor:
        """``e ** x``."""
        return self._unary("Exp", x, ops.exp)

    def log(self, x: SymbolicTensor) -> SymbolicTensor:
        """Natural logarithm."""
        return self._unary("Log", x, ops.log)

    def relu(self, x: SymbolicTensor) -> SymbolicTensor:
        """``max(x, 0)``."""
        return self._unary("ReLU", x, ops.relu)

    def leakyRelu(self, x: SymbolicTensor, alpha: float) -> SymbolicTensor:
        """Leaky ReLU with slope ``alpha`` below zero."""
        return self._unary("LeakyReLU", x, lambda t: ops.leaky_relu(t, alpha))

    def prelu(self, x: SymbolicTensor, alpha: SymbolicTensor) -> SymbolicTensor:
        """Parametric ReLU: ``alpha`` has ``x``'s shape."""

        def check() -> str | None:
            return None if x.shape == alpha.shape else f"the shapes x: {x.shape} and alpha: {alpha.shape} must match"

        forward: Forward = lambda v: ops.prelu(v["x"], v["alpha"])  # noqa: E731
        return self._add(OpNode(self, "PReLU", {"x": x, "alpha": alpha}, x.shape, forward, check))

    def elu(self, x: SymbolicTensor) -> SymbolicTensor:
        """Exponential linear unit."""
        return self._unary("Elu", x, ops.elu)

    def tanh(self, x: SymbolicTensor) -> SymbolicTensor:
        """Hyperbolic tangent."""
        return self._unary("TanH", x, ops.tanh)

    def sigmoid(self, x: SymbolicTensor) -> SymbolicTensor:
        """``1 / (1 + e ** -x)``."""
        return self._unary("Sigmoid", x, ops.sigmoid)

    def square(self, x: SymbolicTensor) -> SymbolicTensor:
        """``x * x``."""
        return self._unary("Square", x, ops.square)

    def softmax(self, x: SymbolicTensor) -> SymbolicTensor:
        """Softmax of a vector of at least two values."""
        if len(x.shape) != 1 or x.shape[0] < 2:
            raise ValueError(f"Error adding Softmax op: the input must be a vector of at least 2 values, got {x.shape}")
        return self._unary("Softmax", x, ops.softmax)

    def softmaxCrossEntropyCost(self, x: SymbolicTensor, target: SymbolicTensor) -> SymbolicTensor:
        """``-sum(target * log(softmax(x) + 1e-5))``: the cost of logits ``x`` for a one-hot ``target``."""

        def check() -> str | None:
            return None if x.shape == target.shape else f"x shape {x.shape} must match target shape {target.shape}"

        def forward(v: dict[str, Tensor]) -> Tensor:
            return ops.neg(ops.sum(ops.mul(v["target"], ops.log(ops.add(ops.softmax(v["x"]), 1e-5)))))

        inputs = {"x": x, "target": target}
        return self._add(OpNode(self, "SoftmaxCrossEntropyCost", inputs, [], forward, check))

    def meanSquaredCost(self, label: SymbolicTensor, prediction: SymbolicTensor) -> SymbolicTensor:
        """``mean(0.5 * (label - prediction) ** 2)`` (deeplearn.js's definition, with the 1/2)."""

        def check() -> str | None:
            same = label.shape == prediction.shape
            return None if same else f"label shape {label.shape} must match prediction shape {prediction.shape}"

        def forward(v: dict[str, Tensor]) -> Tensor:
            return ops.mul(ops.mean(ops.square(ops.sub(v["label"], v["prediction"]))), 0.5)

        inputs = {"label": label, "prediction": prediction}
        return self._add(OpNode(self, "Mean Squared Cost", inputs, [], forward, check))

    def argmax(self, x: SymbolicTensor) -> SymbolicTensor:
        """The flat index of the largest value, shape ``[1]``."""
        if _size(x.shape) == 0:
            raise ValueError("Error adding argmax op: input tensor must have at least one entry")
        return self._unary("ArgMax", x, lambda t: ops.reshape(ops.arg_max(ops.reshape(t, [-1])), [1]), [1])

    def argmaxEquals(self, x1: SymbolicTensor, x2: SymbolicTensor) -> SymbolicTensor:
        """1 where ``argmax(x1) == argmax(x2)``, else 0 (float32, shape ``[1]``)."""

        def check() -> str | None:
            return None if x1.shape == x2.shape else f"x1 shape {x1.shape} must match x2 shape {x2.shape}"

        def forward(v: dict[str, Tensor]) -> Tensor:
            a, b = (ops.arg_max(ops.reshape(v[k], [-1])) for k in ("x1", "x2"))
            return ops.reshape(ops.cast(ops.equal(a, b), "float32"), [1])

        return self._add(OpNode(self, "ArgMaxEquals", {"x1": x1, "x2": x2}, [1], forward, check))

    def dispose(self) -> None:
        """Dispose the arrays the graph owns: its variables' data (beyond deeplearn.js, which leaked them)."""
        for node in self.nodes:
            if isinstance(node, VariableNode):
                node.data.dispose()


class GraphLayers:
    """``graph.layers``: ``dense``."""

    def __init__(self, g: Graph) -> None:
        self.g = g

    def dense(
        self,
        name: str,
        x: SymbolicTensor,
        units: int,
        activation: Callable[[SymbolicTensor], SymbolicTensor] | None = None,
        useBias: bool = True,
        kernelInitializer: Initializer | None = None,
        biasInitializer: Initializer | None = None,
    ) -> SymbolicTensor:
        """A fully connected layer on a vector ``x``: ``activation(x W + b)``."""
        kernel = kernelInitializer or VarianceScalingInitializer()
        bias_init = biasInitializer or ZerosInitializer()
        fan_in = x.shape[0]
        weights = self.g.variable(f"{name}-weights", kernel.initialize([fan_in, units], fan_in, units))
        out = self.g.matmul(x, weights)
        if useBias:
            bias = self.g.variable(f"{name}-bias", bias_init.initialize([units], fan_in, units))
            out = self.g.add(out, bias)
        return activation(out) if activation is not None else out


# -- initializers (graph/initializers.ts) ------------------------------------------------------------
class Initializer:
    """Makes the initial array of a variable of ``weightsShape``."""

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """A new array of ``weightsShape``."""
        raise NotImplementedError(f"{type(self).__name__}.initialize")


class VarianceScalingInitializer(Initializer):
    """Normal (truncated) or uniform samples scaled by ``scale / n`` (n from ``mode``)."""

    def __init__(self, scale: float = 1.0, mode: str = "fan_in", distribution: str = "normal") -> None:
        if mode not in ("fan_in", "fan_out", "fan_avg"):
            raise ValueError(f"VarianceScalingInitializer: unexpected mode '{mode}'")
        if distribution not in ("normal", "uniform"):
            raise ValueError(f"VarianceScalingInitializer: unexpected distribution '{distribution}'")
        self.scale, self.mode, self.distribution = scale, mode, distribution

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """Samples of the scaled distribution."""
        n = {"fan_in": inputUnits, "fan_out": outputUnits, "fan_avg": (inputUnits + outputUnits) / 2}[self.mode]
        if self.distribution == "normal":
            return to_legacy(ops.truncated_normal(list(weightsShape), 0.0, math.sqrt(self.scale / n)))
        return to_legacy(ops.random_uniform(list(weightsShape), 0.0, math.sqrt(3 * self.scale / n)))


class ZerosInitializer(Initializer):
    """Zeros."""

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """An array of zeros."""
        return to_legacy(ops.zeros(list(weightsShape)))


class OnesInitializer(Initializer):
    """Ones."""

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """An array of ones."""
        return to_legacy(ops.ones(list(weightsShape)))


class ConstantInitializer(Initializer):
    """One value everywhere."""

    def __init__(self, value: float = 0) -> None:
        self.value = value

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """An array filled with ``value``."""
        return to_legacy(ops.fill(list(weightsShape), self.value, "float32"))


class TensorInitializer(Initializer):
    """A copy of a given array."""

    def __init__(self, tensor: Tensor) -> None:
        self.tensor = tensor

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """A copy of the array."""
        return to_legacy(ops.clone(self.tensor))


class RandomNormalInitializer(Initializer):
    """Normal samples."""

    def __init__(self, mean: float = 0, stdev: float = 0.05) -> None:
        self.mean, self.stdev = mean, stdev

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """Samples of the normal distribution."""
        return to_legacy(ops.random_normal(list(weightsShape), self.mean, self.stdev))


class RandomTruncatedNormalInitializer(RandomNormalInitializer):
    """Normal samples redrawn beyond two standard deviations."""

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """Samples of the truncated normal distribution."""
        return to_legacy(ops.truncated_normal(list(weightsShape), self.mean, self.stdev))


class RandomUniformInitializer(Initializer):
    """Uniform samples on ``[minval, maxval)``."""

    def __init__(self, minval: float = -0.05, maxval: float = 0.05) -> None:
        self.minval, self.maxval = minval, maxval

    def initialize(self, weightsShape: Sequence[int], inputUnits: int, outputUnits: int) -> Tensor:
        """Samples of the uniform distribution."""
        return to_legacy(ops.random_uniform(list(weightsShape), self.minval, self.maxval))
