"""The structure of a graph model and its execution plans.

:func:`build_graph` turns ``modelTopology`` (a GraphDef as JSON) into a :class:`Graph`: the nodes,
their edges (data inputs and control dependencies, as TF.js's ``inputNames``), the consumers of each
node, the placeholders, the ``Const`` nodes (weights), the nodes without inputs (init nodes), the
model's inputs and outputs (from the ``signature`` when there is one, else the placeholders and the
sink nodes) and the functions of ``library.function`` (bodies of ``If``/``While``).
:func:`validate` checks a graph at load: inputs that name no node, cycles outside control-flow loops,
``Const`` nodes without a weight, op types without a mapper (one error for all of them). Library
functions that no node calls are only checked for inputs that name no node (TF.js never runs them);
the ``modelInitializer`` graph is checked only where its run goes (:func:`validation_scope`).
:func:`compile_plan` computes, once per set of inputs and outputs, the nodes an execution needs in
topological order and, after each step, the nodes whose tensors are no longer needed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .graph import Node, parse_input
from .registry import get_mapper, needs_async

# TF.js's sets (model_analysis.ts): graphs with these ops need execute_async.
CONTROL_FLOW_OPS = frozenset(
    {"Switch", "Merge", "Enter", "Exit", "NextIteration", "StatelessIf", "StatelessWhile", "If", "While"}
)
DYNAMIC_SHAPE_OPS = frozenset(
    {"NonMaxSuppressionV2", "NonMaxSuppressionV3", "NonMaxSuppressionV4", "NonMaxSuppressionV5", "Where", "ListDiff"}
)
HASH_TABLE_OPS = frozenset(
    {
        "HashTable", "HashTableV2", "LookupTableImport", "LookupTableImportV2", "LookupTableFind",
        "LookupTableFindV2", "LookupTableSize", "LookupTableSizeV2", "InitializeTable", "InitializeTableV2",
    }
)  # fmt: skip

# Output argument names of multi-output ops, for inputs written ``node:arg_name:index`` (function bodies).
OUTPUT_ARGS: dict[str, tuple[str, ...]] = {
    "StringSplit": ("indices", "values", "shape"),
    "StringNGrams": ("ngrams", "ngrams_splits"),
    "TopKV2": ("values", "indices"),
    "Unique": ("y", "idx"),
    "UniqueV2": ("y", "idx"),
    "ListDiff": ("out", "idx"),
    "Switch": ("output_false", "output_true"),
    "Merge": ("output", "value_index"),
    "NonMaxSuppressionV4": ("selected_indices", "valid_outputs"),
    "NonMaxSuppressionV5": ("selected_indices", "selected_scores", "valid_outputs"),
    "TensorArrayV3": ("handle", "flow"),
    "FusedBatchNorm": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2"),
    "FusedBatchNormV3": ("y", "batch_mean", "batch_variance", "reserve_space_1", "reserve_space_2", "reserve_space_3"),
    "SparseFillEmptyRows": ("output_indices", "output_values", "empty_row_indicator", "reverse_index_map"),
    "SparseReshape": ("output_indices", "output_shape"),
    "RaggedTensorToTensor": ("result",),
    "RaggedGather": ("output_nested_splits", "output_dense_values"),
    "RaggedRange": ("rt_nested_splits", "rt_dense_values"),
}


def is_control_flow(op: str) -> bool:
    """Ops whose tensors the executor never frees early (their lifetime depends on the loop)."""
    return op in CONTROL_FLOW_OPS


def is_dynamic(op: str) -> bool:
    """Ops that make an execution need ``execute_async`` (control flow, data-dependent shapes, tables)."""
    return op in CONTROL_FLOW_OPS or op in DYNAMIC_SHAPE_OPS or op in HASH_TABLE_OPS or needs_async(op)


@dataclass
class Graph:
    """A graph model's graph, or the body of one of its functions."""

    name: str
    nodes: dict[str, Node]
    deps: dict[str, list[tuple[str, int]]]  # data inputs, then control dependencies (output 0)
    children: dict[str, list[str]]  # consumers, one entry per edge
    placeholders: list[str] = field(default_factory=list)
    weights: list[str] = field(default_factory=list)  # Const nodes
    init_nodes: list[str] = field(default_factory=list)  # other nodes without inputs (NoOp, HashTable, ...)
    inputs: list[str] = field(default_factory=list)
    outputs: list[tuple[str, int]] = field(default_factory=list)
    input_keys: dict[str, str] = field(default_factory=dict)  # node name -> signature key
    output_keys: dict[tuple[str, int], str] = field(default_factory=dict)
    input_dtypes: dict[str, str] = field(default_factory=dict)  # function arguments' dtypes
    functions: dict[str, Graph] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # "node 'a' (Add) has input 'b', which ..." problems

    def walk(self) -> Iterable[Graph]:
        """This graph and every function graph under it."""
        yield self
        if not self.name:  # function graphs share the model's function table
            yield from self.functions.values()


