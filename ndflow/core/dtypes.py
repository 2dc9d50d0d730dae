"""The dtypes of TF.js and their numpy storage, inference and upcast rules."""

from __future__ import annotations

import numpy as np

float32 = "float32"
int32 = "int32"
bool_ = "bool"
complex64 = "complex64"
string = "string"

DTYPES = (float32, int32, bool_, complex64, string)

NUMPY_DTYPE = {
    float32: np.dtype(np.float32),
    int32: np.dtype(np.int32),
    bool_: np.dtype(np.bool_),
    complex64: np.dtype(np.complex64),
    string: np.dtype(object),
}

BYTES_PER_ELEMENT = {float32: 4, int32: 4, bool_: 1, complex64: 8}

# The upcast lattice of TF.js: bool < int32 < float32 < complex64.
_RANK = {bool_: 0, int32: 1, float32: 2, complex64: 3}


def check_dtype(dtype: object, op: str = "dtype", arg: str = "dtype") -> str:
    """Return ``dtype`` as one of the TF.js dtype names, or raise a clear error."""
    if isinstance(dtype, str) and dtype in NUMPY_DTYPE:
        return dtype
    if dtype is None:
        raise TypeError(f"{op}: argument '{arg}' must be a dtype, got None")
    name = getattr(dtype, "__name__", None) or str(dtype)
    raise TypeError(f"{op}: argument '{arg}' must be one of {', '.join(DTYPES)}, got {name!r}")


def from_numpy(np_dtype: np.dtype) -> str:
    """The TF.js dtype that holds values of a numpy dtype (float64 -> float32, int64 -> int32)."""
    kind = np_dtype.kind
    if kind == "f":
        return float32
    if kind in "iu":
        return int32
    if kind == "b":
        return bool_
    if kind == "c":
        return complex64
    if kind in "USO":
        return string
    raise TypeError(f"tensor: numpy dtype {np_dtype} has no TF.js counterpart")


def upcast_type(a: str, b: str) -> str:
    """The dtype two dtypes meet at, as TF.js's ``upcastType``."""
    for name, d in (("a", a), ("b", b)):
        if not isinstance(d, str) or (d not in _RANK and d != string):
            raise TypeError(f"upcast_type: argument '{name}' must be a dtype ({', '.join(_RANK)}, {string}), got {d!r}")
    if a == b:
        return a
    if a == string or b == string:
        raise TypeError(f"Can not upcast {a} with {b}")
    return a if _RANK[a] >= _RANK[b] else b


def is_float(dtype: str) -> bool:
    return dtype == float32 or dtype == complex64


def nbytes(dtype: str, size: int, values: np.ndarray | None = None) -> int:
    """Bytes used by ``size`` values; strings count their UTF-8 bytes, as TF.js does."""
    per = BYTES_PER_ELEMENT.get(dtype)
    if per is not None:
        return per * size
    if values is None:
        return 0
    return sum(len(v.encode("utf-8")) if isinstance(v, str) else len(v) for v in values.flat)
