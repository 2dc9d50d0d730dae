"""The dynamic schedule of ``execute_async`` (TF.js's ``GraphExecutor.processStack``).

A stack of ready nodes, each tagged with the frame stack it runs in (see ``control_flow``): a node runs
when all its inputs exist in its frame or an outer one (a ``Merge`` when one does), Switch outputs only
on the taken branch, and the results of dynamic ops (control flow, NonMaxSuppression, Where, ...) are
taken in only once no other node is ready, as TF.js's promises settle. The static part of the run
(``async_plan``) has already run when the schedule starts: its exports are in the tensor map, and the
schedule starts from them. A tensor is freed when all its consumers in the same frame ran.

Everything the loop looks up per node (consumers among the scheduled nodes, which nodes are dynamic,
Merge or control flow) comes precomputed with the plan; in the root frame a tensor is one dict lookup.
"""

from __future__ import annotations

import inspect
from collections.abc import Sequence
from typing import Any

from ... import ops
from ...core.awaitable import is_pending
from ...core.engine import ENGINE
from ...core.tensor import Tensor
from ..load.graph import Node
from ..load.plan import Graph
from .async_plan import AsyncPlan
from .control_flow import ExecutionContext
from .islands import Island
from .program import Program, node_error

TensorMap = dict[str, list[Tensor | None]]


async def _finish(node: Node, args: list[Tensor | None], result: Any) -> list[Tensor | None]:
    """Await a coroutine mapper (it frees what it makes); its outputs, none of them one of ``args``."""
    try:
        out = await result
        outs: list[Tensor | None] = [] if out is None else [out] if isinstance(out, Tensor) else list(out)
        ids = {id(t) for t in args if t is not None and not t.kept}
        return [ops.clone(t) if t is not None and id(t) in ids else t for t in outs] if ids else outs
    except Exception as exc:
        raise node_error(node, exc) from exc


def get_tensor(name: str, index: int, tensor_map: TensorMap, ctx: ExecutionContext) -> Any:
    """The tensor ``name:index`` as seen from the current frame (or an outer one), or None."""
    handles = ctx.resources.name_to_handle
    if handles and name in handles:
        return handles[name]
    for cid in ctx.current_context_ids:
        entry = tensor_map.get(f"{name}-{cid}" if cid else name)
        if entry is not None:
            return entry[index] if index < len(entry) else None
    return None


def free_all(tensor_map: TensorMap, keep_ids: set[int]) -> None:
    """Free what a run left (kept tensors belong to TensorArrays/TensorLists/tables, freed with them)."""
    for entry in tensor_map.values():
        for t in entry:
            if t is not None and not t.kept and not t.is_disposed and t.id not in keep_ids:
                t.dispose()


