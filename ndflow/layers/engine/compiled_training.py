"""A layers model's training step recorded once and replayed: forward, loss, penalties and backward as a plan.

``fit`` / ``train_on_batch`` run each batch through the gradient tape: every op checks its arguments, works out
its kernel's attributes and output shape, is written on the tape; the backward pass walks the tape calling each
kernel's gradient function, which does the same for its own ops. On small models this Python work costs as much
as the kernels (an MLP step: ~1 ms of 2.3 ms on one core). Here the first step with a given input signature runs
eagerly while the engine lists what it does (``Engine.record_calls``: every outermost kernel call with its inputs,
attributes and outputs, the tensors made from values, the variables assigned); the list becomes a
:class:`StepPlan` (slots, each call's input slots and attributes, frees at last use) that the later steps replay
with the batch's tensors and the variables' current values: the same kernels with the same attributes in the same
order, so the same numbers, without the tape, the ops or the gradient functions. The optimizer's update stays
eager (one fused kernel per variable, reading the learning rate and its step count every time).

What is replayed must be what the eager step would do. So a plan is refused (the step stays eager, and the
reason is kept: :func:`train_compile_refused`) when the recorded step read a tensor's values (a decision made from
data), drew random numbers (dropout, noise layers: fresh masks every step), or used a tensor made before the step
that is not a variable (a layer's state held as a plain tensor). A tensor made from Python values inside the step
(a loss's constant) is kept as its values. A plan is keyed on the shapes and dtypes of the batch, and dropped when
anything it was recorded from changes: the backend, the flags, compile's loss and metrics, the model's layers and
outputs, a layer's ``trainable``, the trained variables and their ``trainable``, the variable behind any weight,
a layer's losses (regularizers, ``add_loss``) and its regularizers' settings. Variables assigned during the step
(BatchNorm's moving statistics) are assigned again by the replay. The flag ``TRAIN_COMPILE`` set to false, a
gradient tape already open, a profile or debug mode run every step eagerly.

Python values a custom layer or loss bakes into the step (``nf.scalar(self.factor)`` with a factor changed between
steps without changing anything above) are replayed as recorded, as in any traced step (``tf.function``): such a
model sets ``TRAIN_COMPILE`` to false.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...core.dispatch.run_kernel import ASSIGNED, MADE, RANDOM
from ...core.engine import ENGINE
from ...core.flags import env
from ...core.globals import keep
from ...core.replay_attrs import ReplayAttrs
from ...core.tensor import Tensor, Variable

# The flag TRAIN_COMPILE is registered with the core flags (core/flags.py): settable before this module loads.

_ATTR = "_compiled_training"
_MAX_PLANS = 8  # input signatures kept per model (a fit's last, smaller batch is a second one)
_MAX_REFUSALS = 2  # refused recordings of one signature before it stays eager


class NotReplayableError(Exception):
    """Why a recorded step cannot be replayed."""


class StepPlan:
    """A recorded training step: what its slots start with, its calls, and which slots it returns."""

    __slots__ = ("signature", "n_slots", "template", "data_slots", "constants", "steps", "outputs", "grad_names")

    def __init__(self) -> None:
        self.signature: tuple = ()
        self.n_slots = 0
        self.template: list[Any] = []  # the variables at their slots, None elsewhere
        self.data_slots: list[tuple[int, int]] = []  # (slot, index in the step's data)
        self.constants: list[tuple[int, np.ndarray, tuple[int, ...], str]] = []
        # (kernel or None for an assignment, input slots, attrs, output slot(s), slots freed after it)
        self.steps: list[tuple[str | None, tuple[int, ...], Any, Any, tuple[int, ...]]] = []
        self.outputs: list[int] = []
        self.grad_names: list[str] = []

    def run(self, data: Sequence[Tensor | None]) -> list[Tensor]:
        """The plan's outputs (cost, metrics, gradients) for the step's ``data``, made in the caller's scope."""
        vals = list(self.template)
        for slot, k in self.data_slots:
            vals[slot] = data[k]
        made = []
        for slot, values, shape, dtype in self.constants:
            t = ENGINE.make_tensor(values.copy(), shape, dtype)
            vals[slot] = t
            made.append(t)
        run_kernel = ENGINE.run_kernel
        try:
            for kernel, refs, attrs, outs, frees in self.steps:
                if kernel is None:
                    ENGINE.assign_variable(vals[refs[0]], vals[refs[1]])
                else:
                    out = run_kernel(kernel, tuple([vals[r] for r in refs]), attrs)
                    if outs.__class__ is int:
                        vals[outs] = out
                    else:
                        for s, o in zip(outs, out, strict=True):
                            if s < 0:
                                o.dispose()
                            else:
                                vals[s] = o
                for s in frees:
                    vals[s].dispose()
                    vals[s] = None
        except BaseException:
            for i, v in enumerate(vals):  # nothing the failed replay made outlives it
                if v is not None and i not in self._kept_slots() and v.__class__ is Tensor:
                    v.dispose()
            raise
        return [vals[s] for s in self.outputs]

    def _kept_slots(self) -> set[int]:
        return {s for s, _ in self.data_slots} | {i for i, v in enumerate(self.template) if v is not None}


