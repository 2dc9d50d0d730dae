"""deeplearn.js 0.x arrays: ``NDArray``, ``Scalar``, ``Array1D`` ... ``Array4D``, with camelCase methods.

A legacy array *is* an ndflow tensor (a subclass that adds no state), so it works with every
``nf`` op and with the engine's memory management. ``to_legacy`` turns the tensors an op returns
into the class of their rank (``Array2D`` for rank 2, ...), so that results keep the legacy
methods (``get``, ``getValues``, ``as2D`` ...). Methods inherited from ``nf.Tensor`` return
legacy arrays too.
"""

from __future__ import annotations

import functools
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .. import ops
from ..core.dispatch import compiled
from ..core.tensor import Tensor, Variable
from ..core.tensor_buffer import TensorBuffer

Shape = Sequence[int]


def to_legacy(x: Any) -> Any:
    """Give tensors (also inside lists, tuples and dicts) the legacy class of their rank; returns ``x``."""
    cls = x.__class__
    if cls is Tensor:
        x.__class__ = _BY_RANK.get(len(x.shape), NDArray)
    elif cls is Variable:
        x.__class__ = LegacyVariable
    elif cls is list or isinstance(x, tuple):
        for item in x:
            to_legacy(item)
    elif cls is dict:
        for item in x.values():
            to_legacy(item)
    return x


