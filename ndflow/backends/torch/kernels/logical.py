"""Comparisons, logic and selection: Equal, NotEqual, Greater, GreaterEqual, Less, LessEqual,
LogicalAnd, LogicalOr, LogicalNot, LogicalXor, BitwiseAnd, Select."""

from __future__ import annotations

from collections.abc import Callable

import torch

from ....core import kernel_names as kn
from ..backend import TorchBackend
from ._bools import compare
from .common import Output, out, torch_kernel, values_of


def _to_bool(name: str, fn: Callable[..., torch.Tensor], op: str | None = None) -> None:
    """A binary kernel with a bool output (broadcasting); a comparison (``op``) refuses complex64 and runs
    through :func:`compare` (float inputs: the comparison written as floats, then cast)."""

    def run(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
        a, b = inputs
        if op is not None and a.dtype == "complex64":
            raise TypeError(f"{op}: complex64 tensors cannot be compared (as in TF.js)")
        shape = a.shape if a.shape == b.shape else None
        va, vb = values_of(backend, a), values_of(backend, b)
        return out(backend, compare(fn, va, vb) if op is not None else fn(va, vb), "bool", shape)

    run.__name__ = name
    torch_kernel(name, strings=True)(run)


_to_bool("Equal", torch.eq, "equal")
_to_bool("NotEqual", torch.ne, "not_equal")
_to_bool("Greater", torch.gt, "greater")
_to_bool("GreaterEqual", torch.ge, "greater_equal")
_to_bool("Less", torch.lt, "less")
_to_bool("LessEqual", torch.le, "less_equal")
_to_bool("LogicalAnd", torch.logical_and)
_to_bool("LogicalOr", torch.logical_or)
_to_bool("LogicalXor", torch.logical_xor)


@torch_kernel(kn.LogicalNot, strings=True)
def logical_not(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    return out(backend, torch.logical_not(values_of(backend, x)), "bool", x.shape)


@torch_kernel(kn.BitwiseAnd)
def bitwise_and(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b = inputs
    return out(backend, torch.bitwise_and(values_of(backend, a), values_of(backend, b)), a.dtype)


@torch_kernel(kn.Select, strings=True)
def select(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    condition, a, b = inputs
    cond = values_of(backend, condition)
    if cond.dtype is not torch.bool:
        cond = cond != 0
    return out(backend, torch.where(cond, values_of(backend, a), values_of(backend, b)), a.dtype)
