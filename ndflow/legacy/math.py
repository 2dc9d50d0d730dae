"""deeplearn.js 0.x's ``NDArrayMath``: the math object (``math.add(a, b)``, ``math.scope(...)``).

Every method runs an ndflow op on the active backend and returns legacy arrays. ``scope`` is
``nf.tidy`` that hands the function deeplearn's ``keep`` and ``track``; ``track`` adopts an array
into the open scope (so that one created before the scope is disposed with it). In safe mode a
math op called outside every scope raises, as deeplearn.js's safe mode did, instead of leaking.
``NDArrayMathCPU`` selects the cpu backend, ``NDArrayMathGPU`` the webgpu backend.
"""

from __future__ import annotations

import enum
import inspect
from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from ..core.engine import ENGINE
from ..core.globals import enable_debug_mode, tidy
from ..core.tensor import Tensor, Variable
from ..gradients import grad
from .ndarray import flat_arg, min_pool, strict, to_legacy

ScopeFn = Callable[..., Any]


class MatrixOrientation(enum.IntEnum):
    """deeplearn.js 0.3's transposition flags for ``matMul`` (``TRANSPOSED`` is ``True``)."""

    REGULAR = 0
    TRANSPOSED = 1


def _check_scalar(c: Tensor, op: str, which: str) -> None:
    if c.size != 1:
        raise ValueError(f"{op}: {which} argument must be rank 0, got shape {list(c.shape)}")


def _vector_times_matrix(v: Tensor, matrix: Tensor) -> Tensor:
    if v.rank != 1 or matrix.rank != 2 or v.shape[0] != matrix.shape[0]:
        raise ValueError(f"vectorTimesMatrix: got a vector of shape {list(v.shape)} and a matrix {list(matrix.shape)}")
    return tidy(lambda: ops.reshape(ops.mat_mul(ops.reshape(v, [1, -1]), matrix), [-1]))


def _matrix_times_vector(matrix: Tensor, v: Tensor) -> Tensor:
    if v.rank != 1 or matrix.rank != 2 or v.shape[0] != matrix.shape[1]:
        raise ValueError(f"matrixTimesVector: got a matrix of shape {list(matrix.shape)} and a vector {list(v.shape)}")
    return tidy(lambda: ops.reshape(ops.mat_mul(matrix, ops.reshape(v, [-1, 1])), [-1]))


def _batch_norm(
    x: Tensor,
    mean: Tensor,
    variance: Tensor,
    varianceEpsilon: float = 0.001,
    scale: Tensor | None = None,
    offset: Tensor | None = None,
) -> Tensor:
    return ops.batch_norm(x, mean, variance, offset, scale, varianceEpsilon)


def _softmax_cross_entropy(labels: Tensor, logits: Tensor, dim: int = -1) -> Tensor:
    return tidy(lambda: ops.neg(ops.sum(ops.mul(labels, ops.log_softmax(logits, dim)), dim)))


def _lrn(
    x: Tensor, radius: int = 5, bias: float = 1, alpha: float = 1, beta: float = 0.5, normRegion: str = "acrossChannels"
) -> Tensor:
    if normRegion != "acrossChannels":
        raise NotImplementedError(f"localResponseNormalization: normRegion '{normRegion}' is not supported")
    return ops.local_response_normalization(x, radius, bias, alpha, beta)


def _conv(fn: Callable[..., Tensor]) -> Callable[..., Tensor]:
    def run(
        x: Tensor, filter: Tensor, bias: Tensor | None, strides: Any, pad: Any, dimRoundingMode: Any = None
    ) -> Tensor:
        if bias is not None and bias.rank != 1:
            raise ValueError(f"conv: bias must be rank 1, got shape {list(bias.shape)}")
        if bias is None:
            return fn(x, filter, strides, pad, dimRoundingMode)
        return tidy(lambda: ops.add(fn(x, filter, strides, pad, dimRoundingMode), bias))

    return run


def _conv2d_der_input(
    xShape: Sequence[int], dy: Tensor, filter: Tensor, strides: Any, pad: Any, rounding: Any = None
) -> Tensor:
    f = grad(lambda x: ops.conv2d(x, filter, strides, pad, "NHWC", 1, rounding))
    return tidy(lambda: f(ops.zeros(list(xShape)), dy))


