"""The engine's measurement: ``memory()``, ``time()``, ``profile()``, and the kernel path that debug mode
and ``profile()`` observe (timing, logging, NaN checks, per-kernel memory). :class:`~ndflow.core.engine.Engine`
mixes it in; the counters and the profiles it reads live on the engine.
"""

from __future__ import annotations

import time as _time
from _thread import get_ident
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .backend import Backend
from .kernel_registry import KernelConfig
from .profiler import KernelProfile, MemoryInfo, ProfileInfo, TimingInfo, check_finite, device_timer, log_kernel
from .tensor import Tensor
from .trace_spans import set_recorders

if TYPE_CHECKING:
    from .leaks import LeakTracker


class Measurement:
    """The engine's methods that measure kernels and memory."""

    __slots__ = ()

    num_tensors: int
    num_string_tensors: int
    num_data_buffers: int
    num_bytes: int
    debug: bool
    prod: bool
    gradient_depth: int
    kernel_depth: int
    tracker: LeakTracker | None
    _profiles: list[ProfileInfo]
    backend: Backend
    _track_output: Callable[..., Tensor]
    read_sync: Callable[..., Any]
    dispose: Callable[[Any], None]
    record: Callable[..., None]
    tidy: Callable[..., Any]
    _update_slow: Callable[[], None]
    backend_name: str | None

    def _run_kernel_observed(
        self, config: KernelConfig, backend: Backend, inputs: tuple[Tensor, ...], attrs: dict[str, Any] | None
    ) -> Any:
        """The slow path of :meth:`run_kernel`: debug mode and ``profile()``."""
        bytes_before, tensors_before = self.num_bytes, self.num_tensors
        holder: list[Any] = []
        start = _time.perf_counter()
        ms = backend.time(lambda: holder.append(config.kernel_func(backend, inputs, attrs)))["kernel_ms"]
        wall_ms = (_time.perf_counter() - start) * 1000.0
        raw = holder[0]
        outs = raw if raw.__class__ is list else [raw]
        tensors = [self._track_output(o[0], o[1], o[2], backend) for o in outs]
        input_shapes = [t.shape for t in inputs]
        if self.debug:
            log_kernel(config.kernel_name, ms, [t.shape for t in tensors], input_shapes)
            for t in tensors:
                if self.prod:
                    break
                try:
                    check_finite(config.kernel_name, self.read_sync(t), t.dtype)
                except Exception:
                    self.dispose(tensors)
                    raise
        if self.gradient_depth > 0 and self.kernel_depth == 0:
            self.record(config.kernel_name, inputs, tensors, attrs)
        if self._profiles:
            input_dtypes = [t.dtype for t in inputs]
            output_dtypes = [t.dtype for t in tensors]
            output_bytes = sum(t._info.nbytes for t in tensors)
            thread = get_ident()
        for profile in self._profiles:
            profile.kernels.append(
                KernelProfile(
                    name=config.kernel_name,
                    bytes_added=self.num_bytes - bytes_before,
                    total_bytes_snapshot=self.num_bytes,
                    tensors_added=self.num_tensors - tensors_before,
                    total_tensors_snapshot=self.num_tensors,
                    input_shapes=input_shapes,
                    output_shapes=[t.shape for t in tensors],
                    kernel_time_ms=ms,
                    input_dtypes=input_dtypes,
                    output_dtypes=output_dtypes,
                    output_bytes=output_bytes,
                    start=start,
                    wall_ms=wall_ms,
                    thread=thread,
                    backend=self.backend_name or "",
                )
            )
            profile.peak_bytes = max(profile.peak_bytes, self.num_bytes)
        return tensors if raw.__class__ is list else tensors[0]

    def start_profile_recording(self, info: ProfileInfo) -> None:
        """Record kernels and spans into ``info`` from now (``profile()``, debug mode's trace)."""
        info.start = _time.perf_counter()
        self._profiles.append(info)
        set_recorders(self._profiles)
        self._update_slow()

    def stop_profile_recording(self, info: ProfileInfo) -> None:
        """Stop recording into ``info``; open spans end now in its trace."""
        if info in self._profiles:
            self._profiles.remove(info)
        set_recorders(self._profiles)
        self._update_slow()
        info.end = _time.perf_counter()

    def memory(self) -> MemoryInfo:
        if self.tracker is not None:
            self.tracker.release_pending()
        fields = dict(self.backend.memory())
        reasons = list(fields.pop("reasons", []))
        unreliable = bool(fields.pop("unreliable", False))
        if self.num_string_tensors > 0:
            unreliable = True
            reasons.append("Memory usage by string tensors is approximate (UTF-8 bytes of the values)")
        return MemoryInfo(
            num_tensors=self.num_tensors,
            num_data_buffers=self.num_data_buffers,
            num_bytes=self.num_bytes,
            unreliable=unreliable,
            reasons=reasons,
            **fields,
        )

    def time(self, fn: Callable[[], Any]) -> TimingInfo:
        backend = self.backend
        start = _time.perf_counter()
        timing = backend.time(lambda: self.dispose(self.tidy(None, fn, (), {})))
        backend.synchronize()
        wall = (_time.perf_counter() - start) * 1000.0
        extra = {k: v for k, v in timing.items() if k != "kernel_ms"}
        return TimingInfo(kernel_ms=timing["kernel_ms"], wall_ms=wall, extra=extra)

    def profile(self, fn: Callable[[], Any]) -> ProfileInfo:
        bytes_before, tensors_before = self.num_bytes, self.num_tensors
        backend = self.backend
        info = ProfileInfo(
            peak_bytes=self.num_bytes,
            thread=get_ident(),
            backend=self.backend_name or "",
            gpu_timer=device_timer(backend),
        )
        self.start_profile_recording(info)
        try:
            info.result = fn()
        finally:
            self.stop_profile_recording(info)
        info.new_bytes = self.num_bytes - bytes_before
        info.new_tensors = self.num_tensors - tensors_before
        info.peak_bytes = max(info.peak_bytes, self.num_bytes)
        return info
