"""The plan of an ``execute_async`` run: its static part runs as a compiled program, the rest is scheduled.

A graph with control flow or data-dependent ops is rarely dynamic all through: a detector's backbone or
a matting network's encoder only reads the inputs and the weights, and the loops, branches and
NonMaxSuppressions come after. The *static* nodes of a run are the used nodes that no dynamic node
(``plan.is_dynamic``) and no missing input leads to; their results do not depend on the schedule, so
they run first, in one compiled :class:`~ndflow.converter.runtime.program.Program` (no per-node scope, frame
lookup or readiness check; intermediates freed after their last static consumer). The executor's
scheduler then runs the remaining nodes, starting from the static nodes they read (``exports``).

Everything here is computed once per set of inputs and outputs and cached by the executor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from ...core.tensor import Tensor
from ..load.plan import Graph, Subgraph, compile_plan, execution_subgraph, is_control_flow, is_dynamic
from ..load.registry import Mapper
from .islands import Island, find_islands
from .program import Program, raw_mapper


@dataclass
class AsyncPlan:
    """What ``execute_async`` needs for one set of inputs and outputs.

    ``sub``: the used nodes (as ``execution_subgraph``); ``program``: the static nodes compiled (None when
    there are none); ``static``: their names; ``exports``: static nodes whose tensors the scheduled part
    or the caller reads; ``pending_edges``: per export, its edges to consumers that are not static (the
    consumer count the scheduler starts from when it frees tensors); ``seeds``: the nodes the scheduler
    starts from (inputs, weights, non-static init nodes, exports), in its order; ``used_children``: per
    used node, its consumers among the used nodes that are not static (one entry per edge); ``dynamic``,
    ``merges``, ``control_flow``, ``constant_enters``: the used nodes of those kinds; ``n_children``: each
    used node's consumers (edges, used or not); ``free_sources``: per used node, the sources of its
    edges (one per edge) that are not control flow, whose tensors it may be the last to read; ``mappers``:
    the mapper of each node the schedule may run (unused init nodes included); ``islands``: groups of
    scheduled nodes run as one program each (``islands.py``), by their name in the schedule, which stands
    for them in ``used_children`` and ``deps`` (the edges the schedule waits for, per scheduled node)."""

    sub: Subgraph
    program: Program | None
    static: frozenset[str]
    exports: list[str]
    pending_edges: dict[str, int]
    seeds: list[str]
    used_children: dict[str, list[str]] = field(default_factory=dict)
    dynamic: frozenset[str] = frozenset()
    merges: frozenset[str] = frozenset()
    control_flow: frozenset[str] = frozenset()
    constant_enters: frozenset[str] = frozenset()
    n_children: dict[str, int] = field(default_factory=dict)
    free_sources: dict[str, list[str]] = field(default_factory=dict)
    mappers: dict[str, Mapper] = field(default_factory=dict)
    islands: dict[str, Island] = field(default_factory=dict)
    deps: dict[str, list[tuple[str, int]]] = field(default_factory=dict)

    def run_static(
        self, feeds: Mapping[tuple[str, int], Tensor], ctx: object, keep_ids: set[int]
    ) -> dict[str, list[Tensor | None]]:
        """Run the static nodes; the exports' tensors by node name."""
        if self.program is None:
            return {}
        return self.program.run_exports(feeds, self.exports, ctx, keep_ids)


def _reachable(graph: Graph, starts: Iterable[str], used: set[str]) -> set[str]:
    """Used nodes that some node of ``starts`` leads to (``starts`` included)."""
    seen: set[str] = set()
    stack = [n for n in starts if n in used]
    while stack:
        name = stack.pop()
        if name in seen:
            continue
        seen.add(name)
        stack.extend(c for c in graph.children[name] if c in used and c not in seen)
    return seen


def build_async_plan(
    graph: Graph, in_nodes: Iterable[str], out_nodes: Iterable[str], weights: Mapping[str, Tensor]
) -> AsyncPlan:
    """The plan for computing ``out_nodes`` from ``in_nodes`` (node names) with these weights."""
    inputs = list(dict.fromkeys(in_nodes))
    outputs = list(dict.fromkeys(out_nodes))
    sub = execution_subgraph(graph, inputs, outputs, weights)
    used = sub.used
    fed = set(inputs)
    given = fed | {n for n in used if n in weights}
    dynamic = [n for n in used if n not in given and is_dynamic(graph.nodes[n].op)]
    blocked = _reachable(graph, [*dynamic, *sub.missing_inputs], used)
    static = frozenset(n for n in used if n not in given and n not in blocked)
    scheduled = used - static
    out_set = set(outputs)
    exports = [
        n for n in graph.nodes if n in static and (n in out_set or any(c in scheduled for c in graph.children[n]))
    ]
    pending_edges = {n: sum(1 for c in graph.children[n] if c not in static) for n in exports}
    program = None
    if static:
        plan_sub = Subgraph(static | {n for n in given if n in used}, [], [], [])
        plan = compile_plan(graph, sorted(fed), exports, plan_sub)
        program = Program(graph, plan, sorted(fed), weights)
    # As TF.js, every init node not run yet is a seed (used or not). A tensor there from the start (input,
    # weight, export) only needs to start the consumers that nothing else will start: a Merge, or a node
    # whose inputs are all there from the start (any other consumer is started by its last input).
    ready = given | static
    merges = {n for n in scheduled if graph.nodes[n].op == "Merge"}

    def starts(child: str) -> bool:
        return child in scheduled and (child in merges or all(src in ready for src, _ in graph.deps[child]))

    feeders = [n for n in dict.fromkeys([*inputs, *graph.weights, *exports]) if n in used]
    seeds = [n for n in feeders if any(starts(c) for c in graph.children[n])]
    seeds += [n for n in graph.init_nodes if n not in static and n not in seeds]
    nodes = graph.nodes
    control_flow = frozenset(n for n in used if is_control_flow(nodes[n].op))
    islands = find_islands(graph, used, scheduled, fed, sub.missing_inputs, out_set, weights)
    island_of = {m: island.name for island in islands for m in island.members}
    used_children = {n: _children(graph, n, scheduled, island_of) for n in used}
    free_sources = {n: [s for s, _ in graph.deps[n] if not is_control_flow(nodes[s].op)] for n in scheduled}
    deps = {n: graph.deps[n] for n in scheduled}
    for island in islands:
        used_children[island.name] = []
        free_sources[island.name] = island.free_sources
        deps[island.name] = island.deps
    return AsyncPlan(
        sub,
        program,
        static,
        exports,
        pending_edges,
        seeds,
        used_children=used_children,
        dynamic=frozenset(n for n in used if is_dynamic(nodes[n].op)),
        merges=frozenset(n for n in used if nodes[n].op == "Merge"),
        control_flow=control_flow,
        constant_enters=frozenset(n for n in used if nodes[n].op == "Enter" and nodes[n].bool("is_constant", False)),
        n_children={n: len(graph.children[n]) for n in used},
        free_sources=free_sources,
        mappers={n: fn for n in graph.nodes if n not in static and (fn := raw_mapper(nodes[n].op)) is not None},
        islands={island.name: island for island in islands},
        deps=deps,
    )


def _children(graph: Graph, name: str, scheduled: set[str], island_of: Mapping[str, str]) -> list[str]:
    """The scheduled consumers of ``name`` (one per edge), an island standing for its members; none of
    the node's own island (its program runs them)."""
    own = island_of.get(name)
    found = []
    for child in graph.children[name]:
        if child in scheduled:
            target = island_of.get(child, child)
            if target != own or target == child:
                found.append(target)
    return found