def _conv2d_der_filter(
    x: Tensor, dy: Tensor, filterShape: Sequence[int], strides: Any, pad: Any, rounding: Any = None
) -> Tensor:
    f = grad(lambda w: ops.conv2d(x, w, strides, pad, "NHWC", 1, rounding))
    return tidy(lambda: f(ops.zeros(list(filterShape)), dy))


def _max_pool_backprop(dy: Tensor, x: Tensor, filterSize: Any, strides: Any, pad: Any, rounding: Any = None) -> Tensor:
    return grad(lambda t: ops.max_pool(t, filterSize, strides, pad, rounding))(x, dy)


def _scalar_op(fn: Callable[[Tensor, Tensor], Tensor], name: str, scalar_first: bool) -> Callable[..., Tensor]:
    def run(first: Tensor, second: Tensor) -> Tensor:
        _check_scalar(first if scalar_first else second, name, "first" if scalar_first else "second")
        return fn(first, second)

    return run


def _scaled_array_add(c1: Tensor, a: Tensor, c2: Tensor, b: Tensor) -> Tensor:
    _check_scalar(c1, "scaledArrayAdd", "first")
    _check_scalar(c2, "scaledArrayAdd", "third")
    if a.shape != b.shape:
        raise ValueError(f"scaledArrayAdd: shapes {list(a.shape)} and {list(b.shape)} must match")
    return tidy(lambda: ops.add(ops.mul(c1, a), ops.mul(c2, b)))


def _arg_max_equals(x1: Tensor, x2: Tensor) -> Tensor:
    if x1.shape != x2.shape:
        raise ValueError(f"argMaxEquals: shapes {list(x1.shape)} and {list(x2.shape)} must match")
    flat_max = flat_arg(ops.arg_max)
    return tidy(lambda: ops.cast(ops.equal(flat_max(x1), flat_max(x2)), "float32"))


def _concat(axis: int | None) -> Callable[..., Tensor]:
    if axis is None:
        return lambda a, b, axis=0: ops.concat([a, b], axis)
    return lambda a, b: ops.concat([a, b], axis)


_UNARY = "abs acos asin atan ceil cos cosh elu exp floor log neg relu selu sigmoid sin sinh sqrt square tan tanh"
_BINARY = {"add": ops.add, "sub": ops.sub, "mul": ops.mul, "div": ops.div, "pow": ops.pow}
_BINARY |= {"maximum": ops.maximum, "minimum": ops.minimum}
_COMPARE = {"equal": ops.equal, "notEqual": ops.not_equal, "less": ops.less, "lessEqual": ops.less_equal}
_COMPARE |= {"greater": ops.greater, "greaterEqual": ops.greater_equal}

