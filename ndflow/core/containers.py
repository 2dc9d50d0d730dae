"""Walking nested Python containers for tensors (what ``tidy`` keeps, what ``dispose`` frees)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .tensor import Tensor

_CONTAINERS = (list, tuple, dict, set, frozenset)
_PLAIN = frozenset((int, float, str, bool, bytes, type(None)))


def walk_tensors(obj: Any) -> Iterator[Tensor]:
    """Every tensor in ``obj``: a tensor, or lists, tuples, sets and dict values of them, nested (each container
    once, so a structure that holds itself ends)."""
    if isinstance(obj, Tensor):
        yield obj
        return
    if not isinstance(obj, _CONTAINERS):
        return
    seen = {id(obj)}
    stack = [obj]
    while stack:
        item = stack.pop()
        for value in item.values() if isinstance(item, dict) else item:
            if type(value) in _PLAIN:  # the common leaves of a data element, skipped without isinstance
                continue
            if isinstance(value, Tensor):
                yield value
            elif isinstance(value, _CONTAINERS) and id(value) not in seen:
                seen.add(id(value))
                stack.append(value)