def _key(t: Tensor) -> tuple:
    return (t.data_id, t.shape, t.dtype)


def build_plan(
    calls: list[tuple[Any, Any, Any, Any]], data: Sequence[Tensor | None], outputs: Sequence[Tensor]
) -> StepPlan:
    """The plan of a recorded step (raises :class:`NotReplayableError`): ``calls`` as ``Engine.record_calls`` listed
    them, ``data`` the step's inputs, ``outputs`` what the step returns."""
    plan = StepPlan()
    slot_of: dict[int, int] = {}  # tensor id -> slot
    by_data: dict[tuple, int] = {}  # (data id, shape, dtype) -> slot: the tape's saved copies share their data
    template: list[Any] = []
    first_made: dict[int, int] = {}

    def new_slot(t: Tensor | None) -> int:
        template.append(None)
        s = len(template) - 1
        if t is not None:
            slot_of[t.id] = s
            by_data[_key(t)] = s
        return s

    ids = [t.id for t in data if t is not None]
    if len(set(ids)) != len(ids):
        raise NotReplayableError("the same tensor is given as two of the step's inputs")
    for k, t in enumerate(data):
        if t is not None:
            plan.data_slots.append((new_slot(t), k))

    def ref(t: Tensor, where: str) -> int:
        s = slot_of.get(t.id)
        if s is not None:
            return s
        if isinstance(t, Variable):
            s = new_slot(t)
            template[s] = t
            return s
        s = by_data.get(_key(t))
        if s is not None:
            return s
        raise NotReplayableError(
            f"{where} reads a tensor made before the step that is not a variable ({t.shape} {t.dtype})"
        )

    steps: list[list[Any]] = []
    for kernel, a, b, result in calls:
        if kernel == "":
            raise NotReplayableError("the step reads a tensor's values (a decision made from data)")
        if kernel == RANDOM:
            raise NotReplayableError("the step draws random numbers (dropout, noise): each step needs new ones")
        if kernel == MADE:
            s = new_slot(a)
            first_made[s] = len(steps)
            plan.constants.append((s, np.array(b, copy=True), a.shape, a.dtype))
            continue
        if kernel == ASSIGNED:
            var_slot, value_slot = ref(a, "an assignment"), ref(b, "an assignment")
            for key in [k for k, s in by_data.items() if s == var_slot]:
                del by_data[key]  # a copy of the old value read later is not the variable's new value
            by_data[_key(a)] = value_slot
            steps.append([None, (var_slot, value_slot), None, -1])
            continue
        refs = tuple([ref(t, f"kernel '{kernel}'") for t in a])
        results = result if result.__class__ is list else [result]
        outs = [new_slot(r) for r in results]
        attrs = b if b is None or b.__class__ is ReplayAttrs else ReplayAttrs(b)
        steps.append([kernel, refs, attrs, outs[0] if result.__class__ is not list else tuple(outs)])
    out_refs = [ref(t, "the step's result") for t in outputs]
    plan.outputs = out_refs
    _finish(plan, steps, template, out_refs)
    return plan


def _finish(plan: StepPlan, steps: list[list[Any]], template: list[Any], out_refs: list[int]) -> None:
    """Drop the calls nothing needs, and free each slot after its last use."""
    needed = set(out_refs)
    keep = [False] * len(steps)
    for i in range(len(steps) - 1, -1, -1):
        kernel, refs, _, outs = steps[i]
        produced = (outs,) if outs.__class__ is int else outs
        if kernel is None or any(s in needed for s in produced):
            keep[i] = True
            needed.update(refs)
    pinned = set(out_refs) | {s for s, _ in plan.data_slots} | {i for i, v in enumerate(template) if v is not None}
    kept_steps = [s for s, k in zip(steps, keep, strict=True) if k]
    last: dict[int, int] = {}
    for i, (_, refs, _, _) in enumerate(kept_steps):
        for r in refs:
            last[r] = i
    plan.constants = [c for c in plan.constants if c[0] in needed]
    for s, *_ in plan.constants:  # a constant nobody reads after making it: freed right away
        last.setdefault(s, 0)
    frees: list[list[int]] = [[] for _ in kept_steps]
    for s, i in last.items():
        if s not in pinned:
            frees[i].append(s)
    for i, (kernel, refs, attrs, outs) in enumerate(kept_steps):
        if kernel is not None:
            produced = (outs,) if outs.__class__ is int else outs
            unused = [s for s in produced if s not in last and s not in pinned]
            if outs.__class__ is int:
                frees[i].extend(unused)
            else:
                outs = tuple(-1 if s in unused else s for s in outs)
        plan.steps.append((kernel, refs, attrs, outs, tuple(frees[i])))
    plan.template = template
    plan.n_slots = len(template)


