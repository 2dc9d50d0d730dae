"""Public ops, one module per family. Each converts its inputs, validates, and runs a kernel."""

from . import tensor_methods
from .activation import relu, sigmoid, softmax
from .arithmetic import add, div, floor_div, maximum, minimum, mod, mul, pow, real_div, squared_difference, sub
from .creation import (
    clone,
    eye,
    fill,
    linspace,
    ones,
    ones_like,
    range,
    scalar,
    tensor,
    tensor1d,
    tensor2d,
    tensor3d,
    tensor4d,
    tensor5d,
    tensor6d,
    variable,
    zeros,
    zeros_like,
)
from .logical import equal, greater, greater_equal, less, less_equal, not_equal, where
from .matrix import mat_mul
from .reduction import arg_max, max, mean, min, sum
from .shape import cast, expand_dims, reshape, squeeze, transpose
from .slicing import concat, gather, slice, stack, strided_slice
from .unary import abs, exp, log, neg, rsqrt, sqrt, square, tanh

tensor_methods.attach()

__all__ = [
    "relu", "sigmoid", "softmax",
    "add", "div", "floor_div", "maximum", "minimum", "mod", "mul", "pow", "real_div", "squared_difference", "sub",
    "clone", "eye", "fill", "linspace", "ones", "ones_like", "range", "scalar", "tensor", "tensor1d", "tensor2d",
    "tensor3d", "tensor4d", "tensor5d", "tensor6d", "variable", "zeros", "zeros_like",
    "equal", "greater", "greater_equal", "less", "less_equal", "not_equal", "where",
    "mat_mul", "arg_max", "max", "mean", "min", "sum",
    "cast", "expand_dims", "reshape", "squeeze", "transpose",
    "concat", "gather", "slice", "stack", "strided_slice",
    "abs", "exp", "log", "neg", "rsqrt", "sqrt", "square", "tanh",
]  # fmt: skip
