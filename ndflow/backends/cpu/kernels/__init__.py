"""The cpu kernels, one module per family; importing this package registers them all."""

from . import activation, binary, creation, logical, matrix, reduction, shape, slicing, unary  # noqa: F401
