"""A mutable copy of a graph that the load-time optimizations edit (``constant_fold``, ``fuse``, ...), and its result.

:class:`Rewriter` copies the nodes of a :class:`~ndflow.converter.load.plan.Graph` (the original stays
intact: ``GraphModel`` keeps it to serve requests the optimized graph cannot), keeps every node's
consumers up to date while passes replace, add and remove nodes, and records:

- ``protected``: the graph's outputs, which keep their names and meaning;
- ``baked``: original nodes whose values were read into a new constant (feeding one of them a value at
  run time would not reach the optimized graph, so such runs take the original graph);
- ``new_weights``: tensors the passes made (folded constants, rewritten filters and biases).

:meth:`Rewriter.to_graph` builds the optimized :class:`Graph` (Const nodes nothing uses are dropped).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from ...core.tensor import Tensor
from ..load.graph import Node
from ..load.plan import Graph

# ndflow dtypes -> TF DataType names for the Const nodes the passes add.
TF_TYPE = {"float32": "DT_FLOAT", "int32": "DT_INT32", "bool": "DT_BOOL", "string": "DT_STRING",
           "complex64": "DT_COMPLEX64"}  # fmt: skip


@dataclass
class Stats:
    """What the optimizations did: node counts before/after and each rewrite's count."""

    nodes_before: int = 0
    nodes_after: int = 0
    counts: dict[str, int] = field(default_factory=dict)

    def add(self, what: str, n: int = 1) -> None:
        """Count ``n`` more rewrites of kind ``what``."""
        self.counts[what] = self.counts.get(what, 0) + n


