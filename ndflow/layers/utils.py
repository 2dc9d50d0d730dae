"""Small helpers shared by the Layers API: lists, shapes, enum-like string arguments."""

from __future__ import annotations

import inspect
import json
import math
from collections.abc import Callable, Sequence
from typing import Any

from ..core.engine import ENGINE
from .naming import to_camel_case, to_snake_case

Shape = tuple  # a shape: a tuple of int | None (None: unknown, usually the batch size)


def tidy(fn: Callable[[], Any]) -> Any:
    """``nf.tidy(fn)`` for a function of no arguments, run straight on the engine.

    The public ``tidy`` inspects ``fn``'s signature on each call (to refuse a function that needs
    arguments); the layers call it for every layer on every step, where that check costs more than
    a small kernel.
    """
    return ENGINE.tidy(None, fn, (), {})


def to_list(x: Any) -> list:
    """``x`` as a list: lists and tuples are copied, anything else is wrapped."""
    if isinstance(x, list | tuple):
        return list(x)
    return [x]


def singleton_or_list(xs: Sequence[Any]) -> Any:
    """The only element of a one-element list, else the list itself."""
    return xs[0] if len(xs) == 1 else list(xs)


def is_shape(x: Any) -> bool:
    """Whether ``x`` is one shape (a sequence of int / None), not a list of shapes."""
    return isinstance(x, list | tuple) and all(d is None or isinstance(d, int) for d in x)


def normalize_shape(shape: Any, what: str = "shape") -> Shape:
    """A shape as a tuple of int / None (``-1`` is not converted); raises on anything else."""
    if isinstance(shape, int):
        shape = (shape,)
    if not isinstance(shape, list | tuple) or not all(
        d is None or (isinstance(d, int) and not isinstance(d, bool)) for d in shape
    ):
        raise ValueError(f"{what} must be a list of integers (or None), got {shape!r}")
    return tuple(None if d is None else int(d) for d in shape)


def normalize_shape_list(x: Any) -> list[Shape]:
    """A list of shapes from one shape or a list of shapes (TF.js's ``normalizeShapeList``)."""
    if x is None:
        return []
    x = list(x)
    if not x:
        return []
    if not isinstance(x[0], list | tuple):
        return [tuple(x)]
    return [tuple(s) for s in x]


def get_exactly_one_shape(shapes: Any) -> Shape:
    """The shape from one shape or a one-element list of shapes."""
    if isinstance(shapes, list | tuple) and shapes and isinstance(shapes[0], list | tuple):
        if len(shapes) != 1:
            raise ValueError(f"expected exactly 1 shape, got {len(shapes)}: {list(shapes)}")
        return tuple(shapes[0])
    return tuple(shapes)


def get_exactly_one_tensor(xs: Any) -> Any:
    """The tensor from a tensor or a one-element list of tensors."""
    if isinstance(xs, list | tuple):
        if len(xs) != 1:
            raise ValueError(f"expected exactly 1 tensor, got {len(xs)}")
        return xs[0]
    return xs


def shape_to_json(shape: Any) -> Any:
    """Tuples to lists, recursively (for configs and printing)."""
    if isinstance(shape, list | tuple):
        return [shape_to_json(s) for s in shape]
    return shape


def shape_str(shape: Any) -> str:
    """A shape as ``JSON.stringify`` writes it (``[null,3]``), for messages."""
    return json.dumps(shape_to_json(shape), separators=(",", ":"))


def count_params_in_weights(weights: Sequence[Any]) -> int:
    """The number of scalars in a list of weights (each with a ``shape``)."""
    return sum(math.prod(w.shape) for w in weights)


def accepted_kwargs(cls: type, base: type) -> set[str] | None:
    """Keyword arguments the constructors of ``cls`` accept, walking up to ``base`` (None: any)."""
    names: set[str] = set()
    for klass in cls.__mro__:
        init = klass.__dict__.get("__init__")
        if init is None:
            continue
        params = inspect.signature(init).parameters.values()
        names.update(p.name for p in params if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY))
        if klass is base or not any(p.kind is p.VAR_KEYWORD for p in params):
            return names
    return None


def check_string_arg(value: str | None, allowed: Sequence[str], what: str, owner: str) -> str | None:
    """``value`` in its serialized (snake_case) spelling; accepts camelCase or snake_case."""
    if value is None:
        return None
    if not isinstance(value, str) or to_camel_case(value) not in [to_camel_case(a) for a in allowed]:
        choices = ", ".join(repr(to_snake_case(a)) for a in allowed)
        raise ValueError(f"{owner}: {value!r} is not a valid {what}; valid values are {choices} or None")
    return to_snake_case(to_camel_case(value))
