"""A :class:`~ndflow.converter.load.plan.Plan` compiled for ``GraphModel.execute``'s tight loop.

Every node the plan runs gets a slot (an index into a list) holding its outputs; each step is a tuple
``(mapper, node, input refs, output slot, slots to free)``, so a run does no name lookups. Weights
sit in a prefilled list that each run copies; inputs are written into their slots.

Instead of one engine scope per node (two with the mappers' own ``tidy``), a run opens one scope and
watches its ``track`` list: a node that made exactly its outputs (almost every node) costs nothing
more; tensors a node made and did not return are freed right after it, as ``tidy`` would. Outputs that
are one of the node's inputs are cloned (the executor frees inputs and outputs on their own schedules).
Errors name the node (``graph model node 'name' (Op): ...``). ``execute_async`` runs the static part of
a graph with control flow the same way (``run_exports``: the tensors the scheduled part reads).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ... import ops
from ...core.awaitable import is_pending
from ...core.dispatch import compiled
from ...core.engine import ENGINE
from ...core.tensor import Tensor
from ...core.trace_spans import SPANS, spanned
from ..load.graph import Node
from ..load.plan import Graph, Plan
from ..load.registry import Mapper, get_mapper
from .replay import Call, record, recordable
from .shape_cache import ShapeCache, ShapeChangedError

Ref = tuple[int, int]
Step = tuple[Mapper, Node, tuple[Ref, ...], int, tuple[int, ...]]


def raw_mapper(op: str) -> Mapper | None:
    """The mapper of ``op`` without its own ``tidy`` scope (the program tracks what each node makes)."""
    fn = get_mapper(op)
    return getattr(fn, "untidied", fn)


def node_step(step: Step, run: Any) -> Any:
    """``run`` (a step method) inside a span of the step's node, for profiles' traces (core/trace_spans.py)."""
    return spanned("node", step[1].name, run, {"op": step[1].op})


def node_error(node: Node, exc: BaseException) -> BaseException:
    """``exc`` with the node's name and op in front of its message (same exception type when possible)."""
    prefix = f"graph model node '{node.name}' ({node.op}): "
    if str(exc).startswith("graph model node"):
        return exc
    try:
        new = type(exc)(prefix + str(exc))
    except Exception:  # exception types with other constructors keep their message, plus a note
        exc.add_note(prefix.rstrip(": "))
        return exc
    return new