class Rewriter:
    """Nodes (copies), their consumers, the weights and what the passes changed."""

    def __init__(self, graph: Graph, weights: Mapping[str, Tensor]) -> None:
        self.graph = graph
        self.nodes: dict[str, Node] = {
            name: Node(n.name, n.op, list(n.inputs), list(n.controls), dict(n.attr), n.device)
            for name, n in graph.nodes.items()
        }
        self.weights: dict[str, Tensor] = dict(weights)
        self.new_weights: dict[str, Tensor] = {}
        self.protected: set[str] = {name for name, _ in graph.outputs} | set(graph.inputs) | set(graph.placeholders)
        self.baked: set[str] = set()
        self.stats = Stats(nodes_before=len(graph.nodes))
        self.consumers: dict[str, list[str]] = {name: [] for name in self.nodes}
        for name, node in self.nodes.items():
            for src in self._sources(node):
                self.consumers[src].append(name)

    # -- queries ---------------------------------------------------------------------------------
    @staticmethod
    def _sources(node: Node) -> list[str]:
        return [src for src, _ in node.inputs] + list(node.controls)

    def is_const(self, name: str) -> bool:
        """Whether ``name`` is a Const node with a weight."""
        node = self.nodes.get(name)
        return node is not None and node.op == "Const" and name in self.weights

    def value(self, name: str) -> Tensor:
        """A Const node's tensor (recorded as baked into whatever the caller makes of it)."""
        self.baked.add(name)
        return self.weights[name]

    def only_consumer(self, name: str) -> str | None:
        """The single node that uses ``name`` (through one data edge, no control edge), else None;
        None too for protected nodes (outputs keep their value)."""
        if name in self.protected:
            return None
        users = self.consumers.get(name, [])
        if len(users) != 1:
            return None
        user = self.nodes[users[0]]
        if name in user.controls or sum(1 for src, _ in user.inputs if src == name) != 1:
            return None
        if any(src == name and index != 0 for src, index in user.inputs):
            return None
        return users[0]

    def topological(self) -> list[str]:
        """Node names, producers before consumers (cycles through loops: remaining nodes at the end)."""
        indeg = {name: len(self._sources(node)) for name, node in self.nodes.items()}
        ready = [name for name, d in indeg.items() if d == 0]
        order: list[str] = []
        while ready:
            name = ready.pop()
            order.append(name)
            for user in self.consumers[name]:
                indeg[user] -= 1
                if indeg[user] == 0:
                    ready.append(user)
        seen = set(order)
        return order + [n for n in self.nodes if n not in seen]

    # -- edits -----------------------------------------------------------------------------------
    def unique_name(self, base: str) -> str:
        """``base``, or ``base_1``, ``base_2``... whichever no node or weight uses."""
        name, k = base, 0
        while name in self.nodes or name in self.weights:
            k += 1
            name = f"{base}_{k}"
        return name

    def add_const(self, base: str, value: Tensor) -> str:
        """A new Const node holding ``value`` (owned by the optimized graph); its name."""
        name = self.unique_name(base)
        self.nodes[name] = Node(name, "Const", attr={"dtype": {"type": TF_TYPE.get(value.dtype, "DT_FLOAT")}})
        self.consumers[name] = []
        self.weights[name] = value
        self.new_weights[name] = value
        return name

    def make_const(self, name: str, value: Tensor) -> None:
        """Turn node ``name`` into a Const holding ``value`` (its inputs dropped)."""
        self.set_inputs(name, [], [])
        node = self.nodes[name]
        self.nodes[name] = Node(name, "Const", attr={"dtype": {"type": TF_TYPE.get(value.dtype, "DT_FLOAT")}})
        self.nodes[name].device = node.device
        self.weights[name] = value
        self.new_weights[name] = value

    def set_inputs(self, name: str, inputs: list[tuple[str, int]], controls: Iterable[str]) -> None:
        """Replace a node's data inputs and control dependencies."""
        node = self.nodes[name]
        for src in self._sources(node):
            self.consumers[src].remove(name)
        node.inputs = list(inputs)
        node.controls = list(dict.fromkeys(controls))
        for src in self._sources(node):
            self.consumers[src].append(name)

    def replace(self, name: str, node: Node) -> None:
        """Put ``node`` (same name) in place of node ``name``, with ``node``'s inputs."""
        inputs, controls = node.inputs, node.controls
        self.set_inputs(name, [], [])
        node.inputs, node.controls = [], []
        self.nodes[name] = node
        self.set_inputs(name, inputs, controls)

    def remove(self, name: str) -> None:
        """Drop a node nothing uses any more."""
        if self.consumers.get(name):
            raise AssertionError(f"graph optimizer: node '{name}' still has consumers {self.consumers[name]}")
        self.set_inputs(name, [], [])
        del self.nodes[name]
        del self.consumers[name]

    def nodes_of(self, op: str) -> Iterator[Node]:
        """The nodes of ``op`` that are not protected, producers first (those a rewrite removed meanwhile
        are skipped)."""
        for name in self.topological():
            node = self.nodes.get(name)
            if node is not None and node.op == op and name not in self.protected:
                yield node

    def fuse_chain(self, members: list[str], op: str, inputs: list[tuple[str, int]], attr: dict | None = None) -> bool:
        """Replace a chain of nodes (``members``, its last one the chain's output) by one ``op`` node of that
        last name reading ``inputs``; False, with nothing changed, where an inner member is protected."""
        if any(m in self.protected for m in members[:-1]):
            return False
        last = self.nodes[members[-1]]
        self.replace(last.name, Node(last.name, op, inputs, [], attr or {}, last.device))
        for member in reversed(members[:-1]):
            self.remove(member)
        return True

    def redirect(self, old: str, new: tuple[str, int]) -> None:
        """Make every consumer of ``old:0`` read ``new`` instead (control edges go to ``new``'s node)."""
        for user in list(dict.fromkeys(self.consumers[old])):
            node = self.nodes[user]
            inputs = [new if src == old and index == 0 else (src, index) for src, index in node.inputs]
            controls = [new[0] if c == old else c for c in node.controls]
            self.set_inputs(user, inputs, controls)

    # -- result ----------------------------------------------------------------------------------
    def prune_consts(self) -> None:
        """Drop Const nodes that nothing uses (and that are not outputs)."""
        for name in [n for n, node in self.nodes.items() if node.op == "Const"]:
            if not self.consumers[name] and name not in self.protected:
                self.remove(name)

    def to_graph(self) -> Graph:
        """The optimized :class:`Graph` (inputs, outputs, signature keys and functions as the original)."""
        self.prune_consts()
        g = self.graph
        graph = Graph(
            g.name,
            self.nodes,
            {},
            {name: [] for name in self.nodes},
            inputs=list(g.inputs),
            outputs=list(g.outputs),
            input_keys=dict(g.input_keys),
            output_keys=dict(g.output_keys),
            input_dtypes=dict(g.input_dtypes),
            functions=g.functions,
        )
        for name, node in self.nodes.items():
            deps = list(node.inputs) + [(c, 0) for c in node.controls]
            graph.deps[name] = deps
            for src, _ in deps:
                graph.children[src].append(name)
            if node.op.startswith("Placeholder") and name in g.placeholders:
                graph.placeholders.append(name)
            elif node.op == "Const":
                graph.weights.append(name)
            elif not deps:
                graph.init_nodes.append(name)
        self.stats.nodes_after = len(self.nodes)
        return graph


def used_outputs(rw: Rewriter, name: str) -> set[int]:
    """The output indices of node ``name`` that some node reads (0 for control edges)."""
    out: set[int] = set()
    for user in rw.consumers.get(name, []):
        node = rw.nodes[user]
        out.update(index for src, index in node.inputs if src == name)
        if name in node.controls:
            out.add(0)
    return out


def attr_copy(attr: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of a node's attributes to edit."""
    return {k: v for k, v in attr.items()}
