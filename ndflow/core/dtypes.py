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


class Int32RangeError(OverflowError, ValueError):
    """An integer value outside int32's range where int32 is stored (the flag ``INT64_WRAP`` wraps instead).

    An OverflowError as numpy's, and a ValueError as every other bad value ndflow refuses."""


def check_dtype(dtype: object, op: str = "dtype", arg: str = "dtype") -> str:
    """Return ``dtype`` as one of the TF.js dtype names, or raise a clear error.

    Besides the names, numpy's dtypes and scalar types (``np.float32``, ``np.dtype("int32")``), Python's
    ``bool`` and ``str`` and torch's dtypes (``torch.float32``) name the same five dtypes. A dtype ndflow does
    not store (``float64``, ``int64``, ...) is refused with the dtype that holds its values."""
    if isinstance(dtype, str) and dtype in NUMPY_DTYPE:
        return dtype
    if dtype is None:
        raise TypeError(f"{op}: argument '{arg}' must be a dtype, got None")
    name = _foreign_name(dtype)
    if name in NUMPY_DTYPE:
        return name
    shown = name if name is not None else (getattr(dtype, "__name__", None) or str(dtype))
    hint = _STORED_AS.get(shown or "")
    extra = f" (ndflow stores {shown} values as {hint}: pass {hint!r})" if hint else ""
    raise TypeError(f"{op}: argument '{arg}' must be one of {', '.join(DTYPES)}, got {shown!r}{extra}")


# The dtypes ndflow has no storage for, and the TF.js dtype that holds their values.
_STORED_AS = {
    "float16": float32, "float64": float32, "bfloat16": float32, "int8": int32, "int16": int32, "int64": int32,
    "uint8": int32, "uint16": int32, "uint32": int32, "uint64": int32, "complex128": complex64,
}  # fmt: skip


def _foreign_name(dtype: object) -> str | None:
    """The name of a numpy, Python or torch dtype (``np.float32`` -> "float32"), or None."""
    if dtype is bool:
        return bool_
    if dtype is str:
        return string
    module = getattr(type(dtype), "__module__", "") or ""
    if module.startswith("torch"):  # torch.float32 prints as "torch.float32"; torch.bool as "torch.bool"
        return str(dtype).removeprefix("torch.")
    if isinstance(dtype, np.dtype) or (isinstance(dtype, type) and issubclass(dtype, np.generic)):
        np_dtype = np.dtype(dtype)
        if np_dtype.kind in "OUS":
            return string
        return "bool" if np_dtype.kind == "b" else np_dtype.name
    return dtype if isinstance(dtype, str) else None


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