#: deeplearn.js 0.5's NDArrayMath method names and what each one runs.
OPS: dict[str, Callable[..., Any]] = {
    "matMul": lambda a, b, transposeA=False, transposeB=False: ops.mat_mul(a, b, bool(transposeA), bool(transposeB)),
    "vectorTimesMatrix": _vector_times_matrix,
    "matrixTimesVector": _matrix_times_vector,
    "dotProduct": ops.dot,
    "outerProduct": ops.outer_product,
    "slice": ops.slice,
    "slice1D": ops.slice1d,
    "slice2D": ops.slice2d,
    "slice3D": ops.slice3d,
    "slice4D": ops.slice4d,
    "reverse": ops.reverse,
    "reverse1D": ops.reverse1d,
    "reverse2D": ops.reverse2d,
    "reverse3D": ops.reverse3d,
    "reverse4D": ops.reverse4d,
    "batchNormalization": _batch_norm,
    "batchNormalization2D": _batch_norm,
    "batchNormalization3D": _batch_norm,
    "batchNormalization4D": _batch_norm,
    "avgPool": ops.avg_pool,
    "maxPool": ops.max_pool,
    "minPool": min_pool,
    "maxPoolBackprop": _max_pool_backprop,
    "conv1d": _conv(lambda x, f, s, p, r: ops.conv1d(x, f, s, p, "NWC", 1, r)),
    "conv2d": _conv(lambda x, f, s, p, r: ops.conv2d(x, f, s, p, "NHWC", 1, r)),
    "conv2dTranspose": ops.conv2d_transpose,
    "depthwiseConv2D": lambda x, f, s, p, d=1, r=None: ops.depthwise_conv2d(x, f, s, p, "NHWC", d, r),
    "conv2dDerFilter": _conv2d_der_filter,
    "conv2dDerInput": _conv2d_der_input,
    "argMax": flat_arg(ops.arg_max),
    "argMin": flat_arg(ops.arg_min),
    "argMaxEquals": _arg_max_equals,
    "logSumExp": ops.log_sum_exp,
    "max": ops.max,
    "mean": ops.mean,
    "min": ops.min,
    "moments": ops.moments,
    "sum": ops.sum,
    "divide": ops.div,
    "multiply": ops.mul,
    "subtract": ops.sub,
    "divideStrict": strict(ops.div, "divideStrict"),
    "multiplyStrict": strict(ops.mul, "multiplyStrict"),
    "elementWiseMul": strict(ops.mul, "elementWiseMul"),
    "logicalNot": ops.logical_not,
    "logicalAnd": ops.logical_and,
    "logicalOr": ops.logical_or,
    "logicalXor": ops.logical_xor,
    "where": ops.where,
    "transpose": ops.transpose,
    "switchDim": ops.transpose,
    "clip": ops.clip_by_value,
    "leakyRelu": ops.leaky_relu,
    "prelu": ops.prelu,
    "step": ops.step,
    "norm": ops.norm,
    "basicLSTMCell": ops.basic_lstm_cell,
    "multiRNNCell": ops.multi_rnn_cell,
    "softmax": ops.softmax,
    "softmaxCrossEntropy": _softmax_cross_entropy,
    "cast": ops.cast,
    "clone": ops.clone,
    "gather": ops.gather,
    "reshape": ops.reshape,
    "tile": ops.tile,
    "oneHot": lambda indices, depth, onValue=1, offValue=0: ops.one_hot(indices, depth, onValue, offValue, "float32"),
    "multinomial": lambda probabilities, numSamples, seed=None: ops.multinomial(probabilities, numSamples, seed, True),
    "pad1D": ops.pad1d,
    "pad2D": ops.pad2d,
    "resizeBilinear3D": lambda x, newShape2D, alignCorners=False: ops.image.resize_bilinear(
        x, newShape2D, alignCorners
    ),
    "localResponseNormalization3D": _lrn,
    "localResponseNormalization4D": _lrn,
    "topK": lambda x, k: ops.topk(x, k),
    "scalarDividedByArray": _scalar_op(ops.div, "scalarDividedByArray", True),
    "arrayDividedByScalar": _scalar_op(ops.div, "arrayDividedByScalar", False),
    "scalarPlusArray": _scalar_op(ops.add, "scalarPlusArray", True),
    "scalarMinusArray": _scalar_op(ops.sub, "scalarMinusArray", True),
    "arrayMinusScalar": _scalar_op(ops.sub, "arrayMinusScalar", False),
    "scalarTimesArray": _scalar_op(ops.mul, "scalarTimesArray", True),
    "scaledArrayAdd": _scaled_array_add,
    "concat": _concat(None),
    "concat1D": _concat(0),
    "concat2D": lambda a, b, axis: ops.concat([a, b], axis),
    "concat3D": lambda a, b, axis: ops.concat([a, b], axis),
    "concat4D": lambda a, b, axis: ops.concat([a, b], axis),
}
OPS |= {name: getattr(ops, name) for name in _UNARY.split()}
for _name, _fn in (_BINARY | _COMPARE).items():
    OPS[_name] = _fn
    OPS[_name + "Strict"] = strict(_fn, _name + "Strict")


