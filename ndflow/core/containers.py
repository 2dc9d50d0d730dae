"""Walking nested Python containers for tensors (what ``tidy`` keeps, what ``dispose`` frees)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .tensor import Tensor


def walk_tensors(obj: Any) -> Iterator[Tensor]:
    """Every tensor in ``obj``: a tensor, or lists, tuples, sets and dict values of them, nested."""
    if isinstance(obj, Tensor):
        yield obj
        return
    if not isinstance(obj, list | tuple | dict | set | frozenset):
        return
    seen: set[int] = set()
    stack = [obj]
    while stack:
        item = stack.pop()
        if isinstance(item, Tensor):
            yield item
        elif isinstance(item, list | tuple | set | frozenset | dict):
            if id(item) in seen:
                continue
            seen.add(id(item))
            stack.extend(item.values() if isinstance(item, dict) else item)
