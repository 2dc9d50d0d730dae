"""One thread at a time inside the webgpu backend.

The backend records every kernel into one open command encoder and compute pass, and keeps its buffer pool,
bind groups and pending submissions in plain Python containers: two threads recording at once would end each
other's encoder ("Encoding must not have ended") or hand one pooled buffer to two tensors. So each backend
instance holds a re-entrant lock (``backend.lock``), taken around every webgpu kernel (:func:`lock_kernels`,
applied when the kernels load) and every method that touches the encoder, the pool or the data store
(:func:`serialized`). The GPU runs one queue in order anyway; the lock costs well under a microsecond against
a kernel's ~20 us of recording. Kernels registered later for ``webgpu`` by user code are not wrapped: their
calls into the backend's methods are still serialized. docs/threads.md states the thread model.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

from ...core.kernel_registry import kernel_table

F = TypeVar("F", bound=Callable[..., Any])


def serialized(method: F) -> F:
    """A backend method run under the backend's lock."""

    @functools.wraps(method)
    def run(self: Any, *args: Any, **kwargs: Any) -> Any:
        with self.lock:
            return method(self, *args, **kwargs)

    return run  # type: ignore[return-value]


def _locked(fn: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(fn)
    def kernel(backend: Any, *args: Any, **kwargs: Any) -> Any:
        with backend.lock:
            return fn(backend, *args, **kwargs)

    kernel.__ndflow_serialized__ = True  # type: ignore[attr-defined]
    return kernel


def lock_kernels(backend_name: str = "webgpu") -> None:
    """Wrap every kernel registered for ``backend_name`` so that it runs under its backend's lock (once)."""
    table = kernel_table(backend_name)
    for name, config in list(table.items()):
        if not getattr(config.kernel_func, "__ndflow_serialized__", False):
            table[name] = config._replace(kernel_func=_locked(config.kernel_func))