def _split_ref(ref: str) -> tuple[str, str | None, int]:
    """``"a"`` -> (a, None, 0); ``"a:1"`` -> (a, None, 1); ``"a:out:2"`` -> (a, "out", 2); ``^`` dropped."""
    ref = ref[1:] if ref.startswith("^") else ref
    parts = ref.split(":")
    if len(parts) == 3:
        return parts[0], parts[1], int(parts[2]) if parts[2].isdigit() else 0
    name, index, _ = parse_input(ref)
    return name, None, index


def _resolve_index(nodes: Mapping[str, Node], name: str, arg: str | None, index: int) -> int:
    """The flat output index of ``name:arg:index`` (the arg's position among the op's named outputs)."""
    if arg is None or name not in nodes:
        return index
    args = OUTPUT_ARGS.get(nodes[name].op)
    if args is not None and arg in args:
        return args.index(arg) + index
    return index


def _link(graph: Graph, raw_inputs: Mapping[str, list[str]], where: str) -> None:
    """Fill ``deps``/``children`` from each node's raw input strings; note inputs that name no node."""
    for name, node in graph.nodes.items():
        deps: list[tuple[str, int]] = []
        data: list[tuple[str, int]] = []
        for ref in raw_inputs.get(name, []):
            src, arg, index = _split_ref(ref)
            if src not in graph.nodes:
                graph.missing.append(f"node '{name}' ({node.op}) has input '{ref}', which is not a node of {where}")
                continue
            index = _resolve_index(graph.nodes, src, arg, index)
            deps.append((src, 0 if ref.startswith("^") else index))
            if not ref.startswith("^"):
                data.append((src, index))
            graph.children[src].append(name)
        node.inputs = data
        graph.deps[name] = deps


def _nodes_of(node_defs: Iterable[Any], where: str) -> tuple[dict[str, Node], dict[str, list[str]]]:
    nodes: dict[str, Node] = {}
    raw: dict[str, list[str]] = {}
    for i, d in enumerate(node_defs):
        if not isinstance(d, Mapping):
            raise ValueError(f"graph model: {where} node {i} must be an object, got {type(d).__name__}")
        node = Node.from_json(d)
        if node.name in nodes:
            raise ValueError(f"graph model: {where} has two nodes named '{node.name}'")
        nodes[node.name] = node
        raw[node.name] = [str(r) for r in d.get("input", []) or []]
    return nodes, raw


def _signature_map(entries: Any) -> dict[str, str]:
    """Signature entries ``{key: {"name": "node:0", ...}}`` -> ``{tensor name: key}`` (TF.js order)."""
    out: dict[str, str] = {}
    if entries is not None and not isinstance(entries, Mapping):
        raise ValueError(f"graph model: signature inputs/outputs must be objects, got {type(entries).__name__}")
    for key, info in (entries or {}).items():
        if isinstance(info, Mapping) and isinstance(info.get("name"), str):
            out[info["name"]] = key
    return out


