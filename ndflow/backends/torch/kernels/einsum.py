"""Einstein summation: Einsum (the op has already checked the equation against the inputs)."""

from __future__ import annotations

import string

import torch

from ....core.dtypes import upcast_type
from ..backend import TorchBackend
from .common import Output, out, torch_dtype, torch_kernel, values_of


@torch_kernel("Einsum")
def einsum(backend: TorchBackend, inputs: tuple, attrs: dict) -> Output:
    inputs_part, output = attrs["equation"].split("->")
    terms = inputs_part.split(",")
    dtype = inputs[0].dtype
    for t in inputs[1:]:
        dtype = upcast_type(dtype, t.dtype)
    summed = set("".join(terms)) - set(output)
    if summed and dtype == "bool":  # TF.js sums bool products as int32
        dtype = "int32"
    # torch wants letters as labels; TF.js takes any character.
    letters = dict(zip(dict.fromkeys(inputs_part.replace(",", "")), string.ascii_letters, strict=False))
    spec = ",".join("".join(letters[c] for c in term) for term in terms)
    spec += "->" + "".join(letters[c] for c in output)
    if dtype in ("int32", "bool"):  # exact integer products modulo 2**32, on the host (int64)
        arrays = [values_of(backend, t).cpu().long() for t in inputs]
        wide = torch.einsum(spec, *arrays).to(backend.device)
        return out(backend, wide != 0 if dtype == "bool" else wide.to(torch.int32), dtype)
    arrays = [values_of(backend, t).to(torch_dtype(dtype)) for t in inputs]
    return out(backend, torch.einsum(spec, *arrays), dtype)