class Schedule:
    """One run of the scheduled (non-static) nodes of an :class:`AsyncPlan`.

    Nodes run in bursts: pop ready nodes until the stack is empty, then take in the dynamic results.
    A burst runs in one engine scope (never across an await) and watches its ``track`` list as
    ``Program`` does: tensors a node made and did not return are freed right after it."""

    def __init__(
        self,
        graph: Graph,
        plan: AsyncPlan,
        ctx: ExecutionContext,
        tensor_map: TensorMap,
        to_keep: set[int],
        out_nodes: Sequence[str],
    ) -> None:
        self.graph = graph
        self.plan = plan
        self.ctx = ctx
        self.tensor_map = tensor_map
        self.to_keep = to_keep
        self.out_set = set(out_nodes)
        self.counts: dict[int, int] = {}  # tensor id -> consumers (edges) that have not run yet
        self.added: set[str] = set()  # tensor-map keys of nodes already put on the stack
        self.stack: list[tuple[str, Any]] = [(n, ctx.frames) for n in plan.seeds]

    def take_exports(self, exported: dict[str, list[Tensor | None]]) -> None:
        """Put the static part's exports into the tensor map, counting their consumers still to run."""
        self.tensor_map.update(exported)
        counts, out_set, pending = self.counts, self.out_set, self.plan.pending_edges
        for name, entry in exported.items():
            if name in out_set:
                continue
            for t in entry:
                if t is not None:
                    counts[t.id] = counts.get(t.id, 0) + pending[name]

    def _plain(self) -> bool:
        """Whether a tensor is one dict lookup (root frame, no hash-table handles)."""
        return self.ctx.current_context_id == "" and not self.ctx.resources.name_to_handle

    async def run(self) -> None:
        """Run nodes as they become ready, filling the tensor map (keys: node name + frame id)."""
        ctx, tensor_map, stack = self.ctx, self.tensor_map, self.stack
        while stack:
            pending: list[tuple[Node, str, Any, Any]] = []
            try:
                scope = ENGINE.start_scope("GraphModel.execute_async")
                made: list[list[Tensor | None]] = []
                try:
                    self._burst(scope.track, pending, made)
                except BaseException:
                    ENGINE.end_scope(None)
                    raise
                ENGINE.end_scope([t for outs in made for t in outs if t is not None and not t.is_disposed])
                pending.sort(key=lambda p: p[3].__class__ is not list)  # settled results first, as promises
                while pending:
                    node, key, frames, outs = pending.pop(0)
                    ctx.frames = frames
                    if outs.__class__ is not list:
                        outs = await outs
                        ctx.frames = frames
                    tensor_map[key] = outs
                    self._free_consumed(node.name, key)
                    self._push_children(node.name)
            except BaseException:
                for *_, outs in pending:
                    if inspect.iscoroutine(outs):
                        outs.close()
                    elif isinstance(outs, list):
                        tensor_map.setdefault(f"pending:{id(outs)}", outs)  # freed with the rest
                raise

    def _burst(self, track: list[Tensor], pending: list[tuple[Node, str, Any, Any]], made: list[list]) -> None:
        """Run ready nodes until none is left; dynamic ones go to ``pending`` (coroutines not started)."""
        plan, ctx, tensor_map, stack = self.plan, self.ctx, self.tensor_map, self.stack
        nodes, dynamic, mappers, constant_enters = self.graph.nodes, plan.dynamic, plan.mappers, plan.constant_enters
        get = tensor_map.get
        islands = plan.islands
        while stack:
            name, frames = stack.pop()
            ctx.frames = frames
            if name in islands:
                self._run_island(islands[name], made)
                continue
            key = ctx.key(name) if name in constant_enters else None
            if name in tensor_map:
                self._push_children(name)
                continue
            node = nodes[name]
            if self._plain():
                args = [e[i] if (e := get(src)) is not None and i < len(e) else None for src, i in node.inputs]
            else:
                args = [get_tensor(src, i, tensor_map, ctx) for src, i in node.inputs]
            fn = mappers.get(name)
            if fn is None:
                raise NotImplementedError(f"graph model node '{name}': op '{node.op}' has no mapper")
            mark = len(track)
            try:
                out = fn(node, args, ctx)
                if out.__class__ is Tensor and len(track) == mark + 1 and track[mark] is out:
                    outs: Any = [out]
                elif out is not None and out.__class__ not in (list, tuple, Tensor) and is_pending(out):
                    outs = _finish(node, args, out)
                else:
                    outs = Program.settle(out, args, track, mark)
            except Exception as exc:
                raise node_error(node, exc) from exc
            key = ctx.key(name) if key is None else key
            if outs.__class__ is list:
                made.append(outs)
            if name in dynamic or outs.__class__ is not list:
                pending.append((node, key, ctx.frames, outs))
                continue
            tensor_map[key] = outs
            self._free_consumed(name, key)
            self._push_children(name)

    def _run_island(self, island: Island, made: list[list]) -> None:
        """Run an island's program on the tensors it reads (all there: the schedule waited for them), put
        its exports into the tensor map as the static part's, and free what it was the last to read."""
        ctx, tensor_map = self.ctx, self.tensor_map
        if ctx.current_context_id != "":
            raise RuntimeError(f"graph model: {island.name} was scheduled inside a loop frame")
        feeds = {(src, i): get_tensor(src, i, tensor_map, ctx) for src, i in island.feeds}
        exported = island.program.run_exports(feeds, island.exports, ctx, self.to_keep)
        made.extend(exported.values())
        self.tensor_map.update(exported)
        counts, out_set = self.counts, self.out_set
        for name, entry in exported.items():
            if name in out_set:
                continue
            for t in entry:
                if t is not None:
                    counts[t.id] = counts.get(t.id, 0) + island.pending_edges[name]
        self._free_sources(island.free_sources, True)
        for name in island.exports:
            self._push_children(name)

    def _push_children(self, name: str) -> None:
        ctx, added, plan, tensor_map = self.ctx, self.added, self.plan, self.tensor_map
        deps, merges = plan.deps, plan.merges
        plain = self._plain()
        get = tensor_map.get
        for child in plan.used_children[name]:
            key = ctx.key(child)
            if key in added:
                continue
            if plain:
                ok = [(e := get(src)) is not None and i < len(e) and e[i] is not None for src, i in deps[child]]
            else:
                ok = [get_tensor(src, i, tensor_map, ctx) is not None for src, i in deps[child]]
            if any(ok) if child in merges else all(ok):
                added.add(key)
                self.stack.append((child, ctx.frames))

    def _free_consumed(self, name: str, key: str) -> None:
        """Count this node's tensors' consumers; free its inputs' tensors whose last consumer this was."""
        plan = self.plan
        if name in plan.control_flow or name in self.out_set:
            return
        counts, n_children = self.counts, plan.n_children[name]
        for t in self.tensor_map[key]:
            if t is not None:
                counts[t.id] = counts.get(t.id, 0) + n_children
        self._free_sources(plan.free_sources[name], self.ctx.current_context_id == "")

    def _free_sources(self, sources: list[str], plain: bool) -> None:
        """One consumer of each of ``sources`` (one entry per edge) ran: free the tensors it was the last of."""
        counts, tensor_map, to_keep, ctx = self.counts, self.tensor_map, self.to_keep, self.ctx
        for src in sources:
            for t in tensor_map.get(src if plain else ctx.key(src), ()):
                if t is None or t.kept or t.id in to_keep:
                    continue
                count = counts.get(t.id)
                if count == 1:
                    t.dispose()
                    del counts[t.id]
                elif count is not None:
                    counts[t.id] = count - 1
