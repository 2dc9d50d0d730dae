"""Values of a model's constant tensors read by the op mappers, remembered by tensor id.

A model's weights never change, and mappers read the same small ones (shapes, axes, paddings) on every run
(``mappers._util.num``, ``ints``, ``nested``: TF.js's synchronous ``dataSync`` reads). The executor registers a
model's weights here when it is made and forgets them when it is disposed; the values read from a registered
tensor are kept by tensor id (ids are never reused). It sits in ``runtime`` (below ``mappers``) so that the
executor need not import the mappers.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from ...core.tensor import Tensor

_CONSTANT_IDS: set[int] = set()
_VALUES: dict[tuple[int, str], Any] = {}
_KINDS = ("num", "ints", "nested")


def register_constants(tensors: Iterable[Tensor]) -> None:
    """Let the mappers' ``num``, ``ints`` and ``nested`` remember the values of these (immutable) tensors."""
    _CONSTANT_IDS.update(t.id for t in tensors if type(t) is Tensor)


def forget_constants(tensors: Iterable[Tensor]) -> None:
    """Drop what was remembered about these tensors."""
    for t in tensors:
        _CONSTANT_IDS.discard(t.id)
        for kind in _KINDS:
            _VALUES.pop((t.id, kind), None)


def remembered(t: Tensor, kind: str, read: Callable[[Tensor], Any]) -> Any:
    """``read(t)``, computed once per ``kind`` for a registered constant ``t``."""
    if t.id not in _CONSTANT_IDS or t.is_disposed:
        return read(t)
    key = (t.id, kind)
    value = _VALUES.get(key, _VALUES)
    if value is _VALUES:
        value = _VALUES[key] = read(t)
    return value