class Program:
    """The compiled form of a plan: slots, steps and the weights' prefilled slot list."""

    def __init__(self, graph: Graph, plan: Plan, inputs: Sequence[str], weights: Mapping[str, Tensor]) -> None:
        slots: dict[str, int] = {}

        def slot(name: str) -> int:
            if name not in slots:
                slots[name] = len(slots)
            return slots[name]

        fed = set(inputs)
        for name in inputs:
            slot(name)
        steps: list[Step] = []
        pending: tuple[int, ...] = ()  # free lists of skipped nodes (inputs, weights) move to the next step
        for node, free in zip(plan.order, plan.free_after, strict=True):
            free_slots = pending + tuple(slot(n) for n in free)
            if node.name in fed or node.name in weights:
                slot(node.name)
                pending = free_slots
                continue
            pending = ()
            fn = raw_mapper(node.op)
            if fn is None:
                raise NotImplementedError(f"graph model node '{node.name}': op '{node.op}' has no mapper")
            refs = tuple((slot(src), index) for src, index in node.inputs)
            steps.append((fn, node, refs, slot(node.name), free_slots))
        self.slots = slots
        self.steps = steps
        # Per step: its kept kernel call (replay.py), None before its first run; and which may have one.
        self.calls: list[Call | None] = [None] * len(steps)
        self.replayable = [recordable(step[1].op) for step in steps]
        self.late_free = pending
        base: list[list[Tensor | None] | None] = [None] * len(slots)
        for name, index in slots.items():
            if name in weights:
                weight = weights[name]
                base[index] = [weight]
                if not weight.is_disposed:
                    weight._info.backend.mark_constant(weight.data_id)
        self.base = base
        self.names = {index: name for name, index in slots.items()}
        constant = {index for index, entry in enumerate(base) if entry is not None}
        freed = {s for step in steps for s in step[4]} | set(pending)
        self.shapes = ShapeCache.build(
            [step[1].op for step in steps], [step[2] for step in steps], [step[3] for step in steps], constant, freed
        )
        self.device_graph: tuple[Any, Any] | None = None  # (backend, its graph_capture runner or None)

    def graph_runner(self) -> Any:
        """The active backend's device-graph runner for this program (``Backend.graph_capture``: CUDA graphs on
        torch-CUDA), or None; a runner of a backend no longer active is freed."""
        backend = ENGINE.backend
        held = self.device_graph
        if held is None or held[0] is not backend:
            self.dispose_graphs()
            held = self.device_graph = (backend, backend.graph_capture(self))
        return held[1]

    def dispose_graphs(self) -> None:
        """Free the device graphs captured for this program."""
        held, self.device_graph = self.device_graph, None
        if held is not None and held[1] is not None:
            held[1].dispose()

    def _values(self, feeds: Mapping[tuple[str, int], Tensor]) -> list[Any]:
        """The slot list of a run: the weights, and ``feeds`` ((node, output index) -> Tensor) in their slots."""
        vals = self.base.copy()
        fed: dict[str, list[Tensor | None]] = {}
        for (name, index), t in feeds.items():
            entry = fed.setdefault(name, [])
            entry.extend([None] * (index + 1 - len(entry)))
            entry[index] = t
        slots = self.slots
        for name, entry in fed.items():
            vals[slots[name]] = entry
        return vals

    def run(
        self,
        feeds: Mapping[tuple[str, int], Tensor],
        outputs: Sequence[tuple[str, int]],
        ctx: Any,
        keep_ids: set[int],
    ) -> list[Tensor]:
        """Run the steps on ``feeds`` ((node, output index) -> Tensor); the tensors of ``outputs`` (node,
        index), never aliasing an input or weight (those are cloned)."""
        vals = self._values(feeds)
        release = ENGINE.backend.hold_workers()
        scope = ENGINE.start_scope("GraphModel.execute")
        results: list[Tensor] = []
        try:
            vals = self._run_steps(feeds, vals, scope.track, ctx, keep_ids)
            for name, index in outputs:
                entry = vals[self.slots[name]]
                t = entry[index] if entry is not None and index < len(entry) else None
                if t is None:
                    raise RuntimeError(f"graph model: tensor '{name}:{index}' was not computed")
                results.append(ops.clone(t) if t.kept or t.id in keep_ids else t)
        except BaseException:
            ENGINE.end_scope(None)
            raise
        finally:
            if release is not None:
                release()
        ENGINE.end_scope(results)
        return results

    def run_exports(
        self,
        feeds: Mapping[tuple[str, int], Tensor],
        exports: Sequence[str],
        ctx: Any,
        keep_ids: set[int],
    ) -> dict[str, list[Tensor | None]]:
        """Run the steps on ``feeds``; every output of each node of ``exports`` (not freed by the plan),
        by node name, as the executor's tensor map holds them."""
        vals = self._values(feeds)
        release = ENGINE.backend.hold_workers()
        scope = ENGINE.start_scope("GraphModel.execute_async")
        try:
            vals = self._run_steps(feeds, vals, scope.track, ctx, keep_ids)
        except BaseException:
            ENGINE.end_scope(None)
            raise
        finally:
            if release is not None:
                release()
        slots = self.slots
        found = {name: vals[slots[name]] for name in exports}
        ENGINE.end_scope([t for entry in found.values() if entry for t in entry if t is not None])
        return found

    def _run_steps(
        self,
        feeds: Mapping[tuple[str, int], Tensor],
        vals: list[Any],
        track: list[Tensor],
        ctx: Any,
        keep_ids: set[int],
    ) -> list[Any]:
        """Run the steps; with shape-only steps, from their cache when it is recorded, and again from the
        inputs (recording) when a source step sees other shapes. The final slot list."""
        cache = self.shapes
        if cache is None or not cache.ready:
            self._steps(vals, track, ctx, keep_ids, 1 if cache is not None else 0)
            if self.shapes is not None:
                self.shapes.ready = True
            return vals
        try:
            self._steps(vals, track, ctx, keep_ids, 2)
            return vals
        except ShapeChangedError:
            pass
        made = track[:]
        track.clear()
        for t in made:
            if not t.kept and not t.is_disposed and t.id not in keep_ids:
                t.dispose()
        self._forget_shapes()
        vals = self._values(feeds)
        return self._run_steps(feeds, vals, track, ctx, keep_ids)

    def _steps(self, vals: list[Any], track: list[Tensor], ctx: Any, keep_ids: set[int], mode: int) -> None:
        """Run every step on the slot list ``vals`` (in the caller's scope, whose list is ``track``). ``mode``:
        0 without a shape cache, 1 recording it, 2 skipping the shape-only steps. With compiled dispatch, the
        plain replayed steps run in C (``_dispatch.run_steps``: the same work as :meth:`_step`'s kept call), the
        others here."""
        steps, calls, replayable = self.steps, self.calls, self.replayable
        cache = self.shapes
        pure = cache.pure if cache is not None else ()
        fast = compiled.step_runner()
        at = [0]  # the step running (where an error names its node)
        n = len(steps)
        k = 0
        try:
            while k < n:
                if fast is not None:
                    skip = cache.skippable if mode == 2 else ()  # type: ignore[union-attr]
                    done = fast(steps, calls, replayable, pure, skip, vals, track, keep_ids, mode, k, at)
                    if done.__class__ is not int:  # its kernel ran; its outputs are settled here
                        k, out, mark = done
                        at[0] = k
                        mode, pure = self._step(k, calls, vals, track, ctx, keep_ids, mode, pure, (out, mark))
                        k += 1
                        continue
                    k = done
                    if k >= n:
                        break
                at[0] = k
                step = self._step if not SPANS.on else node_step(steps[k], self._step)
                mode, pure = step(k, calls, vals, track, ctx, keep_ids, mode, pure, None)
                k += 1
        except ShapeChangedError:
            raise
        except Exception as exc:
            if mode == 1 and self.shapes is not None:
                self._forget_shapes()
            if not steps:
                raise
            raise node_error(steps[at[0]][1], exc) from exc
        for s in self.late_free:
            _free(vals, s, keep_ids)

    def _constants(self, refs: tuple[Ref, ...], mode: int) -> list[bool]:
        """Which inputs of a step keep their values from run to run: the weights, and with a shape cache the
        shape-only values (a new input shape records every call again)."""
        base = self.base
        if mode == 0:
            return [base[s] is not None for s, _ in refs]
        pure_slots = self.shapes.slots  # type: ignore[union-attr]
        return [base[s] is not None or s in pure_slots for s, _ in refs]

    def _forget_shapes(self) -> None:
        """Empty the shape cache, and the calls recorded with its values as constants."""
        self.shapes.reset()  # type: ignore[union-attr]
        self.calls = [None] * len(self.steps)

    def _drop_shape_cache(self) -> None:
        """No shape cache for this program (a value it cannot keep): calls recorded with shape-only values
        as constants are recorded again."""
        self.shapes = None
        self.calls = [None] * len(self.steps)

    def _step(
        self,
        k: int,
        calls: list[Call | None],
        vals: list[Any],
        track: list[Tensor],
        ctx: Any,
        keep_ids: set[int],
        mode: int,
        pure: Sequence[bool],
        ran: tuple[Any, int] | None,
    ) -> tuple[int, Sequence[bool]]:
        """Run step ``k`` (``ran``: its kernel already ran in C, giving ``(output, mark)``); the mode and shape
        cache flags for the steps after it (recording stops where the cache cannot keep a value)."""
        fn, node, refs, out_slot, free = self.steps[k]
        cache = self.shapes
        args = None  # the step's inputs, read only where needed
        if ran is not None:
            out, mark = ran
        elif mode == 2 and pure[k]:
            out, mark = cache.replay(k, vals, refs), -1  # type: ignore[union-attr]
        else:
            mark = len(track)
            call = calls[k]
            # A kept call repeats while the inputs that may change have the recorded shapes and dtypes.
            same = False
            if call is not None and call[4] is not None and self.replayable[k] and not ENGINE._slow:
                same = True
                try:
                    for s, i, shape, dtype in call[4]:
                        a = vals[s][i]
                        if a.__class__ is not Tensor or a.shape != shape or a.dtype != dtype:
                            same = False
                            break
                except (TypeError, IndexError):  # an input missing: reported below
                    same = False
            if same and call[1] is not None:
                out = ENGINE.run_kernel(call[1], tuple([vals[s][i] for s, i in call[5]]), call[3])
            else:
                try:
                    args = [vals[s][i] for s, i in refs]
                except (TypeError, IndexError):
                    raise self._missing(vals, node, refs) from None
                if same or not self.replayable[k] or ENGINE._slow:
                    out = fn(node, args, ctx)
                else:
                    out, calls[k] = record(fn, node, args, ctx, self._constants(refs, mode), refs)
        if mark < 0:
            outs = out
        elif out.__class__ is Tensor and len(track) == mark + 1 and track[mark] is out:
            outs = [out]
        else:
            if args is None:
                args = [vals[s][i] for s, i in refs]
            outs = self.settle(out, args, track, mark)
        if mode == 1 and pure[k]:
            if args is None:
                args = [vals[s][i] for s, i in refs]
            if not cache.record(k, args, outs):  # type: ignore[union-attr]
                self._drop_shape_cache()
                mode, pure = 0, ()
        vals[out_slot] = outs
        for s in free:
            entry = vals[s]
            if entry is not None:
                for t in entry:
                    if t is not None and not t.kept and t.id not in keep_ids:
                        if t.__class__ is Tensor:
                            t.dispose()  # the compiled dispose, where built
                        else:
                            ENGINE.dispose_tensor(t)
                vals[s] = None
        return mode, pure

    @staticmethod
    def settle(out: Any, args: list[Any], track: list[Tensor], mark: int) -> list[Tensor | None]:
        """The general case: a list of outputs, none of them an input (cloned); tensors the node made and
        did not return are freed; an awaitable is refused."""
        if is_pending(out):
            getattr(out, "close", lambda: None)()
            raise RuntimeError("the execution of this op returned an awaitable; use model.execute_async() instead")
        if out is None:
            outs: list[Tensor | None] = []
        elif isinstance(out, Tensor):
            outs = [out]
        else:
            outs = list(out)
        arg_ids = {id(a) for a in args if a is not None and not a.kept}
        if arg_ids:
            outs = [ops.clone(t) if t is not None and id(t) in arg_ids else t for t in outs]
        made = track[mark:]
        if made:
            out_ids = {id(t) for t in outs if t is not None}
            for t in made:
                if id(t) not in out_ids and not t.kept and not t.is_disposed:
                    t.dispose()
            track[mark:] = [t for t in made if not t.is_disposed]
        return outs

    def _missing(self, vals: list[Any], node: Node, refs: tuple[Ref, ...]) -> RuntimeError:
        for s, i in refs:
            entry = vals[s]
            if entry is None or i >= len(entry) or entry[i] is None:
                return RuntimeError(
                    f"graph model: tensor '{self.names[s]}:{i}' (input of node '{node.name}') was not computed"
                )
        return RuntimeError(f"graph model: an input of node '{node.name}' was not computed")


def _free(vals: list[Any], s: int, keep_ids: set[int]) -> None:
    entry = vals[s]
    if entry is not None:
        for t in entry:
            if t is not None and not t.kept and t.id not in keep_ids:
                t.dispose()
        vals[s] = None