def _layer_state(layer: Any) -> tuple:
    regs = []
    for name in ("kernel_regularizer", "bias_regularizer", "activity_regularizer", "recurrent_regularizer",
                 "depthwise_regularizer", "pointwise_regularizer", "embeddings_regularizer", "beta_regularizer",
                 "gamma_regularizer"):  # fmt: skip
        reg = layer.__dict__.get(name)
        if reg is not None:
            regs.append((name, id(reg), tuple(sorted((k, v) for k, v in vars(reg).items() if _plain(v)))))
    return (id(layer), layer.trainable, tuple([id(fn) for fn in layer.losses]), tuple(regs))


def _plain(v: Any) -> bool:
    return v is None or isinstance(v, int | float | str | bool)


def model_state(model: Any, variables: Sequence[Variable]) -> tuple:
    """Everything a recorded step depends on besides its inputs' shapes (a change drops the plans)."""
    return (
        id(ENGINE.backend),
        env().version,
        id(model.loss_functions),
        id(model.metrics_tensors),
        tuple([id(t) for t in model.outputs]),
        tuple([_layer_state(layer) for layer in model.layers]),
        tuple([(id(v), v.trainable) for v in variables]),
        tuple([id(w.read()) for w in model.weights]),  # a weight given a new variable (not new values)
    )


class CompiledTraining:
    """A model's recorded steps by input signature, and what they were recorded from."""

    def __init__(self) -> None:
        self.state: tuple | None = None
        self.plans: dict[tuple, StepPlan] = {}
        self.refusals: dict[tuple, int] = {}
        self.refused: str | None = None  # the last reason a recording was not replayable

    def reset(self, state: tuple | None) -> None:
        self.state = state
        self.plans.clear()
        self.refusals.clear()


def signature_of(data: Sequence[Tensor | None]) -> tuple:
    return tuple([None if t is None else (t.shape, t.dtype) for t in data])


def compiled_gradients(
    model: Any,
    gradients: Callable[[], tuple[Tensor, dict[str, Tensor]]],
    data: Sequence[Tensor | None],
    variables: Sequence[Variable],
    metrics: list[Tensor],
) -> tuple[Tensor, dict[str, Tensor]]:
    """The step's cost and gradients by variable name (``metrics`` filled with the kept metric values): replayed
    from the model's plan for ``data``'s signature, or from ``gradients()`` run eagerly (recorded into a plan when
    nothing forbids it)."""
    if not env().get_bool("TRAIN_COMPILE") or ENGINE._slow:
        return gradients()
    compiled: CompiledTraining | None = model.__dict__.get(_ATTR)
    if compiled is None:
        compiled = model.__dict__[_ATTR] = CompiledTraining()
    state = model_state(model, variables)
    if compiled.state != state:
        compiled.reset(state)
    sig = signature_of(data)
    plan = compiled.plans.get(sig)
    if plan is not None:
        outs = plan.run(data)
        n_metrics = len(outs) - 1 - len(plan.grad_names)
        metrics.extend(keep(t) for t in outs[1 : 1 + n_metrics])
        return outs[0], dict(zip(plan.grad_names, outs[1 + n_metrics :], strict=True))
    if compiled.refusals.get(sig, 0) >= _MAX_REFUSALS:
        return gradients()
    calls = ENGINE.record_calls()
    try:
        value, grads = gradients()
    finally:
        ENGINE.stop_recording()
    try:
        plan = build_plan(calls, data, [value, *metrics, *grads.values()])
    except NotReplayableError as exc:
        compiled.refusals[sig] = compiled.refusals.get(sig, 0) + 1
        compiled.refused = str(exc)
        return value, grads
    plan.signature = sig
    plan.grad_names = list(grads)
    if len(compiled.plans) >= _MAX_PLANS:
        compiled.plans.pop(next(iter(compiled.plans)))
    compiled.plans[sig] = plan
    compiled.refused = None
    return value, grads


def train_compile_refused(model: Any) -> str | None:
    """Why ``model``'s last recorded training step could not be replayed (None: it could, or none was recorded)."""
    compiled = model.__dict__.get(_ATTR)
    return None if compiled is None else compiled.refused


def train_plans(model: Any) -> int:
    """How many recorded training steps ``model`` holds (one per input signature)."""
    compiled = model.__dict__.get(_ATTR)
    return 0 if compiled is None else len(compiled.plans)


def release_compiled_training(model: Any) -> None:
    """Forget ``model``'s recorded steps (they hold no tensor: only variables, which the model owns)."""
    getattr(model, "__dict__", {}).pop(_ATTR, None)


__all__ = [
    "CompiledTraining", "NotReplayableError", "StepPlan", "build_plan", "compiled_gradients",
    "release_compiled_training", "train_compile_refused", "train_plans",
]  # fmt: skip
