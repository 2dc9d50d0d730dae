"""Islands: the plain nodes of an ``execute_async`` run that come after its dynamic ops, compiled in groups.

The static part of a run (``async_plan``) only covers what no dynamic op leads to. A detector that
preprocesses its input in a ``while`` loop (handtrack: a TF1 ``map`` over the batch) has its whole backbone
after the loop, so every backbone node went through the scheduler: its readiness checks, frame keys and
consumer counts cost about 15 us per node, against about 2 us in a compiled program.

An *island* is a group of such nodes run as one :class:`~ndflow.converter.runtime.program.Program` once all the
tensors it reads from outside exist. Its members are nodes that

- are not themselves dynamic (control flow, NonMaxSuppression, tables, ...) nor TensorArray/TensorList ops,
- run in the root frame (not inside a loop: frame depth 0, counting ``Enter`` as +1 and ``Exit`` as -1),
- and do not depend on a missing input.

Members are grouped by their *boundary ancestors* (the scheduled nodes that are not members: dynamic ops,
control flow, nodes inside loops) and by their *condition*. Grouping by that set cannot deadlock: a
boundary node that an island waits for cannot depend on the island (it would then be an ancestor of
itself), and two islands cannot wait for each other (each one's set would contain the other's). A TF1
``cond`` (a ``Switch`` whose predicate is not a loop's ``LoopCond``) leaves its untaken branch dead: a
node's condition is the (predicate, port) pairs it needs taken, so the members of an island all run or
all stay dead together, as they would node by node; nodes whose condition is not known (a ``Merge``
that is not a cond's two branches) stay scheduled. Graphs with hash tables get no islands (their
tensors are looked up by handle).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.tensor import Tensor
from ..load.plan import HASH_TABLE_OPS, Graph, Subgraph, compile_plan, is_control_flow, is_dynamic
from .program import Program

#: Islands smaller than this stay scheduled node by node (a program's run costs a few node times).
MIN_MEMBERS = 4

#: Off: every node after a dynamic op is scheduled (the reference behaviour the tests compare with).
ENABLED = True


@dataclass
class Island:
    """One group: ``name`` (its key in the schedule), the compiled ``program``, its ``members``, the
    tensors it reads from outside (``feeds``: (node, index) data inputs; ``deps``: every outside edge,
    control ones included, which the schedule waits for), its ``exports`` (members read outside it or
    returned) with their outside edges (``pending_edges``), and ``free_sources``: one entry per outside
    edge into it, as the scheduler's own per-node lists."""

    name: str
    program: Program
    members: frozenset[str]
    feeds: list[tuple[str, int]]
    deps: list[tuple[str, int]]
    exports: list[str]
    pending_edges: dict[str, int] = field(default_factory=dict)
    free_sources: list[str] = field(default_factory=list)


def _fixpoint(graph: Graph, used: set[str], values: dict[str, Any], step: Callable[[str], Any]) -> dict[str, Any]:
    """Fill ``values`` (every used node's starting value) with ``step(name)``, which reads ``values``, in graph
    order until nothing changes: loops' back edges (``NextIteration``) converge in a few passes."""
    order = [n for n in graph.nodes if n in used]
    for _ in range(64):
        changed = False
        for name in order:
            new = step(name)
            if new != values[name]:
                values[name] = new
                changed = True
        if not changed:
            break
    return values


def _frame_depths(graph: Graph, used: set[str]) -> dict[str, int]:
    """Per used node, the loop depth of its outputs (``Enter`` +1, ``Exit`` -1)."""
    nodes, depth = graph.nodes, dict.fromkeys(used, 0)

    def step(name: str) -> int:
        d = max((depth[s] for s, _ in graph.deps[name] if s in used), default=0)
        op = nodes[name].op
        return d + 1 if op == "Enter" else max(d - 1, 0) if op == "Exit" else d

    return _fixpoint(graph, used, depth, step)


Condition = frozenset[tuple[str, int]] | None  # (predicate tensor, port) pairs, all needed


def _merged(conditions: list[Condition]) -> Condition:
    """A ``Merge``'s condition: one input's is enough, so a cond's two branches (the same literals but
    for the two ports of one predicate) merge into what they share; anything else is unknown (None)."""
    if not conditions or any(c is None for c in conditions):
        return None
    if all(c == conditions[0] for c in conditions):
        return conditions[0]
    common = frozenset.intersection(*conditions)  # type: ignore[arg-type]
    rests = [c - common for c in conditions]  # type: ignore[operator]
    if all(len(r) == 1 for r in rests):
        literals = [next(iter(r)) for r in rests]
        if len({s for s, _ in literals}) == 1 and {p for _, p in literals} == {0, 1}:
            return common
    return None


