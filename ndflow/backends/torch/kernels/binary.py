"""Element-wise binary arithmetic with broadcasting: Add, Sub, Multiply, RealDiv, FloorDiv, Mod,
Pow, Maximum, Minimum, SquaredDifference, Atan2; and AddN.

torch broadcasts as numpy does and wraps int32 overflow. Where TF.js computes in JS numbers and
stores into a typed array, :func:`store` reproduces that store: int32 truncates (0 for NaN and
Infinity) and wraps modulo 2**32; a bool (Uint8Array) is "non-zero after truncation modulo 256".
"""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ....core.kernel_registry import register_direct
from ..backend import TorchBackend
from .common import F, Output, keep, operands, out, torch_kernel, values_of

_TWO32 = 4294967296.0


def to_int32(values: torch.Tensor) -> torch.Tensor:
    """Numbers stored into an Int32Array: truncation, 0 for NaN/Infinity, wrapping modulo 2**32."""
    if not values.is_floating_point():
        return values.to(torch.int32)
    r = torch.where(torch.isfinite(values), torch.trunc(values), 0.0)
    return torch.fmod(r.double(), _TWO32).to(torch.int64).to(torch.int32)


def to_bool(values: torch.Tensor) -> torch.Tensor:
    """Numbers stored into the Uint8Array of a bool tensor: truncation modulo 256, then non-zero."""
    if values.dtype is torch.bool:
        return values
    if not values.is_floating_point():
        return torch.remainder(values, 256) != 0
    return torch.isfinite(values) & (torch.fmod(torch.trunc(values), 256) != 0)


def store(values: torch.Tensor, dtype: str) -> torch.Tensor:
    """``values`` (float results) as TF.js's typed array of ``dtype`` would hold them."""
    if dtype == "int32":
        return to_int32(values)
    if dtype == "bool":
        return to_bool(values)
    return values


def _shape(a, b) -> tuple[int, ...] | None:
    """The output shape when it is known without asking torch (same-shaped inputs)."""
    return a.shape if a.shape == b.shape else None


def _same_dtype(backend: TorchBackend, inputs: tuple, fn, logical) -> Output:
    """``fn(a, b)`` for two inputs of one dtype, whose result torch keeps in that dtype (the hot
    path: no cast, the shape known when the inputs agree); bools use ``logical``."""
    a, b = inputs
    va, vb = operands(backend, a, b)
    if a.dtype == "bool":
        return out(backend, logical(va, vb), "bool", _shape(a, b))
    result = fn(va, vb)
    return keep(backend, result, a.shape if a.shape == b.shape else tuple(result.shape), a.dtype)


@torch_kernel(kn.Add)
def add(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _same_dtype(backend, inputs, torch.add, torch.logical_or)


@torch_kernel(kn.Sub)
def sub(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    # bools: 1 - 0 = 1 and 0 - 1 = -1 (255 in a Uint8Array): true exactly where a != b
    return _same_dtype(backend, inputs, torch.sub, torch.ne)


@torch_kernel(kn.Multiply)
def multiply(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _same_dtype(backend, inputs, torch.mul, torch.logical_and)


@torch_kernel(kn.RealDiv)
def real_div(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b = inputs
    if a.dtype in ("float32", "complex64"):
        return _same_dtype(backend, inputs, torch.div, None)
    va, vb = operands(backend, a, b)
    return out(backend, torch.div(va.to(F()), vb.to(F())), "float32", _shape(a, b))


# The float32 forms (same-shaped float32 operands, or a float32 tensor and a Python number).
for _name, _fn in (("Add", torch.add), ("Sub", torch.sub), ("Multiply", torch.mul), ("RealDiv", torch.div)):
    register_direct(_name, "torch", _fn)


@torch_kernel(kn.FloorDiv)
def floor_div(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """floor(a / b); TF.js's kernel always returns int32, whatever the input dtype."""
    a, b = inputs
    work = torch.float64 if a.dtype == "int32" else F()
    q = torch.floor(torch.div(values_of(backend, a).to(work), values_of(backend, b).to(work)))
    return out(backend, to_int32(q), "int32", _shape(a, b))


@torch_kernel(kn.Mod)
def mod(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The remainder takes the sign of the divisor; NaN (0 for int32) where b == 0."""
    a, b = inputs
    va, vb = values_of(backend, a), values_of(backend, b)
    if a.dtype != "float32":
        va, vb = va.double(), vb.double()
    r = torch.fmod(va, vb)
    r = torch.where((r != 0) & ((r < 0) != (vb < 0)), r + vb, r)
    return out(backend, store(r, a.dtype), a.dtype, _shape(a, b))


@torch_kernel(kn.Pow)
def pow_(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b = inputs
    va, vb = values_of(backend, a), values_of(backend, b)
    if a.dtype == "int32":
        return out(backend, to_int32(torch.pow(va.double(), vb.double())), "int32", _shape(a, b))
    if a.dtype == "bool":
        return out(backend, store(torch.pow(va.double(), vb.double()), "bool"), "bool", _shape(a, b))
    r = torch.pow(va, vb)
    if a.dtype == "float32":  # JS: 1 ** NaN is NaN (C's pow gives 1)
        r = torch.where((va == 1) & torch.isnan(vb), torch.nan, r)
    return out(backend, r, a.dtype, _shape(a, b))


def _extreme(backend: TorchBackend, inputs: tuple, fn, logical) -> Output:
    a, b = inputs
    if a.dtype == "bool":
        va, vb = operands(backend, a, b)
        return out(backend, logical(va, vb), "int32", _shape(a, b))
    return _same_dtype(backend, inputs, fn, None)  # NaN propagates, as np.maximum


@torch_kernel(kn.Maximum)
def maximum(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _extreme(backend, inputs, torch.maximum, torch.logical_or)


@torch_kernel(kn.Minimum)
def minimum(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _extreme(backend, inputs, torch.minimum, torch.logical_and)


@torch_kernel(kn.SquaredDifference)
def squared_difference(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b = inputs
    va, vb = values_of(backend, a), values_of(backend, b)
    if a.dtype == "bool":  # (a - b) ** 2 is 1 exactly where a != b
        return out(backend, torch.ne(va, vb), "bool", _shape(a, b))
    d = torch.sub(va, vb)
    return out(backend, d.mul_(d), a.dtype, _shape(a, b))


@torch_kernel(kn.Atan2)
def atan2(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    a, b = inputs
    va, vb = values_of(backend, a), values_of(backend, b)
    if a.dtype == "float32":
        return out(backend, torch.atan2(va, vb), "float32", _shape(a, b))
    return out(backend, store(torch.atan2(va.double(), vb.double()), a.dtype), a.dtype, _shape(a, b))


@torch_kernel(kn.AddN)
def add_n(backend: TorchBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The sum of same-shaped tensors, added in order; bools count modulo 256 (a Uint8Array)."""
    dtype = inputs[0].dtype
    first = values_of(backend, inputs[0])
    total = first.to(torch.int32) if dtype == "bool" else first.clone()
    for t in inputs[1:]:  # a loop over the (few) inputs, not over elements
        total.add_(values_of(backend, t))
    return out(backend, to_bool(total) if dtype == "bool" else total, dtype, inputs[0].shape)
