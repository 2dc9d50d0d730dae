"""A profile as Chrome's Trace Event Format: the JSON that Chrome DevTools' Performance tab, ``chrome://tracing``
and Perfetto (ui.perfetto.dev) open.

What the trace holds (``{"traceEvents": [...], "displayTimeUnit": "ms", "otherData": {...}}``):

- metadata events (``ph: "M"``) naming the process and each track;
- one complete event (``ph: "X"``, ``ts``/``dur`` in microseconds from the profile's start) for the profile
  itself (category ``profile``), for each op (``op``: ``nf.op`` and other named scopes), graph node (``node``)
  and layer (``layer``) seen, and for each kernel (``kernel``), on the track of the thread that ran it. The
  viewers nest complete events of one track by their time ranges, so a kernel shows under the layer, node or
  op that called it;
- where the backend times kernels on the device (torch on CUDA: CUDA events), a ``GPU`` track with one slice
  per kernel (category ``gpu``), ending when the kernel's call returned; elsewhere the kernels' ``args.gpu_time``
  says the device time was not measured;
- a counter (``ph: "C"``) of the engine's bytes and tensors after each kernel.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .profiler import ProfileInfo

#: The track of device time.
GPU_TID = 1_000_000


@dataclass
class _Slice:
    tid: int
    start: float
    end: float
    order: tuple[int, int]
    name: str
    cat: str
    args: dict[str, Any] = field(default_factory=dict)


def _shapes(shapes: Any) -> list[list[int]]:
    return [[int(d) for d in s] for s in shapes]


def _kernel_args(k: Any, gpu_timer: str) -> dict[str, Any]:
    return {
        "backend": k.backend,
        "kernel_time_ms": float(k.kernel_time_ms),
        "wall_ms": float(k.wall_ms),
        "input_shapes": _shapes(k.input_shapes),
        "input_dtypes": list(k.input_dtypes),
        "output_shapes": _shapes(k.output_shapes),
        "output_dtypes": list(k.output_dtypes),
        "output_bytes": int(k.output_bytes),
        "bytes_added": int(k.bytes_added),
        "tensors_added": int(k.tensors_added),
        "total_bytes": int(k.total_bytes_snapshot),
        "gpu_time": f"measured ({gpu_timer}): see the GPU track" if gpu_timer else "not measured by this backend",
    }


def _nest(slices: list[_Slice]) -> None:
    """Make the slices of each track nest strictly (a slice that outlives its parent is cut at the parent's end,
    marked ``args.clipped``), so that every viewer draws the same tree."""
    tracks: dict[int, list[_Slice]] = {}
    for s in slices:
        tracks.setdefault(s.tid, []).append(s)
    for track in tracks.values():
        track.sort(key=lambda s: (s.start, -s.end, s.order))
        stack: list[_Slice] = []
        for s in track:
            while stack and stack[-1].end <= s.start and not (stack[-1].start == s.start and s.end <= stack[-1].end):
                stack.pop()
            if stack and s.end > stack[-1].end:
                s.end = stack[-1].end
                s.args["clipped"] = True
            stack.append(s)


def to_chrome_trace(info: ProfileInfo) -> dict[str, Any]:
    """``info`` (what ``nf.profile`` returns) as a Trace Event Format dict; see the module docstring."""
    pid = os.getpid()
    base = info.start
    last = max([info.end, base] + [k.start + k.wall_ms / 1000.0 for k in info.kernels])
    end = info.end if info.end > 0 else last
    threads: dict[int, int] = {info.thread: 1}

    def tid(ident: int) -> int:
        return threads.setdefault(ident, len(threads) + 1)

    gpu_note = info.gpu_timer or "not measured"
    slices = [
        _Slice(
            1,
            base,
            end,
            (0, 0),
            "nf.profile",
            "profile",
            {
                "backend": info.backend,
                "kernels": len(info.kernels),
                "new_bytes": int(info.new_bytes),
                "new_tensors": int(info.new_tensors),
                "peak_bytes": int(info.peak_bytes),
                "gpu_time": gpu_note,
            },
        )
    ]
    for i, sp in enumerate(info.spans):
        s_end = min(sp.end if sp.end is not None else end, end)
        slices.append(_Slice(tid(sp.thread), max(sp.start, base), max(s_end, sp.start), (1, i), sp.name, sp.kind,
                             dict(sp.args)))  # fmt: skip
    kernel_slices = []
    for i, k in enumerate(info.kernels):
        s = _Slice(tid(k.thread), k.start, k.start + k.wall_ms / 1000.0, (2, -i), k.name, "kernel",
                   _kernel_args(k, info.gpu_timer))  # fmt: skip
        slices.append(s)
        kernel_slices.append((k, s))
    _nest(slices)

    def us(t: float) -> float:
        return round((t - base) * 1e6, 3)

    events: list[dict[str, Any]] = [
        {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": f"ndflow ({info.backend})"}},
    ]
    for ident, n in threads.items():
        label = "Python: profiled thread" if n == 1 else f"Python: thread {ident}"
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": n, "args": {"name": label}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": n, "args": {"sort_index": n}})
    for s in slices:
        ts, te = us(s.start), us(s.end)
        events.append(
            {
                "name": s.name,
                "cat": s.cat,
                "ph": "X",
                "ts": ts,
                "dur": round(te - ts, 3),
                "pid": pid,
                "tid": s.tid,
                "args": s.args,
            }  # fmt: skip
        )
    if info.gpu_timer and kernel_slices:
        name = f"GPU ({info.gpu_timer})"
        events.append({"name": "thread_name", "ph": "M", "pid": pid, "tid": GPU_TID, "args": {"name": name}})
        events.append({"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": GPU_TID,
                       "args": {"sort_index": GPU_TID}})  # fmt: skip
        for k, s in kernel_slices:
            te = us(s.end)
            dur = min(round(float(k.kernel_time_ms) * 1000.0, 3), round(te - us(s.start), 3))
            events.append(
                {"name": k.name, "cat": "gpu", "ph": "X", "ts": round(te - dur, 3), "dur": dur, "pid": pid,
                 "tid": GPU_TID, "args": {"kernel_time_ms": float(k.kernel_time_ms), "timer": info.gpu_timer}}
            )  # fmt: skip
    for k, s in kernel_slices:
        events.append(
            {"name": "memory", "cat": "memory", "ph": "C", "ts": us(s.end), "pid": pid, "tid": s.tid,
             "args": {"bytes": int(k.total_bytes_snapshot), "tensors": int(k.total_tensors_snapshot)}}
        )  # fmt: skip
    return {
        "traceEvents": events,
        "displayTimeUnit": "ms",
        "otherData": {"producer": "ndflow nf.profile", "backend": info.backend, "gpu_time": gpu_note},
    }


def save_trace(info: ProfileInfo, path: str | os.PathLike[str]) -> str:
    """Write ``info``'s trace as JSON to ``path`` (its folder must exist); returns the path as a string."""
    if not isinstance(path, str | os.PathLike):
        raise TypeError(f"save_trace: argument 'path' must be a file path, got {type(path).__name__}")
    target = os.fspath(path)
    trace = to_chrome_trace(info)
    try:
        with open(target, "w", encoding="utf-8") as f:
            json.dump(trace, f, allow_nan=False, separators=(",", ":"))
    except OSError as exc:
        raise OSError(f"save_trace: cannot write the trace to '{target}': {exc.strerror or exc}") from exc
    return target