def _conditions(graph: Graph, used: set[str]) -> dict[str, Condition]:
    """Per used node, when it runs: the (predicate, port) pairs of TF1 conds that must be taken (a Switch
    outputs only on its taken port, and a node without all its inputs never runs; a Merge runs on any
    input), or None where that is not known. The Switches of while loops (predicate ``LoopCond``) add
    nothing: their body is inside the loop's frame, and their ``Exit`` runs once the loop ends."""
    nodes = graph.nodes
    cond_switch = {  # Switch -> its predicate tensor: the Switches of one cond (one per input) share it
        n: f"{graph.deps[n][1][0]}:{graph.deps[n][1][1]}"
        for n in used
        if nodes[n].op == "Switch" and len(graph.deps[n]) > 1 and nodes[graph.deps[n][1][0]].op != "LoopCond"
    }
    conditions: dict[str, Condition] = dict.fromkeys(used, frozenset())

    def of(src: str, port: int, control: bool) -> Condition:
        c = conditions[src]
        if c is None or src not in cond_switch:
            return c
        return None if control else c | {(cond_switch[src], port)}

    def step(name: str) -> Condition:
        node = nodes[name]
        if node.op == "Merge":
            return _merged([of(s, i, False) for s, i in node.inputs if s in used])
        data = set(node.inputs)
        found = [of(s, i, (s, i) not in data) for s, i in graph.deps[name] if s in used]
        if any(c is None for c in found):
            return None
        return frozenset().union(*found) if found else frozenset()

    return _fixpoint(graph, used, conditions, step)


def _boundary_ancestors(graph: Graph, used: set[str], boundary: set[str]) -> dict[str, int]:
    """Per used node, its boundary ancestors as a bit set."""
    bit = {n: 1 << i for i, n in enumerate(sorted(boundary))}
    anc = dict.fromkeys(used, 0)

    def step(name: str) -> int:
        value = 0
        for src, _ in graph.deps[name]:
            if src in used:
                value |= anc[src] | bit.get(src, 0)
        return value

    return _fixpoint(graph, used, anc, step)


def find_islands(
    graph: Graph,
    used: set[str],
    scheduled: set[str],
    fed: set[str],
    missing: Iterable[str],
    out_nodes: set[str],
    weights: Mapping[str, Tensor],
) -> list[Island]:
    """The islands among the ``scheduled`` nodes of a run (``fed``: the nodes given as inputs)."""
    if not ENABLED or not scheduled:
        return []
    nodes = graph.nodes
    if any(nodes[n].op in HASH_TABLE_OPS for n in used):
        return []
    given = fed | {n for n in used if n in weights}
    unreachable = set(missing)
    stack = list(unreachable)
    while stack:  # what a missing input leads to never runs
        name = stack.pop()
        for child in graph.children[name]:
            if child in used and child not in unreachable:
                unreachable.add(child)
                stack.append(child)
    depth = _frame_depths(graph, used)
    conditions = _conditions(graph, used)
    members = {
        n
        for n in scheduled
        if n not in given
        and n not in unreachable
        and depth[n] == 0
        and conditions[n] is not None
        and not is_dynamic(nodes[n].op)
        and not nodes[n].op.startswith(("TensorArray", "TensorList"))
    }
    if len(members) < MIN_MEMBERS:
        return []
    boundary = {n for n in scheduled if n not in members and n not in given}
    anc = _boundary_ancestors(graph, used, boundary)
    groups: dict[tuple[int, Condition], list[str]] = {}
    for name in graph.nodes:  # graph order, for stable names
        if name in members:
            groups.setdefault((anc[name], conditions[name]), []).append(name)
    islands = []
    for group in groups.values():
        if len(group) >= MIN_MEMBERS:
            islands.append(_island(graph, f"island:{len(islands)}:{group[0]}", group, used, out_nodes, weights))
    return islands


def _island(
    graph: Graph, name: str, group: list[str], used: set[str], out_nodes: set[str], weights: Mapping[str, Tensor]
) -> Island:
    members = frozenset(group)
    nodes = graph.nodes
    deps: list[tuple[str, int]] = []
    feeds: list[tuple[str, int]] = []
    free_sources: list[str] = []
    for member in group:
        data = set(nodes[member].inputs)
        for src, index in graph.deps[member]:
            if src in members or src in weights:
                continue
            free_sources.append(src)
            if (src, index) not in deps:
                deps.append((src, index))
            if (src, index) in data and (src, index) not in feeds:
                feeds.append((src, index))
    exports = [m for m in group if m in out_nodes or any(c not in members and c in used for c in graph.children[m])]
    pending_edges = {m: sum(1 for c in graph.children[m] if c not in members) for m in exports}
    sources = sorted({s for s, _ in deps})
    used_weights = {s for m in group for s, _ in graph.deps[m] if s in weights}
    plan = compile_plan(graph, sources, exports, Subgraph(members | set(sources) | used_weights, [], [], []))
    program = Program(graph, plan, sources, weights)
    free = [s for s in free_sources if not is_control_flow(nodes[s].op)]
    return Island(name, program, members, feeds, deps, exports, pending_edges, free)
