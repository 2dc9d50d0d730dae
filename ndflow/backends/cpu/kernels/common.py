"""Helpers shared by the cpu kernels: reading inputs and storing outputs."""

from __future__ import annotations

from collections.abc import Callable
from threading import get_ident
from typing import TYPE_CHECKING

import numpy as np

from ....core.dtypes import NUMPY_DTYPE
from ....core.kernel_registry import register_kernel
from ..backend import _CONTEXTS, CPUBackend, quiet_context

if TYPE_CHECKING:
    from ....core.tensor import Tensor

Output = tuple[int, tuple[int, ...], str]


def values_of(backend: CPUBackend, t: Tensor) -> np.ndarray:
    """The array of input ``t`` in ``t``'s shape.

    Always read inputs through this: tensors that share a buffer (reshape, expand_dims, clone)
    share one stored array, kept in the shape of the tensor that wrote it.
    """
    values = backend.data[t.data_id].values
    return values if values.shape == t.shape else values.reshape(t.shape)


def out(backend: CPUBackend, array: np.ndarray, dtype: str) -> Output:
    """Store ``array`` (cast to ``dtype`` when needed) as a new buffer; return the kernel output."""
    if array.__class__ is not np.ndarray:
        array = np.asarray(array)
    if array.dtype != NUMPY_DTYPE[dtype]:
        array = array.astype(NUMPY_DTYPE[dtype])
    return backend.store(array), array.shape, dtype


def copied(picked: object) -> np.ndarray:
    """A copy of what indexing an array gave, as an array.

    Indexing a string (object) array down to one element gives the element itself (a ``str``), not a 0-d
    array: wrap it as a 0-d object array (numpy's own string arrays would drop trailing NULs)."""
    if picked.__class__ is np.ndarray:
        return picked.copy()
    if isinstance(picked, str | bytes):
        return np.array(picked, dtype=object)
    return np.asarray(picked)


def share(backend: CPUBackend, data_id: int, shape: tuple[int, ...], dtype: str) -> Output:
    """An output that reuses an input's buffer (reshape, identity): one more owner of the data."""
    backend.inc_ref(data_id)
    return data_id, shape, dtype


def cpu_kernel(name: str) -> Callable[[Callable], Callable]:
    """Register ``fn`` as the cpu kernel ``name``; it runs with numpy's FP warnings off.

    Entering a prepared context costs far less than ``np.errstate`` on every call. Each thread
    gets its own context (a context can be entered by one thread at a time).
    """

    def wrap(fn: Callable) -> Callable:
        def run(backend: CPUBackend, inputs: tuple, attrs: dict | None) -> Output:
            ctx = _CONTEXTS.get(get_ident())
            if ctx is None:
                ctx = quiet_context()
            return ctx.run(fn, backend, inputs, attrs)

        run.__name__ = fn.__name__
        run.__doc__ = fn.__doc__
        register_kernel(name, "cpu", run)
        return fn

    return wrap
