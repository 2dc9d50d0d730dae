"""Kernel attributes of a replayed call: read-only, with a slot for what a backend caches about the call.

A compiled graph-model program repeats a node's one kernel call with the attributes it recorded
(:mod:`ndflow.converter.runtime.replay`), on inputs of the recorded shapes and dtypes. Those attributes are kept in a
:class:`ReplayAttrs`: a dict that refuses changes (a kernel that changed its attributes would change every later
call), with a ``memo`` slot where a backend may keep what it derived from the call's signature and the flags
(:func:`memoized`: the cpu backend's bound pooling and slicing indexes; its convolutions keep their plan there, in
their own form), instead of working it out on every call.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NoReturn

from .flags import env


class ReplayAttrs(dict):
    """A read-only copy of a recorded call's attributes; ``memo``: a backend's cached value (None: none yet)."""

    __slots__ = ("memo",)

    def __init__(self, attrs: dict[str, Any]) -> None:
        super().__init__(attrs)
        self.memo: Any = None

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("a replayed kernel call's attributes are read-only (copy them to change them)")

    __setitem__ = __delitem__ = update = pop = popitem = setdefault = clear = __ior__ = _read_only  # type: ignore[assignment]

    def copy(self) -> dict[str, Any]:  # type: ignore[override]
        return dict(self)

    def __reduce__(self) -> tuple:
        return (ReplayAttrs, (dict(self),))


_ENV = env()


def memoized(attrs: object, make: Callable[[], Any]) -> Any:
    """``make()``: for a replayed call (``attrs`` a :class:`ReplayAttrs`), made on its first run after a flag
    change and kept in ``attrs.memo``; for any other call, made now. ``make`` may depend only on the call's
    signature (kernel, attributes, input shapes and dtypes) and the flags."""
    if attrs.__class__ is not ReplayAttrs:
        return make()
    memo = attrs.memo  # type: ignore[attr-defined]
    version = _ENV.version
    if memo is None or memo[0] != version:
        memo = attrs.memo = (version, make())  # type: ignore[attr-defined]
    return memo[1]