def build_graph(topology: Mapping[str, Any], signature: Mapping[str, Any] | None = None) -> Graph:
    """The :class:`Graph` of a ``modelTopology`` (GraphDef JSON) with the model's ``signature``."""
    if not isinstance(topology, Mapping):
        raise ValueError(f"graph model: modelTopology must be a GraphDef object, got {type(topology).__name__}")
    nodes, raw = _nodes_of(topology.get("node") or [], "the graph")
    graph = Graph("", nodes, {}, {n: [] for n in nodes})
    for name, node in nodes.items():
        if node.op.startswith("Placeholder"):
            graph.placeholders.append(name)
        elif node.op == "Const":
            graph.weights.append(name)
        elif not raw[name]:
            graph.init_nodes.append(name)
    _link(graph, raw, "the graph")
    if signature is not None and not isinstance(signature, Mapping):
        raise ValueError(f"graph model: signature must be an object, got {type(signature).__name__}")
    sig_inputs = _signature_map((signature or {}).get("inputs"))
    sig_outputs = _signature_map((signature or {}).get("outputs"))
    if sig_outputs:
        for tensor_name, key in sig_outputs.items():
            name, _, index = _split_ref(tensor_name)
            if name in nodes:
                graph.outputs.append((name, index))
                graph.output_keys[(name, index)] = key
    else:
        graph.outputs = [(n, 0) for n in nodes if not graph.children[n]]
    if sig_inputs:
        for tensor_name, key in sig_inputs.items():
            name = _split_ref(tensor_name)[0]
            if name in nodes:
                graph.inputs.append(name)
                graph.input_keys[name] = key
    else:
        graph.inputs = list(graph.placeholders)
    library = topology.get("library") or {}
    for fdef in library.get("function") or []:
        fn = build_function(fdef)
        graph.functions[fn.name] = fn
    for fn in list(graph.functions.values()):
        fn.functions = graph.functions  # bodies may call each other (nested If/While)
    return graph


def build_function(fdef: Mapping[str, Any]) -> Graph:
    """The :class:`Graph` of one ``library.function`` entry (a FunctionDef as JSON)."""
    sig = fdef.get("signature") or {}
    fname = sig.get("name")
    if not isinstance(fname, str):
        raise ValueError(f"graph model: a library function has no signature name (keys: {sorted(fdef)})")
    where = f"function '{fname}'"
    nodes, raw = _nodes_of(fdef.get("nodeDef") or [], where)
    graph = Graph(fname, nodes, {}, {})
    for arg in sig.get("inputArg") or []:
        arg_name = arg["name"]
        attr = {"dtype": {"type": arg["type"]}} if "type" in arg else {}
        nodes[arg_name] = Node(arg_name, "Placeholder", attr=attr)
        raw[arg_name] = []
        graph.inputs.append(arg_name)
        graph.placeholders.append(arg_name)
    graph.children = {n: [] for n in nodes}
    for name, node in nodes.items():
        if node.op == "Const":
            graph.weights.append(name)
        elif not raw[name] and node.op != "Placeholder":
            graph.init_nodes.append(name)
    _link(graph, raw, where)
    ret = fdef.get("ret") or {}
    for arg in sig.get("outputArg") or []:
        ref = ret.get(arg["name"])
        if ref is None:
            graph.missing.append(f"{where} has no return value for its output '{arg['name']}'")
            continue
        src, out_arg, index = _split_ref(ref)
        if src not in nodes:
            graph.missing.append(f"{where} returns '{ref}', which is not a node of {where}")
            continue
        graph.outputs.append((src, _resolve_index(nodes, src, out_arg, index)))
    return graph


# -- validation ------------------------------------------------------------------------------------


def find_cycle(graph: Graph, within: set[str] | None = None) -> list[str] | None:
    """A cycle of the graph (of its nodes ``within``) that does not pass through a ``NextIteration`` node
    (a loop's back edge)."""
    indeg = {n: 0 for n in graph.nodes if within is None or n in within}
    for name in indeg:
        for src, _ in graph.deps[name]:
            if src in indeg and graph.nodes[src].op != "NextIteration":
                indeg[name] += 1
    ready = [n for n, d in indeg.items() if d == 0]
    while ready:
        name = ready.pop()
        if graph.nodes[name].op == "NextIteration":
            continue
        for child in graph.children[name]:
            if child not in indeg:
                continue
            indeg[child] -= 1
            if indeg[child] == 0:
                ready.append(child)
    left = {n for n, d in indeg.items() if d > 0}
    if not left:
        return None
    # Walk backwards through remaining inputs until a node repeats: that is a cycle.
    start = next(n for n in graph.nodes if n in left)
    path, seen = [start], {start: 0}
    while True:
        prev = next(src for src, _ in graph.deps[path[-1]] if src in left and graph.nodes[src].op != "NextIteration")
        if prev in seen:
            cycle = path[seen[prev] :][::-1]
            order = {n: i for i, n in enumerate(graph.nodes)}
            first = min(range(len(cycle)), key=lambda k: order[cycle[k]])
            cycle = cycle[first:] + cycle[:first]  # start at the node that comes first in the graph
            return [*cycle, cycle[0]]
        seen[prev] = len(path)
        path.append(prev)


