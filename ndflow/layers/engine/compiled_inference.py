"""Inference of a layers model through the graph-model optimizer and compiled program.

``LayersModel.predict`` (and ``evaluate``'s forward pass) first ask :func:`compiled_outputs`: when every layer
of the model is of a kind :mod:`graph_trace` can write as TF ops, the model is traced into a graph at the second
call that sees the same weights (the first runs eagerly, so one-shot calls and training loops that predict never
pay a trace), optimized like a loaded graph model (constant folding, batch norms folded into the convolutions,
convolution or product + bias + activation fused, residual adds fused) and run by the graph executor's compiled
program (slots, planned frees, replayed kernel calls). Anything the trace cannot reproduce exactly (an unknown or
custom layer, masking, state, channels-first) makes the model run eagerly, as before; so does the flag
``LAYERS_COMPILE`` set to false, and so does a run under ``nf.profile`` (its trace shows the layers). Training
(``fit``) always runs eagerly: its gradients need the intermediates.

The compiled form keys on the active backend and on the data of every weight it reads: ``set_weights``, a
training step or a loaded checkpoint gives a variable new data; the next call frees the stale graph and runs
eagerly, and the one after it traces again (the folded weights are computed from the new values). Disposing the
model frees what the compiled form made.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ...core.engine import ENGINE
from ...core.flags import env
from ...core.globals import keep
from ...core.tensor import Tensor
from ...core.trace_spans import SPANS
from ...ops import cast
from .training_utils import weights_lock

if TYPE_CHECKING:
    from ...converter.runtime.executor import GraphExecutor

# The flag LAYERS_COMPILE is registered with the core flags (core/flags.py): settable before this module loads.

_ATTR = "_compiled_inference"


class CompiledInference:
    """The traced, optimized graph of one layers model, or why it cannot be traced."""

    def __init__(self) -> None:
        self.refused: str | None = None  # why the model runs eagerly (the trace is not tried again)
        self.key: tuple | None = None
        self.pending: tuple | None = None  # the weights seen by the last call that ran eagerly
        self.executor: GraphExecutor | None = None
        self.made: list[Tensor] = []  # tensors this object made (constants, folded weights), freed by dispose
        self.variables: list[Tensor] = []
        self.inputs: list[str] = []
        self.outputs: list[str] = []
        self.dtypes: list[str] = []

    def current_key(self) -> tuple:
        """The backend and the data ids of the weights the graph reads (new data: trace again)."""
        return (id(ENGINE.backend), tuple([v.data_id for v in self.variables]))

    def build(self, model: Any) -> None:
        """Trace ``model`` into a graph and optimize it (raises ``UntraceableError``)."""
        from ...converter.load.plan import build_graph
        from ...converter.passes.optimize import optimize_enabled, optimize_graph
        from ...converter.runtime.executor import GraphExecutor
        from .executor import FeedDict, _topological_sort
        from .graph_trace import Trace, trace_model

        self.dispose()
        trace = Trace()
        try:
            ordered, _ = _topological_sort(list(model.outputs), FeedDict())
            names = trace_model(ordered, model.inputs, trace)
            graph = build_graph({"node": trace.nodes})
            original = GraphExecutor(graph)
            original.weights = trace.weights
            executor = original
            made = list(trace.owned)
            if optimize_enabled():
                optimized = optimize_graph(graph, trace.weights)
                made.extend(optimized.new_weights.values())
                executor = GraphExecutor(optimized.graph)
                executor.weights = optimized.weights
                executor.fallback, executor.baked = original, optimized.baked
        except BaseException:
            trace.dispose()
            raise
        for t in made:  # built inside the caller's scope (predict's tidy): they outlive it
            keep(t)
        self.executor = executor
        self.made = made
        self.variables = trace.variables
        self.inputs = [names[x.id] for x in model.inputs]
        self.outputs = [names[x.id] for x in model.outputs]
        self.dtypes = [x.dtype or "float32" for x in model.inputs]
        self.key = self.current_key()
        try:
            executor.program_for(self.inputs, self.outputs)  # plan and compile now: a failure here runs eagerly
        except BaseException:
            self.dispose()
            raise

    def run(self, xs: Sequence[Tensor]) -> list[Tensor]:
        """The model's outputs for the input tensors ``xs`` (one per model input), in the caller's scope."""
        assert self.executor is not None
        cast_made = []
        feeds = {}
        for name, x, dtype in zip(self.inputs, xs, self.dtypes, strict=True):
            if x.dtype != dtype:
                x = cast(x, dtype)
                cast_made.append(x)
            feeds[name] = x
        try:
            return self.executor.execute(feeds, self.outputs)
        finally:
            for t in cast_made:
                t.dispose()

    def dispose(self) -> None:
        """Free the graph's constants and folded weights (never the model's variables)."""
        executor, self.executor = self.executor, None
        if executor is not None:
            from ...converter.runtime.constants import forget_constants

            for ex in (executor, executor.fallback):
                if ex is not None:
                    for program in ex._programs.values():
                        program.dispose_graphs()
                    forget_constants(ex.weights.values())
        for t in self.made:
            if not t.is_disposed:
                t.dispose()
        self.made = []
        self.variables = []
        self.key = None


def compiled_outputs(model: Any, xs: Sequence[Tensor]) -> list[Tensor] | None:
    """``model``'s outputs for ``xs`` through its compiled graph; None when the model must run eagerly (flag off,
    untraceable model)."""
    if SPANS.on or not env().get_bool("LAYERS_COMPILE"):
        return None  # a profile's trace shows the layers (and their kernels under them): run them eagerly
    with weights_lock(model):  # one build at a time; never a rebuild under another thread's run
        return _compiled_outputs(model, xs)


def _compiled_outputs(model: Any, xs: Sequence[Tensor]) -> list[Tensor] | None:
    state: CompiledInference | None = model.__dict__.get(_ATTR)
    if state is None:
        state = CompiledInference()
        model.__dict__[_ATTR] = state
    if state.refused is not None:
        return None
    if state.executor is not None:
        if state.key == state.current_key():
            return state.run(xs)
        state.dispose()  # folded from weights that changed: useless now
    seen = weights_key(model)
    if state.pending != seen:
        # The first call with these weights runs eagerly: a trace costs a few eager runs, and a model whose weights
        # change between calls (a training loop that predicts) would pay it every time.
        state.pending = seen
        return None
    from .graph_trace import UntraceableError

    try:
        state.build(model)
    except UntraceableError as exc:
        state.refused = str(exc)
        return None
    except Exception as exc:  # a bug of the trace or the optimizer must not break predict: run eagerly
        state.refused = f"{type(exc).__name__}: {exc}"
        logging.getLogger("ndflow").warning("layers model %s runs eagerly (%s)", model.name, state.refused)
        return None
    return state.run(xs)


def weights_key(model: Any) -> tuple:
    """The active backend and the data ids of all of ``model``'s weights."""
    return (id(ENGINE.backend), tuple([w.read().data_id for w in model.weights]))


def compile_refused(model: Any) -> str | None:
    """Why ``model`` runs eagerly (None when it has run compiled, or has not run yet)."""
    state = model.__dict__.get(_ATTR)
    return None if state is None else state.refused


def is_compiled(model: Any) -> bool:
    """Whether ``model`` holds a compiled graph now."""
    state = model.__dict__.get(_ATTR)
    return state is not None and state.executor is not None


def release_compiled(model: Any) -> None:
    """Free ``model``'s compiled graph (the model is disposed, or its layers changed)."""
    state = getattr(model, "__dict__", {}).pop(_ATTR, None)
    if state is not None:
        state.dispose()


__all__ = ["CompiledInference", "compile_refused", "compiled_outputs", "is_compiled", "release_compiled"]
