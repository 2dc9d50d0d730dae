"""``Engine.run_kernel`` and its variants: the kernel of the active backend by name, then its outputs' bookkeeping
(:func:`~ndflow.core.dispatch.outputs.track_output`).

The plain path runs the kernel and makes its tensors. While something watches kernels (the engine's ``_slow``),
a call goes to the observed path (debug mode, ``profile()``: core/measurement.py), the listed path
(``record_calls``) or the taped path (a gradient tape). The C module replaces ``Engine.run_kernel`` with a
compiled form of the plain path (dispatch/compiled.py); this method stays its specification and fallback.
:class:`~ndflow.core.engine.Engine` mixes it in; its state lives on the engine.
"""

from __future__ import annotations

from _thread import get_ident
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..backend import Backend
from ..kernel_registry import KernelConfig
from ..tensor import Tensor
from .outputs import track_output

if TYPE_CHECKING:
    from ..tape import TapeNode


# What ``record_calls`` lists besides kernel calls ``(kernel, inputs, attrs, result)`` and value reads ``("", tensor,
# None, None)``: a tensor made from values outside a kernel ``(MADE, tensor, None, None)``, a variable given new
# data ``(ASSIGNED, variable, new value, None)``, and a draw of random numbers ``(RANDOM, None, None, None)`` (a
# seed taken: the values differ from call to call). No kernel has these names.
MADE, ASSIGNED, RANDOM = "+made", "+assigned", "+random"
EVENTS = frozenset((MADE, ASSIGNED, RANDOM))


class KernelDispatch:
    """The engine's kernel calls by name."""

    __slots__ = ()

    _backend: Backend | None
    _kernels: dict[str, KernelConfig]
    backend_name: str | None
    _slow: bool
    debug: bool
    _profiles: list[Any]
    _calls: list[tuple[str, Any, Any, Any]] | None
    _calls_owner: int | None
    gradient_depth: int
    kernel_depth: int
    tape: list[TapeNode] | None
    _choose_backend: Callable[[], Backend]
    _move: Callable[[Tensor, Backend], None]
    _run_kernel_observed: Callable[..., Any]
    _update_slow: Callable[[], None]
    record: Callable[..., None]

    # The output bookkeeping as a method: the one function, looked up on the engine (benchmarks/leak_overhead.py
    # swaps it; the C module calls it for the cases it hands back).
    _track_output = track_output

    def run_kernel(self, name: str, inputs: tuple[Tensor, ...], attrs: dict[str, Any] | None = None) -> Any:
        """Run kernel ``name`` of the active backend; returns a tensor, or a list for multi-output kernels."""
        backend = self._backend or self._choose_backend()
        config = self._kernels.get(name)
        if config is None:
            raise NotImplementedError(f"kernel '{name}' is not registered for backend '{self.backend_name}'")
        for t in inputs:
            if t._disposed:
                t.throw_if_disposed(f"an input of kernel '{name}'")
            if t._info.backend is not backend:
                self._move(t, backend)
        if self._slow:
            if self.debug or self._profiles:
                return self._run_kernel_observed(config, backend, inputs, attrs)
            if self._calls is not None and self.gradient_depth == 0:
                return self._run_kernel_listed(config, backend, inputs, attrs)
            return self._run_kernel_taped(config, backend, inputs, attrs)
        out = config.kernel_func(backend, inputs, attrs)
        if out.__class__ is list:
            return [self._track_output(o[0], o[1], o[2], backend) for o in out]
        return self._track_output(out[0], out[1], out[2], backend)

    def _run_kernel_listed(
        self, config: KernelConfig, backend: Backend, inputs: tuple[Tensor, ...], attrs: dict[str, Any] | None
    ) -> Any:
        """:meth:`run_kernel` while ``record_calls`` lists the calls."""
        raw = config.kernel_func(backend, inputs, attrs)
        if raw.__class__ is list:
            result: Any = [self._track_output(o[0], o[1], o[2], backend) for o in raw]
        else:
            result = self._track_output(raw[0], raw[1], raw[2], backend)
        calls = self._calls
        if self.kernel_depth == 0 and calls is not None and self._calls_owner == get_ident():
            calls.append((config.kernel_name, inputs, attrs, result))
        return result

    def record_calls(self) -> list[tuple[str, Any, Any, Any]]:
        """Start listing the calling thread's kernel calls ``(kernel, inputs, attrs, result)``, value reads
        ``("", tensor, None, None)`` and the events above (kernels take their unobserved path meanwhile, taped
        while a gradient tape is open); :meth:`stop_recording` ends it."""
        self._calls = []
        self._calls_owner = get_ident()
        self._update_slow()
        return self._calls

    def stop_recording(self) -> None:
        self._calls = None
        self._calls_owner = None
        self._update_slow()

    def list_event(self, kind: str, tensor: Any = None, value: Any = None) -> None:
        """List an event (``MADE``, ``ASSIGNED``, ``RANDOM``) of the recording thread while calls are listed."""
        calls = self._calls
        if calls is not None and self._calls_owner == get_ident():
            calls.append((kind, tensor, value, None))

    def _run_kernel_taped(
        self, config: KernelConfig, backend: Backend, inputs: tuple[Tensor, ...], attrs: dict[str, Any] | None
    ) -> Any:
        """:meth:`run_kernel` while only the gradient tape watches: the kernel runs untimed, then is recorded."""
        raw = config.kernel_func(backend, inputs, attrs)
        if raw.__class__ is list:
            tensors = [self._track_output(o[0], o[1], o[2], backend) for o in raw]
        else:
            tensors = [self._track_output(raw[0], raw[1], raw[2], backend)]
        result = tensors if raw.__class__ is list else tensors[0]
        if self.kernel_depth == 0:
            self.record(config.kernel_name, inputs, tensors, attrs)
            calls = self._calls
            if calls is not None and self._calls_owner == get_ident():
                calls.append((config.kernel_name, inputs, attrs, result))
        return result