def called_functions(node: Node) -> list[str]:
    """Names of the library functions ``node`` calls: its ``func`` attributes (``If``'s branches, ``While``'s
    cond and body, ``PartitionedCall``'s f) and lists of them (``Case``'s branches)."""
    names = []
    for value in node.attr.values():
        if not isinstance(value, Mapping):
            continue
        refs = [value.get("func")]
        listed = value.get("list")
        if isinstance(listed, Mapping):
            refs += list(listed.get("func") or [])
        names += [ref["name"] for ref in refs if isinstance(ref, Mapping) and isinstance(ref.get("name"), str)]
    return names


def validation_scope(graph: Graph, outputs: Iterable[str] | None = None) -> tuple[set[str], list[Graph]]:
    """What running ``graph`` may execute: its nodes (all, or, given ``outputs``, those the outputs need
    and the init nodes, which the executor starts whether used or not, as TF.js's) and the library
    functions these call, directly or through other functions (a called function counts whole)."""
    if outputs is None:
        nodes = set(graph.nodes)
    else:
        frontier = [n for n in dict.fromkeys(_split_ref(o)[0] for o in outputs) if n in graph.nodes]
        frontier += [n for n in graph.init_nodes if n not in frontier]
        nodes = set(frontier)
        while frontier:
            for src, _ in graph.deps[frontier.pop()]:
                if src not in nodes:
                    nodes.add(src)
                    frontier.append(src)
    called: set[str] = set()
    pending = [f for n in nodes for f in called_functions(graph.nodes[n])]
    while pending:
        name = pending.pop()
        fn = graph.functions.get(name)
        if fn is not None and name not in called:
            called.add(name)
            pending += [f for node in fn.nodes.values() for f in called_functions(node)]
    return nodes, [fn for name, fn in graph.functions.items() if name in called]


def unsupported_ops(graph: Graph, scope: tuple[set[str], list[Graph]] | None = None) -> dict[str, list[str]]:
    """Op types without a mapper -> the nodes that use them (in ``scope``: the graph and the functions
    it calls, by default)."""
    in_scope, functions = scope if scope is not None else validation_scope(graph)
    out: dict[str, list[str]] = {}
    for g in [graph, *functions]:
        for name, node in g.nodes.items():
            if get_mapper(node.op) is None and (g.name or name in in_scope):
                out.setdefault(node.op, []).append(name if not g.name else f"{g.name}/{name}")
    return out


def _short(names: list[str], limit: int = 8) -> str:
    shown = ", ".join(f"'{n}'" for n in names[:limit])
    return shown + (f" and {len(names) - limit} more" if len(names) > limit else "")


