"""Replay: a compiled program's node that ran as one kernel call repeats that call, mapper and op skipped.

Most nodes of a graph model are one op making one kernel call on the node's own inputs (Conv2D, Add,
Relu, Concat, MaxPool, ...). Their mapper and op work out the same kernel attributes on every run, from the
node's attributes and the shapes and dtypes of its inputs: 5-10 us per node, next to kernels that take
10-50 us on a small model. A program step's first run on a given input signature lists the kernel calls and
value reads its mapper makes (``Engine.record_calls``). When there was exactly one kernel call, on inputs
that are all among the node's own, returning the node's outputs, and every value read was a weight's,
the call ``(kernel, input positions, attrs)`` is kept; later runs with the same shapes and dtypes make it
directly. Anything else (several calls, a read of a computed tensor, a tensor made outside a kernel, a
new signature, a tape, ``profile()``, debug mode) takes the mapper as before.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ...core.dispatch.run_kernel import EVENTS
from ...core.engine import ENGINE
from ...core.replay_attrs import ReplayAttrs
from ...core.tensor import Tensor
from ..load.graph import Node
from ..load.plan import HASH_TABLE_OPS, is_dynamic

# (signature, kernel or None when the node does not qualify, input positions, attrs, check, kernel refs):
# ``check`` lists (slot, output index, shape, dtype) of the step's inputs that are not constants, the part of
# the signature a later run compares (None: one of them was missing, so the step is recorded on every run);
# ``kernel refs`` are the (slot, output index) of the kernel's inputs, in the kernel's order.
Call = tuple[tuple, str | None, tuple[int, ...], Any, "tuple[tuple[int, int, Any, Any], ...] | None", tuple]

_STATEFUL = ("TensorArray", "TensorList", "Random", "Multinomial", "Variable", "Assign")


def recordable(op: str) -> bool:
    """Whether a node of ``op`` may be replayed: not control flow, dynamic, a table, random or stateful."""
    return not (is_dynamic(op) or op in HASH_TABLE_OPS or any(part in op for part in _STATEFUL))


def signature(args: Sequence[Any]) -> tuple:
    """The shapes and dtypes of a step's inputs (None for a missing one)."""
    return tuple([(a.shape, a.dtype) if a.__class__ is Tensor else None for a in args])


def variable_check(
    args: Sequence[Any], constants: Sequence[bool], refs: Sequence[tuple[int, int]]
) -> tuple[tuple[int, int, Any, Any], ...] | None:
    """``(slot, output index, shape, dtype)`` of each input (at ``refs``) that is not a constant (a constant
    keeps its tensor from run to run, so its shape too); None where an input that is not a constant is missing
    (the step then takes its mapper on every run)."""
    check = []
    for i, a in enumerate(args):
        if i < len(constants) and constants[i]:
            continue
        if a.__class__ is not Tensor:
            return None
        check.append((*refs[i], a.shape, a.dtype))
    return tuple(check)


def record(
    fn: Callable[..., Any],
    node: Node,
    args: list[Any],
    ctx: Any,
    constants: Sequence[bool],
    refs: Sequence[tuple[int, int]],
) -> tuple[Any, Call]:
    """Run the mapper while listing its kernel calls; its output, and the call to keep (kernel None when
    the node does not qualify). ``constants[i]``: whether input ``i`` is a weight (its values never change);
    ``refs[i]``: its (slot, output index) in the program."""
    calls = ENGINE.record_calls()
    try:
        out = fn(node, args, ctx)
    finally:
        ENGINE.stop_recording()
    sig = signature(args)
    check = variable_check(args, constants, refs)
    none: Call = (sig, None, (), None, check, ())
    kernels = [c for c in calls if c[0] and c[0] not in EVENTS]
    if len(kernels) != 1:
        return out, none
    for c in calls:  # a value read decides the attributes: only a weight's is the same next time
        if not c[0] and not any(a is c[1] and constants[i] for i, a in enumerate(args)):
            return out, none
    kernel, inputs, attrs, result = kernels[0]
    results = result if result.__class__ is list else [result]
    outs = [out] if out.__class__ is Tensor else list(out) if isinstance(out, list | tuple) else None
    if outs is None or len(outs) != len(results) or any(a is not b for a, b in zip(outs, results, strict=True)):
        return out, none
    positions = []
    for t in inputs:
        found = [i for i, a in enumerate(args) if a is t]
        if len(found) != 1:  # made by the mapper, or at two positions (which may differ next time)
            return out, none
        positions.append(found[0])
    replayed = attrs if attrs is None else ReplayAttrs(attrs)
    return out, (sig, kernel, tuple(positions), replayed, check, tuple(refs[p] for p in positions))