def _legacy_method(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def method(*args: Any, **kwargs: Any) -> Any:
        return to_legacy(fn(*args, **kwargs))

    return method


class NDArray(Tensor):
    """deeplearn.js's ``NDArray`` (TF.js's ``Tensor``): an ndflow tensor with the 0.x methods."""

    __slots__ = ()

    # -- construction (static in deeplearn.js) -----------------------------------------------------
    @classmethod
    def make(cls, shape: Shape, data: Any, dtype: str = "float32") -> NDArray:
        """A new array of ``shape`` from ``{'values': ...}`` (deeplearn's TensorData) or values."""
        values = data.get("values") if isinstance(data, dict) else data
        if values is None:
            raise ValueError("NDArray.make: data must hold 'values'")
        return to_legacy(ops.tensor(np.asarray(values).reshape(-1), list(shape), dtype))

    @classmethod
    def zeros(cls, shape: Shape, dtype: str = "float32") -> NDArray:
        """An array of zeros."""
        return to_legacy(ops.zeros(list(shape), dtype))

    @classmethod
    def ones(cls, shape: Shape, dtype: str = "float32") -> NDArray:
        """An array of ones."""
        return to_legacy(ops.ones(list(shape), dtype))

    @classmethod
    def zerosLike(cls, x: Tensor) -> NDArray:
        """Zeros of ``x``'s shape and dtype."""
        return to_legacy(ops.zeros_like(x))

    @classmethod
    def onesLike(cls, x: Tensor) -> NDArray:
        """Ones of ``x``'s shape and dtype."""
        return to_legacy(ops.ones_like(x))

    @classmethod
    def like(cls, x: Tensor) -> NDArray:
        """A copy of ``x``."""
        return to_legacy(ops.clone(x))

    @classmethod
    def rand(cls, shape: Shape, randFunction: Callable[[], float], dtype: str = "float32") -> NDArray:
        """An array filled by calling ``randFunction()`` once per element."""
        size = math.prod(shape)
        return to_legacy(ops.tensor([randFunction() for _ in range(size)], list(shape), dtype))

    @classmethod
    def randNormal(
        cls, shape: Shape, mean: float = 0, stdDev: float = 1, dtype: str | None = None, seed: int | None = None
    ) -> NDArray:
        """Samples of a normal distribution."""
        return to_legacy(ops.random_normal(list(shape), mean, stdDev, dtype, seed))

    @classmethod
    def randTruncatedNormal(
        cls, shape: Shape, mean: float = 0, stdDev: float = 1, dtype: str | None = None, seed: int | None = None
    ) -> NDArray:
        """Samples of a normal distribution, redrawn beyond two standard deviations."""
        return to_legacy(ops.truncated_normal(list(shape), mean, stdDev, dtype, seed))

    @classmethod
    def randUniform(cls, shape: Shape, a: float, b: float, dtype: str = "float32") -> NDArray:
        """Samples of a uniform distribution on ``[a, b)``."""
        return to_legacy(ops.random_uniform(list(shape), a, b, dtype))

    # -- reading -----------------------------------------------------------------------------------
    def get(self, *locs: int) -> Any:
        """The value at ``locs`` (the first value when no location is given), as a Python number."""
        self.throw_if_disposed()
        return self._values().reshape(-1)[self.locToIndex(list(locs) or [0])].item()

    async def val(self, *locs: int) -> Any:
        """``get`` without blocking: ``await a.val(0)``."""
        values = await self.data()
        return values[self.locToIndex(list(locs) or [0])].item()

    def locToIndex(self, locs: Sequence[int]) -> int:
        """The flat index of a location (row-major, as deeplearn.js computes it)."""
        self.throw_if_disposed()
        if self.rank == 0:
            return 0
        locs = [int(i) for i in locs] or [0]
        index = locs[-1]
        for stride, i in zip(self.strides, locs[:-1], strict=False):
            index += stride * i
        in_bounds = len(locs) != self.rank or all(0 <= i < n for i, n in zip(locs, self.shape, strict=True))
        if not in_bounds or not 0 <= index < self.size:
            raise IndexError(f"get: location {locs} is out of bounds for shape {list(self.shape)}")
        return index

    def indexToLoc(self, index: int) -> list[int]:
        """The location of a flat index."""
        self.throw_if_disposed()
        if self.rank == 0:
            return []
        return [int(i) for i in np.unravel_index(int(index), self.shape)]

    def getValues(self) -> np.ndarray:
        """The values as a flat, read-only numpy array (``dataSync()``)."""
        return self.data_sync()

    async def getValuesAsync(self) -> np.ndarray:
        """The values without blocking: ``await a.getValuesAsync()``."""
        return await self.data()

    def buffer(self) -> TensorBuffer:  # type: ignore[override]
        """A mutable ``TensorBuffer`` holding a copy of the values (synchronous, as in deeplearn.js)."""
        return self.buffer_sync()

    # -- shapes ------------------------------------------------------------------------------------
    def as2D(self, rows: int, columns: int) -> NDArray:
        """Reshape to ``[rows, columns]``."""
        return to_legacy(ops.reshape(self, [rows, columns]))

    def as3D(self, rows: int, columns: int, depth: int) -> NDArray:
        """Reshape to ``[rows, columns, depth]``."""
        return to_legacy(ops.reshape(self, [rows, columns, depth]))

    def as4D(self, rows: int, columns: int, depth: int, depth2: int) -> NDArray:
        """Reshape to ``[rows, columns, depth, depth2]``."""
        return to_legacy(ops.reshape(self, [rows, columns, depth, depth2]))

    # -- ops with deeplearn.js's signatures --------------------------------------------------------
    def batchNormalization(
        self,
        mean: Tensor,
        variance: Tensor,
        varianceEpsilon: float = 0.001,
        scale: Tensor | None = None,
        offset: Tensor | None = None,
    ) -> NDArray:
        """Batch normalization, with deeplearn.js's argument order."""
        return to_legacy(ops.batch_norm(self, mean, variance, offset, scale, varianceEpsilon))

    def argMax(self, axis: int | None = None) -> NDArray:
        """Index of the largest value along ``axis``; without one, into the flat values (deeplearn.js)."""
        return to_legacy(flat_arg(ops.arg_max)(self, axis))

    def argMin(self, axis: int | None = None) -> NDArray:
        """Index of the smallest value along ``axis``; without one, into the flat values (deeplearn.js)."""
        return to_legacy(flat_arg(ops.arg_min)(self, axis))

    def where(self, condition: Tensor, x: Tensor) -> NDArray:
        """``where(condition, self, x)``."""
        return to_legacy(ops.where(condition, self, x))

    def minPool(self, filterSize: Any, strides: Any, pad: Any, dimRoundingMode: str | None = None) -> NDArray:
        """Min pooling (``-maxPool(-x)``)."""
        return to_legacy(min_pool(self, filterSize, strides, pad, dimRoundingMode))

    def depthwiseConv2D(
        self, filter: Tensor, strides: Any, pad: Any, dilations: Any = 1, dimRoundingMode: str | None = None
    ) -> NDArray:
        """Depthwise 2D convolution."""
        return to_legacy(ops.depthwise_conv2d(self, filter, strides, pad, "NHWC", dilations, dimRoundingMode))

    def variable(self, trainable: bool = True, name: str | None = None, dtype: str | None = None) -> LegacyVariable:
        """A variable initialised with this array's values."""
        return to_legacy(ops.variable(self, trainable, name, dtype))


def min_pool(x: Tensor, filterSize: Any, strides: Any, pad: Any, dimRoundingMode: str | None = None) -> Tensor:
    """Min pooling, which deeplearn.js had and TF.js dropped: ``-max_pool(-x)``."""
    negated = ops.neg(x)
    try:
        pooled = ops.max_pool(negated, filterSize, strides, pad, dimRoundingMode)
    finally:
        negated.dispose()
    try:
        return ops.neg(pooled)
    finally:
        pooled.dispose()


def flat_arg(fn: Callable[[Tensor, int], Tensor]) -> Callable[[Tensor, int | None], Tensor]:
    """``arg_max``/``arg_min`` as deeplearn.js had them: no axis means the index into the flat values."""

    def run(x: Tensor, axis: int | None = None) -> Tensor:
        if axis is not None:
            return fn(x, axis)
        flat = ops.reshape(x, [-1])
        try:
            return fn(flat, 0)
        finally:
            flat.dispose()

    return run


def _shape(x: Any) -> list[int]:
    return list(x.shape) if isinstance(x, Tensor) else list(np.shape(x))


def strict(fn: Callable[[Any, Any], Tensor], name: str) -> Callable[[Any, Any], Tensor]:
    """``fn(a, b)`` after checking that ``a`` and ``b`` have the same shape (deeplearn's ``*Strict``)."""

    def run(a: Any, b: Any) -> Tensor:
        shape_a, shape_b = _shape(a), _shape(b)
        if shape_a != shape_b:
            raise ValueError(f"{name}: shapes {shape_a} and {shape_b} must match")
        return fn(a, b)

    run.__name__ = name
    run.__doc__ = f"``{fn.__name__}`` of two arrays of the same shape."
    return run


# deeplearn.js method name -> the ndflow method or function it is.
_CAMEL_ALIASES: dict[str, str] = {
    "asScalar": "as_scalar",
    "as1D": "as1d",
    "asType": "as_type",
    "dataSync": "data_sync",
    "toFloat": "to_float",
    "toInt": "to_int",
    "toBool": "to_bool",
    "toString": "to_string",
    "reshapeAs": "reshape_as",
    "expandDims": "expand_dims",
    "matMul": "mat_mul",
    "logSumExp": "log_sum_exp",
    "notEqual": "not_equal",
    "lessEqual": "less_equal",
    "greaterEqual": "greater_equal",
    "logicalAnd": "logical_and",
    "logicalOr": "logical_or",
    "logicalXor": "logical_xor",
    "clipByValue": "clip_by_value",
    "leakyRelu": "leaky_relu",
    "resizeBilinear": "resize_bilinear",
    "conv2dTranspose": "conv2d_transpose",
    "avgPool": "avg_pool",
    "maxPool": "max_pool",
    "localResponseNormalization": "local_response_normalization",
}
_STRICT = ("add", "sub", "mul", "div", "pow", "minimum", "maximum", "equal", "not_equal", "less", "less_equal")
_STRICT += ("greater", "greater_equal")
# Methods that return no tensor keep ``nf.Tensor``'s version (no result to convert).
_PLAIN = {"data_sync", "array_sync", "numpy", "bytes_sync", "buffer_sync", "to_string", "print", "dispose"}
_PLAIN |= {"throw_if_disposed"}
_OPERATORS = (
    "__add__ __radd__ __sub__ __rsub__ __mul__ __rmul__ __truediv__ __rtruediv__ __floordiv__ __rfloordiv__ "
    "__mod__ __rmod__ __pow__ __rpow__ __matmul__ __rmatmul__ __neg__ __abs__ __eq__ __ne__ __lt__ __le__ "
    "__gt__ __ge__ __getitem__"
).split()


def _camel(snake: str) -> str:
    head, *rest = snake.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def _install_methods() -> None:
    """Make every tensor-returning method of ``nf.Tensor`` return legacy arrays, and add the camelCase names."""
    for name in dir(Tensor):
        if name.startswith("_") or name in NDArray.__dict__ or name in _PLAIN:
            continue
        attr = inspect.getattr_static(Tensor, name)
        if isinstance(attr, property):
            if attr.fget is not None and name == "T":
                setattr(NDArray, name, property(_legacy_method(attr.fget)))
            continue
        attr = inspect.unwrap(attr) if compiled.is_op(attr) else attr  # ops with compiled dispatch in front
        if not inspect.isfunction(attr) or inspect.iscoroutinefunction(attr):
            continue
        setattr(NDArray, name, _legacy_method(attr))
    for name in _OPERATORS:
        setattr(NDArray, name, _legacy_method(getattr(Tensor, name)))
    NDArray.__hash__ = object.__hash__  # type: ignore[method-assign]
    for camel, snake in _CAMEL_ALIASES.items():
        setattr(NDArray, camel, getattr(NDArray, snake))
    for snake in _STRICT:
        method = getattr(Tensor, snake)
        setattr(NDArray, _camel(snake) + "Strict", _legacy_method(strict(method, _camel(snake) + "Strict")))


class Scalar(NDArray):
    """A rank-0 array."""

    __slots__ = ()

    @staticmethod
    def new(value: float | bool, dtype: str | None = None) -> Scalar:
        """``Scalar.new(3)``."""
        return to_legacy(ops.scalar(value, _dtype(value, dtype)))


class Array1D(NDArray):
    """A rank-1 array."""

    __slots__ = ()

    @staticmethod
    def new(values: Any, dtype: str | None = None) -> Array1D:
        """``Array1D.new([1, 2, 3])``."""
        return to_legacy(ops.tensor1d(_values(values), _dtype(values, dtype)))


class Array2D(NDArray):
    """A rank-2 array."""

    __slots__ = ()

    @staticmethod
    def new(shape: Shape, values: Any, dtype: str | None = None) -> Array2D:
        """``Array2D.new([2, 3], values)``; values flat or nested."""
        return to_legacy(ops.tensor2d(_values(values), list(shape), _dtype(values, dtype)))


class Array3D(NDArray):
    """A rank-3 array."""

    __slots__ = ()

    @staticmethod
    def new(shape: Shape, values: Any, dtype: str | None = None) -> Array3D:
        """``Array3D.new([h, w, d], values)``; values flat or nested."""
        return to_legacy(ops.tensor3d(_values(values), list(shape), _dtype(values, dtype)))


class Array4D(NDArray):
    """A rank-4 array."""

    __slots__ = ()

    @staticmethod
    def new(shape: Shape, values: Any, dtype: str | None = None) -> Array4D:
        """``Array4D.new([n, h, w, d], values)``; values flat or nested."""
        return to_legacy(ops.tensor4d(_values(values), list(shape), _dtype(values, dtype)))


class LegacyVariable(Variable, NDArray):
    """A variable with the legacy array methods (``assign`` keeps working)."""

    __slots__ = ()


def _dtype(values: Any, dtype: str | None) -> str | None:
    """deeplearn.js made float32 arrays unless told otherwise; booleans stay bool here (for ``where``)."""
    if dtype is not None:
        return dtype
    if isinstance(values, Tensor):
        return values.dtype
    return "bool" if ops.convert.infer_dtype(values) == "bool" else "float32"


def _values(values: Any) -> Any:
    """Typed arrays of JS arrive as numpy arrays or lists; a tensor gives its values."""
    if isinstance(values, Tensor):
        return values.numpy()
    return values


_BY_RANK: dict[int, type[NDArray]] = {0: Scalar, 1: Array1D, 2: Array2D, 3: Array3D, 4: Array4D}
_install_methods()

# deeplearn.js 0.5 also named them Tensor1D ... Tensor4D.
Tensor1D, Tensor2D, Tensor3D, Tensor4D = Array1D, Array2D, Array3D, Array4D


def randNormal(
    shape: Shape, mean: float = 0, stdDev: float = 1, dtype: str | None = None, seed: int | None = None
) -> NDArray:
    """Samples of a normal distribution (``NDArray.randNormal``)."""
    return NDArray.randNormal(shape, mean, stdDev, dtype, seed)


def variable(
    initialValue: Tensor, trainable: bool = True, name: str | None = None, dtype: str | None = None
) -> LegacyVariable:
    """A variable (deeplearn.js 0.5's ``dl.variable``)."""
    return to_legacy(ops.variable(initialValue, trainable, name, dtype))
