"""Runs a :class:`~ndflow.converter.load.plan.Graph`: ``execute`` follows a precomputed plan, ``execute_async``
schedules nodes as their inputs become ready, with control-flow frames (TF.js's ``GraphExecutor``).

``execute`` computes, once per set of inputs and outputs, the nodes needed in topological order and
frees each intermediate tensor right after its last consumer ran (weights and inputs are never freed);
it refuses graphs with control flow or data-dependent ops, naming them. ``execute_async`` runs any
graph: the nodes that no dynamic op leads to run first as a compiled program (``async_plan``), then the
rest is scheduled as their inputs become ready, with control-flow frames (``scheduler``); everything
left over is freed at the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ... import ops
from ...core.tensor import Tensor
from ..load.graph import parse_input
from ..load.plan import Graph, Plan, compile_plan, execution_subgraph, is_control_flow
from .async_plan import AsyncPlan, build_async_plan
from .constants import forget_constants, register_constants
from .control_flow import ROOT, ExecutionContext, ResourceManager
from .program import Program
from .scheduler import Schedule, TensorMap, free_all, get_tensor

NamedTensors = dict[str, Tensor]


def output_name(name: str) -> tuple[str, int]:
    """``"node:1"`` -> (node, 1)."""
    node, index, _ = parse_input(name)
    return node, index


class GraphExecutor:
    """Executes a graph (or a library function's body) with the model's weights."""

    def __init__(self, graph: Graph, parent: GraphExecutor | None = None) -> None:
        self.graph = graph
        self.parent = parent
        self._weights: NamedTensors = {}
        self._weight_ids: set[int] = set()
        self._resources = ResourceManager()
        self._plans: dict[tuple[tuple[str, ...], tuple[str, ...]], Plan] = {}
        self._programs: dict[int, Program] = {}  # by id of the (cached, never dropped) plan
        self._dynamic: dict[tuple[tuple[str, ...], tuple[str, ...]], bool] = {}
        self._async_plans: dict[tuple[tuple[str, ...], tuple[str, ...]], AsyncPlan] = {}
        self.signature_inputs: dict[str, str] = {}  # signature key -> tensor name
        self.signature_outputs: dict[str, str] = {}
        # The unoptimized graph's executor, for requests the optimized graph cannot serve (see ``route``).
        self.fallback: GraphExecutor | None = None
        self.baked: set[str] = set()  # original nodes whose values were folded into new constants
        self._functions: dict[str, GraphExecutor] = {}
        if parent is None:
            self._functions = {name: GraphExecutor(fn, self) for name, fn in graph.functions.items()}

    # -- state -----------------------------------------------------------------------------------
    @property
    def weights(self) -> NamedTensors:
        """Weights by Const node name (shared with function bodies)."""
        return self.parent.weights if self.parent is not None else self._weights

    @weights.setter
    def weights(self, weights: NamedTensors) -> None:
        """Set the weights (the executor owns them: ``dispose`` frees them)."""
        self._weights = dict(weights)
        self._weight_ids = {t.id for t in weights.values()}
        register_constants(self._weights.values())

    @property
    def weight_ids(self) -> set[int]:
        """Ids of the weight tensors (never freed by a run)."""
        return self.parent.weight_ids if self.parent is not None else self._weight_ids

    @property
    def resources(self) -> ResourceManager:
        """The model's hash tables (shared with the initializer and the function bodies)."""
        return self.parent.resources if self.parent is not None else self._resources

    @resources.setter
    def resources(self, resources: ResourceManager) -> None:
        """Share a resource manager (the initializer uses the model's)."""
        self._resources = resources

    @property
    def functions(self) -> dict[str, GraphExecutor]:
        """Executors of the library functions by name."""
        return self.parent.functions if self.parent is not None else self._functions

    def dispose(self) -> None:
        """Free every weight and captured device graph (and the unoptimized graph's)."""
        for program in self._programs.values():
            program.dispose_graphs()
        forget_constants(self._weights.values())
        for t in self._weights.values():
            t.dispose()
        if self.fallback is not None:
            self.fallback.dispose()

    def route(self, input_names: Sequence[str], outputs: Sequence[str]) -> GraphExecutor:
        """This executor, or the unoptimized graph's when the request names a node the optimized graph lost
        (or changed: another op now answers ``node:1``), or feeds a node whose value was folded away."""
        fallback = self.fallback
        if fallback is None:
            return self
        nodes, original = self.graph.nodes, fallback.graph.nodes
        for name in input_names:
            node = output_name(name)[0]
            if node not in nodes or node in self.baked:
                return fallback
        for name in outputs:
            node, index = output_name(name)
            if node not in nodes or (index and node in original and nodes[node].op != original[node].op):
                return fallback
        return self

    # -- inputs and outputs ----------------------------------------------------------------------
    def map_inputs(self, inputs: Mapping[str, Tensor]) -> NamedTensors:
        """Signature keys -> tensor names; other names as given."""
        return {self.signature_inputs.get(k, k): t for k, t in inputs.items()}

    def map_outputs(self, outputs: Sequence[str]) -> list[str]:
        """Signature keys -> tensor names; other names as given."""
        return [self.signature_outputs.get(o, o) for o in outputs]

    def check_inputs(self, inputs: Mapping[str, Tensor]) -> None:
        """Every key names a node; shapes and dtypes agree with the placeholders' attributes."""
        unknown = [k for k in inputs if output_name(k)[0] not in self.graph.nodes]
        if unknown:
            raise ValueError(f"The dict provided in model.execute(dict) has keys: {unknown} that are not part of graph")
        for name, t in inputs.items():
            if not isinstance(t, Tensor):
                raise TypeError(f"model.execute: input '{name}' must be a Tensor, got {type(t).__name__}")
            node = self.graph.nodes[output_name(name)[0]]
            shape = node.shape("shape")
            if shape is not None and node.has("shape"):
                if len(shape) != t.rank or any(s != -1 and s != d for s, d in zip(shape, t.shape, strict=False)):
                    raise ValueError(
                        f"The shape of dict['{node.name}'] provided in model.execute(dict) must be {shape}, "
                        f"but was {list(t.shape)}"
                    )
            # a hash-table input (DT_RESOURCE) is fed the table's handle: TF.js reads no dtype there, checks nothing
            resource = (node.attr.get("dtype") or {}).get("type") == "DT_RESOURCE"
            dtype = node.dtype("dtype") if node.has("dtype") and not resource else None
            if dtype is not None and t.dtype != dtype:
                raise ValueError(
                    f"The dtype of dict['{node.name}'] provided in model.execute(dict) must be {dtype}, "
                    f"but was {t.dtype}"
                )

    def check_outputs(self, outputs: Sequence[str]) -> None:
        """Every output names a node."""
        for name in outputs:
            if output_name(name)[0] not in self.graph.nodes:
                raise ValueError(f"The output '{name}' is not found in the graph")

    def default_outputs(self) -> list[str]:
        """The graph's outputs as ``node`` / ``node:index`` names."""
        return [f"{n}:{i}" if i else n for n, i in self.graph.outputs]

    # -- execute (precomputed plan) --------------------------------------------------------------
    def plan_for(self, input_names: Sequence[str], outputs: Sequence[str]) -> Plan:
        """The cached plan for these inputs and outputs (RuntimeError when they need execute_async)."""
        in_nodes = tuple(sorted({output_name(n)[0] for n in input_names}))
        out_nodes = tuple(dict.fromkeys(output_name(n)[0] for n in outputs))
        key = (in_nodes, tuple(sorted(out_nodes)))
        plan = self._plans.get(key)
        if plan is not None:
            return plan
        sub = execution_subgraph(self.graph, in_nodes, out_nodes, self.weights)
        if sub.dynamic:
            by_op: dict[str, list[str]] = {}
            for n in sub.dynamic:
                by_op.setdefault(self.graph.nodes[n].op, []).append(n)
            listed = "; ".join(
                f"{op} ({', '.join(repr(n) for n in names[:3])}{', ...' if len(names) > 3 else ''})"
                for op, names in sorted(by_op.items())
            )
            raise RuntimeError(
                f"This execution contains nodes with control flow or dynamic ops: {listed}. Please use "
                f"model.execute_async() instead. Alternatively, to avoid the dynamic ops, specify the inputs "
                f"{sub.sync_inputs}"
            )
        if sub.missing_inputs:
            raise ValueError(
                f"Cannot compute the outputs {list(outputs)} from the provided inputs {list(input_names)}. "
                f"Missing the following inputs: {sub.missing_inputs}"
            )
        plan = compile_plan(self.graph, in_nodes, list(out_nodes), sub)
        self._plans[key] = plan
        return plan

    def program_for(self, input_names: Sequence[str], outputs: Sequence[str]) -> Program:
        """The compiled plan for these inputs and outputs (cached with the plan)."""
        plan = self.plan_for(input_names, outputs)
        program = self._programs.get(id(plan))
        if program is None:
            in_nodes = sorted({output_name(n)[0] for n in input_names})
            program = self._programs[id(plan)] = Program(self.graph, plan, in_nodes, self.weights)
        return program

    def execute(self, inputs: Mapping[str, Tensor], outputs: Sequence[str] | None = None) -> list[Tensor]:
        """Run the graph on ``inputs`` (tensor name -> Tensor); the tensors of ``outputs``, in order."""
        inputs = self.map_inputs(inputs)
        outputs = self.map_outputs(outputs or self.default_outputs())
        target = self.route(list(inputs), outputs)
        if target is not self:
            return target._execute(inputs, outputs)
        return self._execute(inputs, outputs)

    def _execute(self, inputs: Mapping[str, Tensor], outputs: Sequence[str]) -> list[Tensor]:
        self.check_inputs(inputs)
        self.check_outputs(outputs)
        program = self.program_for(list(inputs), outputs)
        ctx = ExecutionContext(self.weights, functions=self.functions, resources=self.resources)
        feeds = {output_name(name): t for name, t in inputs.items()}
        keep_ids = {t.id for t in inputs.values()} | self.weight_ids
        runner = program.graph_runner()  # a static plan may replay as a device graph (CUDA graphs)
        return (runner or program).run(feeds, [output_name(n) for n in outputs], ctx, keep_ids)

    # -- execute_async (dynamic schedule) --------------------------------------------------------
    async def execute_async(self, inputs: Mapping[str, Tensor], outputs: Sequence[str] | None = None) -> list[Tensor]:
        """Run any graph (control flow, dynamic shapes); plain graphs take the ``execute`` plan."""
        mapped = self.map_inputs(inputs)
        names = self.map_outputs(outputs or self.default_outputs())
        target = self.route(list(mapped), names)
        target.check_inputs(mapped)
        target.check_outputs(names)
        if not target._needs_async(list(mapped), names):
            return target._execute(mapped, names)
        return await target._execute_async(mapped, names, False, None, None)

    def needs_async(self, input_names: Sequence[str], outputs: Sequence[str]) -> bool:
        """Whether computing ``outputs`` from these inputs runs control flow or dynamic ops (cached)."""
        return self.route(input_names, outputs)._needs_async(input_names, outputs)

    def _needs_async(self, input_names: Sequence[str], outputs: Sequence[str]) -> bool:
        in_nodes = tuple(sorted({output_name(n)[0] for n in input_names}))
        out_nodes = tuple(sorted({output_name(n)[0] for n in outputs}))
        key = (in_nodes, out_nodes)
        if key not in self._dynamic:
            sub = execution_subgraph(self.graph, in_nodes, out_nodes, self.weights)
            self._dynamic[key] = bool(sub.dynamic)
        return self._dynamic[key]

    async def execute_function_async(
        self, args: Sequence[Tensor], tensor_arrays: dict[int, Any], tensor_lists: dict[int, Any]
    ) -> list[Tensor]:
        """Run a library function's body on positional ``args`` (If/While), sharing arrays and lists."""
        if len(args) != len(self.graph.inputs):
            raise ValueError(f"function '{self.graph.name}' takes {len(self.graph.inputs)} arguments, got {len(args)}")
        mapped = dict(zip(self.graph.inputs, args, strict=True))
        return await self._execute_async(mapped, self.default_outputs(), True, tensor_arrays, tensor_lists)

    def async_plan_for(self, input_names: Sequence[str], outputs: Sequence[str]) -> AsyncPlan:
        """The cached plan of ``execute_async`` for these inputs and outputs (tensor names)."""
        in_nodes = tuple(sorted({output_name(n)[0] for n in input_names}))
        out_nodes = tuple(dict.fromkeys(output_name(n)[0] for n in outputs))
        key = (in_nodes, tuple(sorted(out_nodes)))
        plan = self._async_plans.get(key)
        if plan is None:
            plan = self._async_plans[key] = build_async_plan(self.graph, in_nodes, out_nodes, self.weights)
        return plan

    async def _execute_async(
        self,
        inputs: NamedTensors,
        outputs: list[str],
        is_function: bool,
        tensor_arrays: dict[int, Any] | None,
        tensor_lists: dict[int, Any] | None,
    ) -> list[Tensor]:
        ctx = ExecutionContext(self.weights, tensor_arrays, tensor_lists, self.functions, self.resources)
        tensor_map: TensorMap = {}
        keep_ids = {t.id for t in inputs.values()} | self.weight_ids
        try:
            await self._run_control_flow(inputs, ctx, outputs, tensor_map)
            results = [get_tensor(*output_name(n), tensor_map, ctx) for n in outputs]
        except BaseException:
            free_all(tensor_map, keep_ids)
            if self.parent is None:
                ctx.dispose(keep_ids)
            raise
        dead = [n for n, t in zip(outputs, results, strict=True) if t is None]
        if dead:
            free_all(tensor_map, keep_ids)
            if self.parent is None:
                ctx.dispose(keep_ids)
            raise ValueError(f"The outputs {dead} were not computed (they lie on a branch that did not run)")
        final: list[Tensor] = []
        tables = self.resources.tables
        for t in results:
            # a hash table's handle stands for the table (TF.js returns it as is; a clone would name no table)
            if not is_function and (t.kept or t.id in keep_ids) and t.id not in tables:
                t = ops.clone(t)
            final.append(t)
        keep_ids |= {t.id for t in final}
        free_all(tensor_map, keep_ids)
        if self.parent is None:
            ctx.dispose(keep_ids)
        return final

    async def _run_control_flow(
        self,
        inputs: NamedTensors,
        ctx: ExecutionContext,
        outputs: list[str],
        tensor_map: TensorMap,
    ) -> None:
        """Run the static part of the graph, then schedule the rest, filling ``tensor_map`` (keys: node
        name + frame id)."""
        graph = self.graph
        plan = self.async_plan_for(list(inputs), outputs)
        out_nodes = [output_name(n)[0] for n in outputs]
        tensor_map.update((name, [t]) for name, t in self.weights.items())
        feeds: dict[tuple[str, int], Tensor] = {}
        fed: TensorMap = {}
        for name, t in inputs.items():
            node, index = output_name(name)
            feeds[(node, index)] = t
            entry = fed.setdefault(node, [])
            entry.extend([None] * (index + 1 - len(entry)))
            entry[index] = t
        tensor_map.update(fed)
        to_keep = {t.id for ts in tensor_map.values() for t in ts if t is not None}
        schedule = Schedule(graph, plan, ctx, tensor_map, to_keep, out_nodes)
        schedule.take_exports(plan.run_static(feeds, ctx, to_keep))
        await schedule.run()
        ctx.frames = ROOT
        missing = [
            n for n in out_nodes if not is_control_flow(graph.nodes[n].op) and get_tensor(n, 0, tensor_map, ctx) is None
        ]
        if missing:
            sub = plan.sub
            hint = ""
            if sub.dynamic:
                hint = (
                    " Alternatively, to avoid the dynamic ops, use model.execute() and specify the inputs "
                    f"{sub.sync_inputs}"
                )
            raise ValueError(
                f"Cannot compute the outputs {missing} from the provided inputs {list(inputs)}. Consider providing "
                f"the following inputs: {sub.missing_inputs}.{hint}"
            )
