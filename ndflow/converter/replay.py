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

from ..core.engine import ENGINE
from ..core.replay_attrs import ReplayAttrs
from ..core.tensor import Tensor
from .graph import Node
from .plan import HASH_TABLE_OPS, is_dynamic

# (signature, kernel or None when the node does not qualify, input positions, attrs)
Call = tuple[tuple, str | None, tuple[int, ...], Any]

_STATEFUL = ("TensorArray", "TensorList", "Random", "Multinomial", "Variable", "Assign")


def recordable(op: str) -> bool:
    """Whether a node of ``op`` may be replayed: not control flow, dynamic, a table, random or stateful."""
    return not (is_dynamic(op) or op in HASH_TABLE_OPS or any(part in op for part in _STATEFUL))


def signature(args: Sequence[Any]) -> tuple:
    """The shapes and dtypes of a step's inputs (None for a missing one)."""
    return tuple([(a.shape, a.dtype) if a.__class__ is Tensor else None for a in args])


def record(
    fn: Callable[..., Any], node: Node, args: list[Any], ctx: Any, constants: Sequence[bool]
) -> tuple[Any, Call]:
    """Run the mapper while listing its kernel calls; its output, and the call to keep (kernel None when
    the node does not qualify). ``constants[i]``: whether input ``i`` is a weight (its values never change)."""
    calls = ENGINE.record_calls()
    try:
        out = fn(node, args, ctx)
    finally:
        ENGINE.stop_recording()
    sig = signature(args)
    none: Call = (sig, None, (), None)
    kernels = [c for c in calls if c[0]]
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
    return out, (sig, kernel, tuple(positions), attrs if attrs is None else ReplayAttrs(attrs))
