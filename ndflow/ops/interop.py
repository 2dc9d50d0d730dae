"""``nf.from_dlpack``: a tensor over another library's memory (torch, numpy, or anything with ``__dlpack__``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core.dtypes import from_numpy
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import SupportsDLPack, TensorLike
from .convert import to_int32

# The numpy dtypes a backend stores as they are (anything else is converted, which copies).
_STORED = {np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.bool_), np.dtype(np.complex64)}


def from_dlpack(x: SupportsDLPack | TensorLike, copy: bool | None = None) -> Tensor:
    """A tensor of the values of ``x``: a torch tensor, a numpy array, or any object with ``__dlpack__``.

    Zero-copy where the active backend can hold the memory as it is: on cpu, host memory of a dtype ndflow
    stores (float32, int32, bool, complex64); on torch, a torch tensor of such a dtype (on its device).
    Other dtypes are converted as ``nf.tensor`` converts them (float64 -> float32; int64 -> int32, an error
    outside int32's range unless the flag ``INT64_WRAP`` is on), which copies; the webgpu backend always copies.
    A torch tensor that requires grad is detached.

    A zero-copy tensor shares memory with ``x``: ndflow never writes to it, but writing to ``x`` afterwards
    changes the tensor (tensors are meant to be immutable). Pass ``copy=True`` for independent memory;
    ``copy=False`` raises a BufferError where a copy is needed.

    Example::

        t = nf.from_dlpack(torch.arange(4, dtype=torch.float32))   # shares the torch tensor's memory
    """
    if isinstance(x, Tensor):
        raise TypeError("from_dlpack: x is already an ndflow Tensor (use nf.clone to copy it)")
    if copy not in (None, True, False):
        raise TypeError(f"from_dlpack: argument 'copy' must be None, True or False, got {copy!r}")
    backend = ENGINE.backend
    if backend.name == "webgpu" and copy is False:
        raise BufferError("from_dlpack: the webgpu backend copies values into GPU buffers (copy=False was asked)")
    if backend.name == "torch" and _is_torch_tensor(x):
        return _from_torch(x, copy)
    if not isinstance(x, np.ndarray) and not hasattr(x, "__dlpack__"):
        raise TypeError(f"from_dlpack: argument 'x' must support DLPack (have __dlpack__), got {type(x).__name__}")
    if _is_torch_tensor(x):
        x = x.detach().resolve_conj().resolve_neg()
    try:
        array = np.from_dlpack(x, copy=copy) if copy is not None else np.from_dlpack(x)
    except (BufferError, RuntimeError, ValueError) as exc:
        if copy is False:
            raise BufferError(f"from_dlpack: the values cannot be used without a copy: {exc}") from None
        try:
            array = np.from_dlpack(x, device="cpu", copy=True)
        except (BufferError, RuntimeError, ValueError, TypeError) as exc2:
            raise TypeError(f"from_dlpack: cannot read a {type(x).__name__} through DLPack: {exc2}") from None
    array = _storable(array, copy, "from_dlpack")
    return ENGINE.make_tensor(array, array.shape, from_numpy(array.dtype))


def _is_torch_tensor(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach") and hasattr(x, "dtype")


def _storable(array: np.ndarray, copy: bool | None, op: str) -> np.ndarray:
    """``array`` in a dtype and layout a backend stores; a converted copy where needed."""
    if array.dtype.kind in "OUS":
        raise TypeError(f"{op}: DLPack carries no strings or objects, got dtype {array.dtype}")
    if array.dtype in _STORED and array.flags.c_contiguous:
        return array
    if copy is False:
        raise BufferError(
            f"{op}: values of dtype {array.dtype} (or not C-contiguous) must be converted, which copies "
            "(copy=False was asked)"
        )
    target = from_numpy(array.dtype)
    if target == "int32":
        return to_int32(array, op)
    stored = {"float32": np.float32, "bool": np.bool_, "complex64": np.complex64}[target]
    return np.ascontiguousarray(array, dtype=stored)


def _from_torch(x: Any, copy: bool | None) -> Tensor:
    """On the torch backend: keep the torch tensor itself (moved to the backend's device if needed)."""
    import torch

    backend = ENGINE.backend
    values = x.detach().resolve_conj().resolve_neg()
    names = {torch.float32: "float32", torch.int32: "int32", torch.bool: "bool", torch.complex64: "complex64"}
    dtype = names.get(values.dtype)
    moved = values.device != backend.device
    if copy is False and (dtype is None or moved or not values.is_contiguous()):
        raise BufferError("from_dlpack: the torch tensor must be converted or moved, which copies (copy=False)")
    if dtype is None:
        array = _storable(values.cpu().float().numpy() if values.element_size() == 2 else values.cpu().numpy(), copy,
                          "from_dlpack")  # fmt: skip
        return ENGINE.make_tensor(array, array.shape, from_numpy(array.dtype))
    values = values.to(backend.device).contiguous()
    if copy:
        values = values.clone()
    return ENGINE.make_tensor(values, tuple(values.shape), dtype)


__all__ = ["from_dlpack"]