class NDArrayMath:
    """deeplearn.js's math object: ops as methods, ``scope``, ``keep``, ``track``, safe mode."""

    def __init__(self, backend: str = "cpu", safeMode: bool = False) -> None:
        if backend not in ENGINE.backend_names():
            known = ", ".join(ENGINE.backend_names())
            raise RuntimeError(f"NDArrayMath: backend '{backend}' is not available (registered: {known})")
        if not ENGINE.set_backend(backend):
            raise RuntimeError(f"NDArrayMath: backend '{backend}' failed to initialize")
        self.backendName = backend
        self.safeMode = bool(safeMode)

    # -- memory ------------------------------------------------------------------------------------
    def scope(self, nameOrScopeFn: str | ScopeFn, scopeFn: ScopeFn | None = None) -> Any:
        """Run ``scopeFn(keep, track)`` and dispose what it created except its result and kept arrays."""
        name, fn = (nameOrScopeFn, scopeFn) if isinstance(nameOrScopeFn, str) else (None, nameOrScopeFn)
        if not callable(fn):
            raise TypeError(f"scope: expected a function, got {type(fn).__name__}")
        helpers = (self.keep, self.track)
        count = _positional_count(fn)
        return to_legacy(ENGINE.tidy(name, lambda: fn(*helpers[:count]), (), {}))

    def keep(self, result: Tensor) -> Tensor:
        """Keep an array alive past the scopes that enclose it."""
        self._check_safe("keep")
        return to_legacy(ENGINE.keep(result))

    def track(self, result: Tensor) -> Tensor:
        """Adopt an array into the open scope, to be disposed when it ends (a no-op outside scopes)."""
        self._check_safe("track")
        if not isinstance(result, Tensor):
            raise TypeError(f"track: expected an NDArray, got {type(result).__name__}")
        return to_legacy(ENGINE.track(result))

    def startScope(self, name: str | None = None) -> None:
        """Open a scope by hand (close it with ``endScope``)."""
        ENGINE.start_scope(name)

    def endScope(self, result: Any = None) -> None:
        """Close the scope ``startScope`` opened, disposing what it tracked except ``result``."""
        if not ENGINE._scopes:
            raise RuntimeError("endScope: there is no open scope")
        ENGINE.end_scope(result)

    def dispose(self, container: Any = None) -> None:
        """Dispose arrays (nested in lists, tuples and dicts); without arguments, nothing to release."""
        if container is not None:
            ENGINE.dispose(container)

    @property
    def registeredVariables(self) -> dict[str, Variable]:
        """The engine's variables by name."""
        return ENGINE.variables

    def enableDebugMode(self) -> None:
        """Time and log every kernel and raise on NaN (``nf.enable_debug_mode()``)."""
        enable_debug_mode()

    def _check_safe(self, op: str) -> None:
        if self.safeMode and ENGINE.active_scope is None:
            raise RuntimeError(
                f"{op}: safe mode is ON. Enclose all math operations inside a scope: "
                "math.scope(lambda keep, track: ...) to avoid memory leaks"
            )


def _positional_count(fn: Callable[..., Any]) -> int:
    """How many of ``(keep, track)`` a scope function takes: its required positional parameters (0, 1 or 2)."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 2
    if any(p.kind is p.VAR_POSITIONAL for p in params):
        return 2
    required = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    return min(2, len(required))


def _math_method(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: NDArrayMath, *args: Any, **kwargs: Any) -> Any:
        self._check_safe(name)
        return to_legacy(fn(*args, **kwargs))

    method.__name__ = method.__qualname__ = name
    method.__doc__ = f"deeplearn.js's ``math.{name}``."
    return method


for _name, _fn in OPS.items():
    setattr(NDArrayMath, _name, _math_method(_name, _fn))


class NDArrayMathCPU(NDArrayMath):
    """The math object on the cpu backend (numpy)."""

    def __init__(self, safeMode: bool = False) -> None:
        super().__init__("cpu", safeMode)


class NDArrayMathGPU(NDArrayMath):
    """The math object on the GPU: ndflow's webgpu backend."""

    def __init__(self, safeMode: bool = False) -> None:
        if "webgpu" not in ENGINE.backend_names():
            raise RuntimeError(
                "NDArrayMathGPU: the webgpu backend is not available (it is not registered: install ndflow[webgpu] "
                "for wgpu and a GPU adapter, or use NDArrayMathCPU)"
            )
        if not ENGINE.set_backend("webgpu"):
            raise RuntimeError(
                "NDArrayMathGPU: the webgpu backend is registered but failed to initialize (no adapter?)"
            )
        super().__init__("webgpu", safeMode)
