"""Exporting a tensor's values through DLPack (``t.__dlpack__()``, ``t.__dlpack_device__()``).

What a consumer gets (docs/interop.md):

- **zero-copy** where the backend holds plain memory: the cpu backend's numpy array, and the torch backend's
  tensor (CPU or CUDA). The export holds one reference of the data in the backend's store, as another tensor
  sharing the data would: disposing the tensor does not free the buffer while the consumer holds it, and its
  bytes stay in ``nf.memory()`` until the consumer releases it (on torch-CUDA, see below).
- **read-only**: tensors are immutable, so a DLPack 1.0 consumer (``max_version >= (1, 0)``: numpy 2,
  torch 2.13) gets the read-only flag set. numpy honours it (the array is not writable); torch has no
  read-only tensors and ignores it: writing into such a torch tensor changes the ndflow tensor and is not
  allowed (ask for ``copy=True`` to write). A consumer of the old protocol (no ``max_version``), which cannot be
  told, gets a copy.
- **a copy** from the webgpu backend (its values live in GPU buffers that DLPack cannot name) and whenever the
  consumer asks for ``copy=True`` or another device; ``copy=False`` where a copy is needed is a BufferError.

On torch-CUDA the capsule is torch's own: torch keeps the storage alive by its own reference count, but
ndflow cannot see when the consumer lets go, so the bytes leave ``nf.memory()`` when the tensor is disposed
(torch's ``memory_allocated`` still counts them) and the read-only flag is not set.
"""

from __future__ import annotations

import weakref
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .backend import DataInfo
    from .tensor import Tensor

# DLPack device types (dlpack.h): the two ndflow's data can live on.
KDL_CPU = 1
KDL_CUDA = 2


def _engine() -> Any:
    from .tensor import ENGINE

    return ENGINE


def dlpack_device(t: Tensor) -> tuple[int, int]:
    """``(device type, device id)`` of the memory a ``__dlpack__`` call would export."""
    t.throw_if_disposed("__dlpack_device__")
    backend = t._info.backend
    if getattr(backend, "is_cuda", False):
        index = getattr(getattr(backend, "device", None), "index", None)
        return (KDL_CUDA, int(index or 0))
    return (KDL_CPU, 0)


def export(
    t: Tensor,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> Any:
    """A DLPack capsule of ``t``'s values (the array API's ``__dlpack__``); see the module docstring."""
    t.throw_if_disposed("__dlpack__")
    if t.dtype == "string":
        raise BufferError("__dlpack__: string tensors cannot be exported through DLPack (it has no string type)")
    versioned = max_version is not None and tuple(max_version)[:1] >= (1,)
    device = dlpack_device(t)
    wanted = device if dl_device is None else (int(dl_device[0]), int(dl_device[1]))
    if wanted != device and wanted[0] != KDL_CPU:
        raise BufferError(f"__dlpack__: cannot export a tensor on device {device} to device {wanted}")
    backend = t._info.backend
    if device[0] == KDL_CUDA:
        if wanted == device and copy is not True:
            values = backend.values(t.data_id).reshape(t.shape).resolve_conj()
            options: dict[str, Any] = {} if stream is None else {"stream": stream}  # torch's default: no sync
            if versioned:
                options["max_version"] = max_version
            return values.__dlpack__(**options)
        if copy is False:
            raise BufferError("__dlpack__: moving a CUDA tensor to the CPU needs a copy, and copy=False was asked")
        return _copy_capsule(t, versioned, max_version)
    must_copy = copy is True or not versioned or backend.name == "webgpu"
    if must_copy:
        if copy is False:
            why = (
                "the webgpu backend's values live on the GPU"
                if backend.name == "webgpu"
                else ("the consumer asked for the old protocol, which cannot mark the export read-only")
            )
            raise BufferError(f"__dlpack__: a zero-copy export is not possible ({why}), and copy=False was asked")
        return _copy_capsule(t, versioned, max_version)
    return _shared_capsule(t, max_version)


def _copy_capsule(t: Tensor, versioned: bool, max_version: tuple[int, int] | None) -> Any:
    """A capsule of a fresh writable copy: nothing of the tensor's is shared or kept."""
    values = np.array(t._values(), copy=True).reshape(t.shape)
    return values.__dlpack__(max_version=max_version) if versioned else values.__dlpack__()


def _shared_capsule(t: Tensor, max_version: tuple[int, int] | None) -> Any:
    """A read-only capsule over the stored memory, holding one reference of the data until it is released."""
    stored = t._values()
    view = stored.reshape(t.shape)  # a new array object, sharing memory unless the store holds another layout
    shared = np.may_share_memory(view, stored)
    view.flags.writeable = False
    if shared:
        info = t._info
        info.backend.inc_ref(t.data_id)
        # numpy's capsule holds `view` until the consumer's deleter runs; then `view` dies and the reference goes.
        weakref.finalize(view, _release, t.data_id, info)
    return view.__dlpack__(max_version=max_version)


def _release(data_id: int, info: DataInfo) -> None:
    """Drop an export's reference; free and uncount the buffer if no tensor uses it any more."""
    engine = _engine()
    if info.backend.dispose_data(data_id) and engine._data.pop(data_id, None) is not None:
        engine.num_data_buffers -= 1
        engine.num_bytes -= info.nbytes
