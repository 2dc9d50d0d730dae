"""CUDA graphs for graph models on torch-CUDA: a program whose plan is static runs as one ``graph.replay()``.

At batch 1 a small graph model spends most of its time launching kernels (and in ndflow's step loop). When a
program (``ndflow/converter/runtime/program.py``) is static, its kernel launches are captured once into a
``torch.cuda.CUDAGraph`` and replayed. Static means: every step may be replayed (no control flow, dynamic,
random, stateful or table op: such plans never get here or are refused), the inputs' shapes and dtypes are
those of the capture (the signature; each signature gets its own graph), and every kernel runs on the torch
backend on CUDA without touching the host (a kernel that reads values back, ``.item()``/``.cpu()``, a cpu
fallback or an upload of host values fails the capture: torch raises while a stream captures, and the
backend's uploads are refused here during capture).

Per signature: the first call runs eagerly (the warm-up torch asks for: lazy initialisation, kernels'
memos, the shape cache); the second captures the steps, reading the inputs from static buffers, into a graph
whose intermediates live in its private memory pool, then replays it; later calls copy the inputs into the
static buffers and replay. Every call returns new tensors holding copies of the static outputs (outputs
kept across calls stay valid). A capture that fails marks its signature uncapturable (after two failures)
and the call runs eagerly: a user's call never fails because of this.

The flag ``TORCH_CUDA_GRAPHS`` (default false until ``benchmarks/gpu_check.py`` has compared it with eager runs
on a real GPU) turns it on; it acts only on CUDA. ``nf.memory()`` on
the torch backend gains ``num_bytes_in_cuda_graphs``: the bytes torch reserved while capturing the live
graphs (their static input buffers and private pools: intermediates and static outputs), or the static
buffers' bytes where that delta is smaller; these are not in ``num_bytes`` (ndflow's tensors).
``model.dispose()`` frees the graphs.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

import torch

from ...core.engine import ENGINE
from ...core.flags import env
from ...core.tensor import Tensor

logger = logging.getLogger("ndflow")

FLAG = "TORCH_CUDA_GRAPHS"
# Replaced by tests with fakes (there is no CUDA there): the graph class and the capture context.
CUDAGraph: Any = torch.cuda.CUDAGraph
graph_context: Any = torch.cuda.graph
MAX_SIGNATURES = 8  # captured graphs per program; further signatures run eagerly
MAX_FAILURES = 2  # failed captures before a signature is left eager

_WARM, _EAGER = "warm", "eager"
_LIVE: dict[int, tuple[Any, int]] = {}  # id(captured) -> (backend, bytes)


def cuda_graphs_possible(backend: Any) -> bool:
    """Whether ``backend`` can capture CUDA graphs: a torch backend on a CUDA device (tests force True)."""
    return bool(getattr(backend, "is_cuda", False)) and torch.cuda.is_available()


def graph_bytes(backend: Any) -> int:
    """The bytes held by the live captured graphs of ``backend``."""
    return sum(n for b, n in _LIVE.values() if b is backend)


class CaptureRefusedError(RuntimeError):
    """A step tried host work (an upload, a read) while the graph was being captured."""


class Captured:
    """One signature's graph: static input buffers (by feed key), the graph, static outputs and their
    shapes and dtypes."""

    def __init__(
        self,
        backend: Any,
        graph: Any,
        inputs: dict[Any, torch.Tensor],
        outputs: list[torch.Tensor],
        meta: list[tuple[tuple[int, ...], str]],
        nbytes: int,
        uploads: list[torch.Tensor],
    ) -> None:
        self.backend, self.graph, self.inputs, self.outputs, self.meta = backend, graph, inputs, outputs, meta
        self.uploads = uploads  # device copies of host values the graph reads (kept while it lives)
        _LIVE[id(self)] = (backend, nbytes)

    def replay(self, feeds: Mapping[Any, Tensor]) -> list[Tensor]:
        """Copy ``feeds`` into the static inputs, replay, and return new tensors copying the outputs."""
        backend = self.backend
        for key, t in feeds.items():
            self.inputs[key].copy_(backend.values(t.data_id).reshape(t.shape))
        self.graph.replay()
        return [
            ENGINE.make_tensor_from_output((backend.store(out.clone(), shape), shape, dtype))
            for out, (shape, dtype) in zip(self.outputs, self.meta, strict=True)
        ]

    def dispose(self) -> None:
        """Free the graph, its pool and the static buffers."""
        _LIVE.pop(id(self), None)
        reset = getattr(self.graph, "reset", None)
        if reset is not None:
            reset()
        self.graph, self.inputs, self.outputs, self.uploads = None, {}, [], []


class GraphRunner:
    """Runs one program on one torch backend: eagerly, or through a captured graph per input signature."""

    def __init__(self, backend: Any, program: Any) -> None:
        self.backend = backend
        self.program = program
        self.static = all(program.replayable)  # no dynamic, random, stateful or table step
        self.states: dict[tuple, Any] = {}  # signature -> _WARM, _EAGER, a failure count, or Captured
        self.captures = 0  # successful captures (tests read it)

    def run(
        self, feeds: Mapping[tuple[str, int], Tensor], outputs: Sequence[tuple[str, int]], ctx: Any, keep_ids: set[int]
    ) -> list[Tensor]:
        """``program.run``'s result, computed eagerly or by replaying this signature's graph."""
        program = self.program
        key = self._signature(feeds, outputs)
        if key is None:
            return program.run(feeds, outputs, ctx, keep_ids)
        state = self.states.get(key)
        if state is None:
            if sum(1 for s in self.states.values() if s.__class__ is Captured) >= MAX_SIGNATURES:
                self.states[key] = _EAGER
            else:
                self.states[key] = _WARM
            return program.run(feeds, outputs, ctx, keep_ids)
        if state.__class__ is Captured:
            return state.replay(feeds)
        if state is _EAGER:
            return program.run(feeds, outputs, ctx, keep_ids)
        captured = self._capture(feeds, outputs, ctx, keep_ids)
        if captured is None:
            failures = (state if state.__class__ is int else 0) + 1
            self.states[key] = _EAGER if failures >= MAX_FAILURES else failures
            return program.run(feeds, outputs, ctx, keep_ids)
        self.states[key] = captured
        self.captures += 1
        return captured.replay(feeds)

    def _signature(self, feeds: Mapping[tuple[str, int], Tensor], outputs: Sequence[tuple[str, int]]) -> tuple | None:
        """The key of this call's graph, or None where it must run eagerly (flag off, another backend, a tape,
        profile or debug mode, a step that is not static, an input that is not a torch tensor here)."""
        backend = self.backend
        if not self.static or ENGINE._slow or ENGINE.backend is not backend or not env().get(FLAG):
            return None
        if not cuda_graphs_possible(backend):
            return None
        parts = []
        data = backend.data
        for key in sorted(feeds):
            t = feeds[key]
            if t.__class__ is not Tensor or t.dtype == "string" or t._info.backend is not backend:
                return None
            record = data.get(t.data_id)
            if record is None or not isinstance(record.values, torch.Tensor):
                return None
            parts.append((key, t.shape, t.dtype))
        return tuple(parts), tuple(outputs)

    def _capture(
        self, feeds: Mapping[tuple[str, int], Tensor], outputs: Sequence[tuple[str, int]], ctx: Any, keep_ids: set[int]
    ) -> Captured | None:
        """Capture the program reading static copies of ``feeds``; None (logged) when the capture fails."""
        backend, program = self.backend, self.program
        cuda = backend.is_cuda
        if cuda:
            torch.cuda.synchronize(backend.device)
            before = torch.cuda.memory_reserved(backend.device)
        inputs = {
            key: backend.values(t.data_id).reshape(t.shape).clone(memory_format=torch.contiguous_format)
            for key, t in feeds.items()
        }
        dtypes = {key: t.dtype for key, t in feeds.items()}
        others = keep_ids - {t.id for t in feeds.values()}
        meta: list[tuple[tuple[int, ...], str]] = []

        def body() -> list[torch.Tensor]:
            # the steps on tensors over the static inputs: the outputs' torch tensors (nothing here touches the host)
            fed = {
                key: ENGINE.make_tensor_from_output((backend.store(b, tuple(b.shape)), tuple(b.shape), dtypes[key]))
                for key, b in inputs.items()
            }
            try:
                outs = program.run(fed, outputs, ctx, others | {t.id for t in fed.values()})
                try:
                    statics = []
                    meta.clear()
                    for o in outs:
                        values = backend.data[o.data_id].values
                        if not isinstance(values, torch.Tensor):
                            raise CaptureRefusedError(f"an output of dtype {o.dtype} is not a torch tensor")
                        statics.append(values.reshape(o.shape))
                        meta.append((tuple(o.shape), o.dtype))
                    return statics
                finally:
                    for o in outs:
                        o.dispose()
            finally:
                for t in fed.values():
                    t.dispose()

        uploads: dict[tuple, torch.Tensor] = {}  # host values the steps upload (shape-only values), by content
        graph = CUDAGraph()
        try:
            backend.to_torch = _recording(backend, uploads)
            try:
                body()  # outside the capture: fills ``uploads`` (and warms up on the static inputs)
            finally:
                backend.__dict__.pop("to_torch", None)
            backend.to_torch = _served(uploads)
            backend.read_sync = _refuse("read_sync")
            try:
                statics = capture(graph, body)
            finally:
                backend.__dict__.pop("to_torch", None)
                backend.__dict__.pop("read_sync", None)
        except Exception as exc:  # noqa: BLE001  (any failure: the call runs eagerly)
            logger.debug("torch backend: CUDA graph capture failed (%s: %s); running eagerly", type(exc).__name__, exc)
            return None
        nbytes = sum(b.untyped_storage().nbytes() for b in inputs.values())
        if cuda:
            torch.cuda.synchronize(backend.device)
            nbytes = max(nbytes, torch.cuda.memory_reserved(backend.device) - before)
        nbytes += sum(t.untyped_storage().nbytes() for t in uploads.values())
        return Captured(backend, graph, inputs, statics, meta, nbytes, list(uploads.values()))

    def dispose(self) -> None:
        """Free every captured graph; later calls warm up and capture again."""
        for state in self.states.values():
            if state.__class__ is Captured:
                state.dispose()
        self.states.clear()


def capture(graph: Any, body: Any) -> list[torch.Tensor]:
    """Capture ``body()`` (kernels on the static inputs) into ``graph``; its static outputs. Tests replace it."""
    with graph_context(graph):
        return body()


MAX_UPLOAD_BYTES = 1 << 20  # host values larger than this are not kept for a capture (it fails: eager)


def _content(array: Any) -> tuple:
    return (array.dtype.str, array.shape, array.tobytes())


def _recording(backend: Any, uploads: dict[tuple, torch.Tensor]) -> Any:
    """``to_torch`` for the run before a capture: uploads as usual, keeping a device copy of each value."""
    upload = type(backend).to_torch

    def to_torch(array: Any) -> torch.Tensor:
        if array.nbytes <= MAX_UPLOAD_BYTES:
            key = _content(array)
            if key not in uploads:
                uploads[key] = upload(backend, array.copy())
            return uploads[key]
        return upload(backend, array)

    return to_torch


def _served(uploads: dict[tuple, torch.Tensor]) -> Any:
    """``to_torch`` during a capture: the device copy of a value uploaded by the run before (no host copy is
    captured); any other upload fails the capture."""

    def to_torch(array: Any) -> torch.Tensor:
        found = uploads.get(_content(array)) if array.nbytes <= MAX_UPLOAD_BYTES else None
        if found is None:
            raise CaptureRefusedError("torch backend: a host value uploaded during CUDA graph capture")
        return found

    return to_torch


def _refuse(name: str) -> Any:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise CaptureRefusedError(f"torch backend: {name} (host work) during CUDA graph capture")

    return refuse


def graph_capture(self: Any, program: Any) -> GraphRunner | None:
    """``Backend.graph_capture`` for the torch backend: a runner for ``program`` (None off CUDA)."""
    return GraphRunner(self, program) if cuda_graphs_possible(self) else None


def install(cls: type) -> type:
    """Give the torch backend class ``graph_capture`` and the ``num_bytes_in_cuda_graphs`` memory field."""
    if getattr(cls, "_cuda_graphs_installed", False):
        return cls
    base_memory = cls.memory

    def memory(self: Any) -> dict[str, Any]:
        fields = base_memory(self)
        held = graph_bytes(self)
        if held or getattr(self, "is_cuda", False):
            fields["num_bytes_in_cuda_graphs"] = held
        return fields

    memory.__doc__ = base_memory.__doc__
    cls.memory = memory  # type: ignore[method-assign]
    cls.graph_capture = graph_capture  # type: ignore[attr-defined]
    cls._cuda_graphs_installed = True  # type: ignore[attr-defined]
    return cls


env().register_flag(FLAG, lambda: False)  # on once a real GPU has shown equal outputs
