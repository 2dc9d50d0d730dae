"""Einstein summation: Einsum (the op has already checked the equation against the inputs)."""

from __future__ import annotations

import string

import numpy as np

from ....core.dtypes import NUMPY_DTYPE, upcast_type
from ..backend import CPUBackend
from .common import Output, cpu_kernel, out, values_of


@cpu_kernel("Einsum")
def einsum(backend: CPUBackend, inputs: tuple, attrs: dict) -> Output:
    inputs_part, output = attrs["equation"].split("->")
    terms = inputs_part.split(",")
    dtype = inputs[0].dtype
    for t in inputs[1:]:
        dtype = upcast_type(dtype, t.dtype)
    summed = set("".join(terms)) - set(output)
    if summed and dtype == "bool":  # TF.js sums bool products as int32
        dtype = "int32"
    # numpy wants letters as labels; TF.js takes any character.
    letters = dict(zip(dict.fromkeys(inputs_part.replace(",", "")), string.ascii_letters, strict=False))
    spec = ",".join("".join(letters[c] for c in term) for term in terms)
    spec += "->" + "".join(letters[c] for c in output)
    arrays = [values_of(backend, t).astype(NUMPY_DTYPE[dtype], copy=False) for t in inputs]
    return out(backend, np.einsum(spec, *arrays), dtype)