def validate(
    graph: Graph, weight_names: Iterable[str], source: str = "graph model", outputs: Iterable[str] | None = None
) -> None:
    """Raise a ValueError for a malformed graph, or one (NotImplementedError) listing every unsupported op.

    Inputs that name no node are errors anywhere (TF.js cannot load such a graph either); cycles, Const
    nodes without a weight and unsupported ops only in what a run may execute (:func:`validation_scope`
    of ``outputs``: every node of the graph when None, and the functions called)."""
    problems = [p for g in graph.walk() for p in g.missing]
    if problems:
        raise ValueError(f"{source}: {len(problems)} missing input(s): " + "; ".join(problems[:20]))
    scope = validation_scope(graph, outputs)
    in_scope, functions = scope
    for g in [graph, *functions]:
        cycle = find_cycle(g, None if g.name else in_scope)
        if cycle is not None:
            where = "the graph" if not g.name else f"function '{g.name}'"
            raise ValueError(
                f"{source}: {where} has a cycle outside control-flow loops (a loop goes back through "
                f"NextIteration): {' -> '.join(cycle)}"
            )
    have = set(weight_names)
    missing = [n for n in graph.weights if n in in_scope and n not in have]
    for g in functions:  # (the converter names a function's Consts "function/name" already)
        missing += [n if n.startswith(f"{g.name}/") else f"{g.name}/{n}" for n in g.weights if n not in have]
    if missing:
        raise ValueError(
            f"{source}: {len(missing)} Const node(s) have no weight in the weights manifest: {_short(missing)}"
        )
    bad = unsupported_ops(graph, scope)
    if bad:
        lines = [f"  {op}: {_short(nodes)}" for op, nodes in sorted(bad.items())]
        raise NotImplementedError(
            f"{source}: {len(bad)} op type(s) are not supported by ndflow's converter:\n"
            + "\n".join(lines)
            + "\n(a custom op runs once registered with nf.register_op(op_name, fn) before loading)"
        )


# -- plans -----------------------------------------------------------------------------------------


@dataclass
class Subgraph:
    """What an execution touches: the used nodes, inputs it lacks, and its dynamic nodes (need async)."""

    used: set[str]
    missing_inputs: list[str]
    dynamic: list[str]
    sync_inputs: list[str]


def execution_subgraph(
    graph: Graph, input_names: Iterable[str], outputs: Iterable[str], weight_names: Iterable[str]
) -> Subgraph:
    """Nodes needed to compute ``outputs`` from the given inputs (backwards from the outputs, as TF.js)."""
    inputs = set(input_names)
    weights = set(weight_names)
    init = set(graph.init_nodes)
    used: set[str] = set()
    missing: list[str] = []
    dynamic: list[str] = []
    sync_inputs: list[str] = []
    frontier = list(dict.fromkeys(outputs))
    seen = set(frontier)
    while frontier:
        name = frontier.pop()
        node = graph.nodes[name]
        if is_dynamic(node.op):
            if not dynamic:
                sync_inputs = [c for c in graph.children[name] if c in used]
            dynamic.append(name)
        used.add(name)
        if name in weights or name in inputs or name in init:
            continue
        deps = graph.deps[name]
        if not deps:
            missing.append(name)
            continue
        for src, _ in deps:
            if src not in seen:
                seen.add(src)
                frontier.append(src)
    return Subgraph(used, missing, dynamic, sync_inputs)


@dataclass
class Plan:
    """Nodes in execution order, and after each step the nodes whose tensors can be freed."""

    order: list[Node]
    free_after: list[list[str]]


def compile_plan(graph: Graph, input_names: Iterable[str], outputs: list[str], sub: Subgraph) -> Plan:
    """Topological order of the used nodes (depth first, so branches finish early) and free lists."""
    inputs = set(input_names)
    used = sub.used
    indeg: dict[str, int] = {}
    for name in graph.nodes:
        if name not in used:
            continue
        deps = [] if name in inputs else [s for s, _ in graph.deps[name] if s in used]
        indeg[name] = len(deps)
    stack = [n for n in reversed(list(indeg)) if indeg[n] == 0]
    order: list[str] = []
    while stack:
        name = stack.pop()
        order.append(name)
        for child in reversed(graph.children[name]):
            if child in indeg and child not in inputs:
                indeg[child] -= 1
                if indeg[child] == 0:
                    stack.append(child)
    if len(order) != len(indeg):
        stuck = [n for n in indeg if n not in set(order)]
        raise ValueError(f"graph model: cannot order the nodes {_short(stuck)}: they depend on each other")
    position = {n: i for i, n in enumerate(order)}
    keep = set(outputs) | inputs | set(graph.weights)
    free_after: list[list[str]] = [[] for _ in order]
    for i, name in enumerate(order):
        if name in keep or is_control_flow(graph.nodes[name].op):
            continue
        last = max((position[c] for c in graph.children[name] if c in position), default=i)
        free_after[max(last, i)].append(name)
    return Plan([graph.nodes[n] for n in order], free_after)
