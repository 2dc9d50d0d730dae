"""Shape-only nodes of a compiled program, computed once per input shape.

Many converted graphs rebuild constants from the shapes of their tensors on every run: anchor grids
from ``Shape(image)`` (FaceBoxes: 355 of its 446 static nodes), ``Reshape`` targets, ``Fill`` sizes.
A step is *shape-only* when its op is deterministic (``replay.recordable``) and it is either a
``Shape``/``ShapeN``/``Size``/``Rank`` node or all its inputs are weights or shape-only steps. Its value
then depends only on the shapes that the *source* steps (shape ops reading a computed tensor) see.

The first run of a program computes every step and keeps the values of the *frontier*: the shape-only
steps that a computed step reads, or that the program returns (never freed). Later runs skip every
shape-only step; a frontier step's output is a new tensor on the cached values. Each source step still
compares the shapes it reads with the recorded ones: on a difference the run stops (nothing it did has
side effects: programs with a stateful, random or dynamic step get no cache), and the program runs again
from its inputs, recording. The cached values are numpy arrays, not tensors: ``memory()`` shows nothing
new after a run.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ...core.engine import ENGINE
from ...core.tensor import Tensor
from .replay import recordable

SHAPE_OPS = frozenset({"Shape", "ShapeN", "Size", "Rank"})
# A frontier value larger than this (elements) turns the cache off: it would be held for the model's life.
MAX_CACHED_ELEMENTS = 1 << 22


class ShapeChangedError(Exception):
    """A source step saw other shapes than the recorded run: the program runs again, recording."""


class ShapeCache:
    """Which steps of a program are shape-only, and the values of its frontier for the recorded shapes."""

    def __init__(self, pure: list[bool], source: list[bool], frontier: list[bool], slots: set[int]) -> None:
        self.pure = pure
        self.slots = slots  # the shape-only steps' output slots
        self.source = source
        self.frontier = frontier
        # shape-only steps whose cached run only empties their slot: neither a source nor on the frontier
        self.skippable = [p and not s and not f for p, s, f in zip(pure, source, frontier, strict=True)]
        self.keys: dict[int, tuple] = {}
        self.values: dict[int, list[tuple[np.ndarray, tuple[int, ...], str] | None]] = {}
        self.ready = False

    @classmethod
    def build(
        cls, ops: Sequence[str], refs: Sequence[tuple[tuple[int, int], ...]], outs: Sequence[int], constant: set[int],
        freed: set[int],
    ) -> ShapeCache | None:  # fmt: skip
        """The cache of a program whose step ``k`` runs ``ops[k]`` on the slots ``refs[k]`` into slot
        ``outs[k]``; ``constant``: the weights' slots; ``freed``: the slots some free list frees. None when
        no step is shape-only or a step is not deterministic."""
        if not all(recordable(op) for op in ops):
            return None
        pure_slots: set[int] = set()
        pure, source = [False] * len(ops), [False] * len(ops)
        for k, (op, inputs) in enumerate(zip(ops, refs, strict=True)):
            derived = [s in constant or s in pure_slots for s, _ in inputs]
            if op in SHAPE_OPS and inputs and not all(derived):
                pure[k] = source[k] = True
            elif inputs and all(derived):
                pure[k] = True
            if pure[k]:
                pure_slots.add(outs[k])
        if not any(pure):
            return None
        read_by_computed = {s for k, inputs in enumerate(refs) if not pure[k] for s, _ in inputs}
        frontier = [pure[k] and (outs[k] in read_by_computed or outs[k] not in freed) for k in range(len(ops))]
        return cls(pure, source, frontier, pure_slots)

    def reset(self) -> None:
        self.keys.clear()
        self.values.clear()
        self.ready = False

    def record(self, k: int, args: Sequence[Any], outs: Sequence[Tensor | None]) -> bool:
        """Note what shape-only step ``k`` saw and made in a recording run; False when a frontier value
        cannot be kept (not a tensor, a string tensor, or too large)."""
        if self.source[k]:
            self.keys[k] = tuple(a.shape for a in args)
        if not self.frontier[k]:
            return True
        kept: list[tuple[np.ndarray, tuple[int, ...], str] | None] = []
        for t in outs:
            if t is None:
                kept.append(None)
                continue
            if t.__class__ is not Tensor or t.dtype == "string" or t.size > MAX_CACHED_ELEMENTS:
                return False
            values = t.numpy()
            values.flags.writeable = False
            kept.append((values, t.shape, t.dtype))
        self.values[k] = kept
        return True

    def replay(self, k: int, vals: list[Any], refs: tuple[tuple[int, int], ...]) -> list[Tensor | None] | None:
        """Step ``k``'s outputs in a cached run: new tensors on the kept values for a frontier step, None for
        another. A source step first checks the shapes of its inputs (``vals`` at ``refs``, a program's
        slot list); raises ShapeChangedError."""
        if self.source[k]:
            if tuple(vals[s][i].shape for s, i in refs) != self.keys[k]:
                raise ShapeChangedError
        kept = self.values.get(k)
        if kept is None:
            return None
        return [None if v is None else ENGINE.make_tensor(v[0], v[1], v[2]) for v in kept]
