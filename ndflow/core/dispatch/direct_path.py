"""The engine's direct path: float32 element-wise kernels and matrix products run through their registered float32
form.

Ops call these after checking dtypes and shapes (``ndflow/ops/arithmetic.py``, ``unary.py``). Each falls back
to ``run_kernel`` (or returns None, ``run_scalar_float``) whenever the fast path is closed (a gradient tape,
``profile()``, debug mode or the leak tracker watches), the backend has no direct form of the kernel
(``kernel_registry.register_direct``), an input lives on another backend or is disposed, or is stored in
another shape. Outputs are made by the engine's ``_track_output`` (:func:`~ndflow.core.dispatch.outputs.track_output`).
:class:`~ndflow.core.engine.Engine` mixes it in; its state lives on the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..backend import Backend
from ..tensor import Tensor

_FLOAT32_MAX = 3.4028234663852886e38


class DirectPath:
    """The engine's methods of the direct path."""

    __slots__ = ()

    _direct: dict[str, Callable[..., Any]]
    _backend: Backend | None
    _track_output: Callable[..., Tensor]
    run_kernel: Callable[..., Any]

    def run_unary_float(self, name: str, x: Tensor) -> Tensor:
        """Kernel ``name`` on one float32 tensor, whose output is float32 of its shape."""
        fn = self._direct.get(name)
        if fn is not None and not x._disposed:
            backend = self._backend
            if x._info.backend is backend:
                data_id = backend.direct_unary(fn, x)
                if data_id is not None:
                    return self._track_output(data_id, x.shape, "float32", backend)
        return self.run_kernel(name, (x,), None)

    def run_binary_float(self, name: str, a: Tensor, b: Tensor) -> Tensor:
        """Kernel ``name`` on two float32 tensors of one shape, whose output is float32 of that shape."""
        fn = self._direct.get(name)
        if fn is not None and not a._disposed and not b._disposed:
            backend = self._backend
            if a._info.backend is backend and b._info.backend is backend:
                data_id = backend.direct_binary(fn, a, b)
                if data_id is not None:
                    return self._track_output(data_id, a.shape, "float32", backend)
        return self.run_kernel(name, (a, b), None)

    def run_product_float(self, name: str, a: Tensor, b: Tensor) -> Tensor:
        """Matrix product kernel ``name`` of float32 matrices ``(m, k)`` and ``(k, n)``, without transposes: its
        product form (``register_direct_product``) where the direct path is open, else the kernel."""
        fn = self._direct.get((name, "product"))  # type: ignore[call-overload]
        if fn is not None and not a._disposed and not b._disposed:
            backend = self._backend
            if a._info.backend is backend and b._info.backend is backend:
                data_id = backend.direct_binary(fn, a, b)
                if data_id is not None:
                    return self._track_output(data_id, (a.shape[0], b.shape[1]), "float32", backend)
        return self.run_kernel(name, (a, b), {"transpose_a": False, "transpose_b": False})

    def run_scalar_float(self, name: str, a: Tensor, s: float) -> Tensor | None:
        """Kernel ``name`` on a float32 tensor and a Python number that float32 holds (finite; integers
        exactly): the number acts as a float32 scalar tensor. None where the direct path cannot run it."""
        fn = self._direct.get(name)
        if fn is not None and not a._disposed and -_FLOAT32_MAX <= s <= _FLOAT32_MAX:
            backend = self._backend
            if a._info.backend is backend:
                data_id = backend.direct_scalar(fn, a, s)
                if data_id is not None:
                    return self._track_output(data_id, a.shape, "float32", backend)
        return None
