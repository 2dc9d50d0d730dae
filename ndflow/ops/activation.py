"""Activation functions: relu, relu6, elu, selu, leaky_relu, prelu, sigmoid, log_sigmoid,
softplus, softmax."""

from __future__ import annotations

from ..core import kernel_names as kn
from ..core.dispatch import compiled
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import broadcast_shape, converted, normalize_axis
from .unary import FLOAT, REAL, dtype_error, number_arg, run_typed_unary, run_unary


@compiled.unary_op(kn.Relu)
def relu(x: TensorLike) -> Tensor:
    """max(x, 0); NaN stays NaN; the input's dtype (a bool stays bool, as in TF.js 4.22)."""
    return run_unary(kn.Relu, "relu", x)


def relu6(x: TensorLike) -> Tensor:
    """min(max(x, 0), 6); NaN stays NaN."""
    return run_typed_unary(kn.Relu6, "relu6", x)


def elu(x: TensorLike) -> Tensor:
    """x where x >= 0, else e ** x - 1 (float32)."""
    return run_typed_unary(kn.Elu, "elu", x, FLOAT)


def selu(x: TensorLike) -> Tensor:
    """Scaled elu: scale * x where x >= 0, else scale * alpha * (e ** x - 1)."""
    return run_typed_unary(kn.Selu, "selu", x)


def leaky_relu(x: TensorLike, alpha: float = 0.2) -> Tensor:
    """alpha * x where x < 0, else x; float32 whatever the input."""
    return run_typed_unary(kn.LeakyRelu, "leaky_relu", x, attrs={"alpha": number_arg(alpha, "leaky_relu", "alpha")})


def prelu(x: TensorLike, alpha: TensorLike) -> Tensor:
    """alpha * x where x < 0, else x, with a tensor ``alpha`` broadcast against ``x``; float32."""
    with converted(x, "x", "prelu") as t, converted(alpha, "alpha", "prelu") as a:
        if not ENGINE.prod:
            for arg, v in (("x", t), ("alpha", a)):
                if v.dtype not in REAL:
                    raise dtype_error("prelu", arg, REAL, f"a {v.dtype} tensor")
            broadcast_shape(t.shape, a.shape, "prelu")
        return ENGINE.run_kernel(kn.Prelu, (t, a), None)


@compiled.unary_op(kn.Sigmoid)
def sigmoid(x: TensorLike) -> Tensor:
    """1 / (1 + e ** -x), float32."""
    return run_unary(kn.Sigmoid, "sigmoid", x, float_only=True)


def softplus(x: TensorLike) -> Tensor:
    """log(1 + e ** x), computed without overflow."""
    return run_typed_unary(kn.Softplus, "softplus", x)


def log_sigmoid(x: TensorLike) -> Tensor:
    """log(sigmoid(x)) = -softplus(-x), which TF.js computes exactly so (the input's dtype)."""
    with converted(x, "x", "log_sigmoid") as t:
        if not ENGINE.prod and t.dtype not in REAL:
            raise dtype_error("log_sigmoid", "x", REAL, f"a {t.dtype} tensor")
        negated = ENGINE.run_kernel(kn.Neg, (t,), None)
        try:
            soft = ENGINE.run_kernel(kn.Softplus, (negated,), None)
        finally:
            negated.dispose()
        try:
            return ENGINE.run_kernel(kn.Neg, (soft,), None)
        finally:
            soft.dispose()


def softmax(logits: TensorLike, dim: int = -1) -> Tensor:
    """exp(logits) normalised to sum to one along ``dim`` (any axis, not only the last)."""
    with converted(logits, "logits", "softmax") as t:
        if not ENGINE.prod:
            if t.dtype != "float32":
                raise TypeError(f"softmax: argument 'logits' must be float32, got {t.dtype}")
            if t.rank == 0:
                raise ValueError("softmax: argument 'logits' must have rank >= 1, got a scalar")
        return ENGINE.run_kernel(kn.Softmax, (t,), {"dim": normalize_axis(dim, t.rank, "softmax", "dim")})


__all__ = ["relu", "relu6", "elu", "selu", "leaky_relu", "prelu", "sigmoid", "softplus", "log_sigmoid", "softmax"]

CHAINED = [relu, relu6, elu, selu, leaky_relu, prelu, sigmoid, softplus, log_sigmoid, softmax]  # also Tensor methods
