"""Helpers shared by the torch kernels: reading inputs, storing outputs, dtypes, host fallbacks.

Kernels receive ``(backend, inputs, attrs)`` and return ``(data_id, shape, dtype)`` (a list of them
for several outputs), exactly as the cpu kernels do.

Host fallback: a handful of kernels (strings, and data-dependent kernels that TF.js's own GPU
backends also run on the CPU) use the cpu backend's implementation through :class:`HostView`,
which shows the torch store to a cpu kernel as numpy arrays and keeps its outputs as torch
tensors. ``FALLBACKS`` lists them; :func:`torch_kernel` with ``strings=True`` sends string
inputs of otherwise native kernels (concat, gather, slice ...) the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import torch

from ....core.dtypes import NUMPY_DTYPE
from ....core.kernel_registry import kernel_table, register_kernel
from ..backend import NUMPY_TO_TORCH, Record, TorchBackend, new_data_id
from ._threads import by_elements, by_estimate

if TYPE_CHECKING:
    from ....core.tensor import Tensor

Output = tuple[int, tuple[int, ...], str]
Kernel = Callable[[TorchBackend, tuple, Any], Any]

# Kernels that run the cpu implementation on host copies of their inputs (see the module doc).
FALLBACKS: list[str] = []


def torch_dtype(dtype: str) -> torch.dtype:
    """The torch dtype that stores an ndflow dtype (follows ``NUMPY_DTYPE``, so float64 test mode works)."""
    return NUMPY_TO_TORCH[NUMPY_DTYPE[dtype]]


def F() -> torch.dtype:
    """The torch dtype float32 tensors are held in (float64 inside the tests' ``float64_cpu`` mode)."""
    return NUMPY_TO_TORCH[NUMPY_DTYPE["float32"]]


def values_of(backend: TorchBackend, t: Tensor) -> Any:
    """The stored values of input ``t`` in ``t``'s shape (tensors that share a buffer share one
    stored tensor, kept in the shape of the tensor that wrote it)."""
    record = backend.data[t.data_id]
    if record.shape == t.shape:
        return record.values
    return record.values.reshape(t.shape)


def operands(backend: TorchBackend, a: Tensor, b: Tensor) -> tuple[Any, Any]:
    """The values of two inputs, each in its tensor's shape (:func:`values_of` twice, in one call)."""
    data = backend.data
    ra, rb = data[a.data_id], data[b.data_id]
    return (
        ra.values if ra.shape == a.shape else ra.values.reshape(a.shape),
        rb.values if rb.shape == b.shape else rb.values.reshape(b.shape),
    )


def floats(backend: TorchBackend, t: Tensor) -> torch.Tensor:
    """Input ``t`` as a float tensor (int32 and bool converted to the float dtype)."""
    v = values_of(backend, t)
    return v if v.is_floating_point() else v.to(F())


def out(backend: TorchBackend, values: torch.Tensor, dtype: str, shape: tuple[int, ...] | None = None) -> Output:
    """Store ``values`` (cast to ``dtype`` when needed) as a new buffer; return the kernel output."""
    target = NUMPY_TO_TORCH[NUMPY_DTYPE[dtype]]
    if values.dtype is not target:
        values = values.to(target)
    if shape is None:
        shape = tuple(values.shape)
    data_id = new_data_id()
    backend.data[data_id] = Record(values, 1, shape)
    return data_id, shape, dtype


def keep(backend: TorchBackend, values: torch.Tensor, shape: tuple[int, ...], dtype: str) -> Output:
    """:func:`out` for values already of ``dtype``'s storage type and of ``shape`` (the hot path)."""
    data_id = new_data_id()
    backend.data[data_id] = Record(values, 1, shape)
    return data_id, shape, dtype


def share(backend: TorchBackend, data_id: int, shape: tuple[int, ...], dtype: str) -> Output:
    """An output that reuses an input's buffer (reshape, identity): one more owner of the data."""
    backend.data[data_id].ref_count += 1
    return data_id, shape, dtype


def host(backend: TorchBackend, t: Tensor) -> np.ndarray:
    """Input ``t`` as a numpy array (a copy from the GPU): for small index-like inputs."""
    v = values_of(backend, t)
    if v.__class__ is np.ndarray:
        return v
    return v.cpu().resolve_conj().numpy()


def scalar(backend: TorchBackend, t: Tensor) -> Any:
    """The first value of input ``t`` as a Python number."""
    return host(backend, t).reshape(-1)[0].item()


def from_numpy(backend: TorchBackend, array: np.ndarray) -> torch.Tensor:
    """A (small, host-computed) numpy array on the backend's device."""
    array = np.ascontiguousarray(array)
    if array.dtype == object:
        raise TypeError("from_numpy: object arrays stay on the host")
    return backend.to_torch(array if array.flags.writeable else array.copy())


# ----------------------------------------------------------------------------- host fallback


class _HostRecords:
    """``backend.data`` as a cpu kernel sees it: numpy values in the stored shape."""

    __slots__ = ("backend", "cache")

    def __init__(self, backend: TorchBackend) -> None:
        self.backend = backend
        self.cache: dict[int, Record] = {}

    def __getitem__(self, data_id: int) -> Record:
        cached = self.cache.get(data_id)
        if cached is not None:
            return cached
        record = self.backend.data[data_id]
        values = record.values
        if values.__class__ is not np.ndarray:
            values = (values.cpu() if self.backend.is_cuda else values).resolve_conj().numpy()
        cached = self.cache[data_id] = Record(values, record.ref_count, record.shape)
        return cached


class HostView:
    """The torch backend dressed as a cpu backend, so that a cpu kernel can run on its data."""

    def __init__(self, backend: TorchBackend) -> None:
        self.backend = backend
        self.data = _HostRecords(backend)

    def store(self, array: np.ndarray) -> int:
        """Keep a cpu kernel's output in the torch store (strings stay numpy)."""
        if array.dtype == object:
            return self.backend.store(array, array.shape)
        return self.backend.store(from_numpy(self.backend, array), array.shape)

    def inc_ref(self, data_id: int) -> None:
        """One more owner of a buffer (a cpu kernel's output sharing its input)."""
        self.backend.inc_ref(data_id)

    def values(self, data_id: int) -> np.ndarray:
        """A buffer's values as numpy."""
        return self.data[data_id].values

    def read_sync(self, data_id: int) -> np.ndarray:
        """A buffer's values as numpy."""
        return self.data[data_id].values


def run_on_host(name: str, backend: TorchBackend, inputs: tuple, attrs: Any) -> Any:
    """Run the cpu backend's kernel ``name`` on host copies of the inputs."""
    return kernel_table("cpu")[name].kernel_func(HostView(backend), inputs, attrs)


def host_kernel(name: str, reason: str) -> None:
    """Register the cpu implementation of ``name`` for the torch backend (a documented fallback)."""

    def run(backend: TorchBackend, inputs: tuple, attrs: Any) -> Any:
        return run_on_host(name, backend, inputs, attrs)

    run.__doc__ = f"{name} on the host (cpu kernel): {reason}"
    FALLBACKS.append(name)
    register_kernel(name, "torch", run)


def _strings_on_host(name: str, fn: Kernel) -> Kernel:
    """``fn``, except that a call with a string input runs the cpu kernel ``name`` on the host."""

    def run(backend: TorchBackend, inputs: tuple, attrs: Any) -> Any:
        for t in inputs:
            if t.dtype == "string":
                return run_on_host(name, backend, inputs, attrs)
        return fn(backend, inputs, attrs)

    return run


def torch_kernel(
    name: str, strings: bool = False, parallel: Callable[[tuple, Any], bool] | None = None
) -> Callable[[Kernel], Kernel]:
    """Register ``fn`` as the torch kernel ``name``.

    ``strings``: string inputs (numpy object arrays, which torch cannot hold) go to the cpu kernel.
    ``parallel(inputs, attrs)``: whether the call's work is worth torch's threads on the CPU (products and
    convolutions estimate their FLOPs); without it the number of input values decides (``_threads``).
    """

    def wrap(fn: Kernel) -> Kernel:
        run = _strings_on_host(name, fn) if strings else fn
        run = by_elements(run) if parallel is None else by_estimate(run, parallel)
        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        register_kernel(name, "torch", run)
        return fn

    return wrap
