"""``with nf.scope() as s:``: a ``tidy`` scope written as a ``with`` block.

Every tensor created in the block (by this thread) is disposed when the block ends, normally or by an
exception, except what ``s.keep(...)`` names: those join the enclosing scope, exactly as the tensors a
``tidy`` function returns do (an outer ``tidy`` or ``with nf.scope()`` still frees them). ``nf.keep(t)``
keeps a tensor out of every scope, as with ``tidy``. Scopes belong to the thread that opens them
(docs/threads.md): the block must end in the thread that entered it, and scopes opened inside it must end
inside it. A ``with nf.scope()`` block must not ``await`` (other tasks' tensors would land in it), just as
``tidy`` refuses async functions.
"""

from __future__ import annotations

from threading import get_ident
from types import TracebackType
from typing import TypeVar

from .containers import walk_tensors
from .engine import ENGINE, Scope
from .tensor import Tensor

T = TypeVar("T")


class TensorScope:
    """The object of ``with nf.scope() as s``: ``s.keep(...)`` chooses what outlives the block."""

    __slots__ = ("name", "_scope", "_thread", "_kept")

    def __init__(self, name: str | None = None) -> None:
        if name is not None and not isinstance(name, str):
            raise TypeError(f"scope: argument 'name' must be a str or None, got {type(name).__name__}")
        self.name = name
        self._scope: Scope | None = None
        self._thread = 0
        self._kept: list[Tensor] = []

    def __enter__(self) -> TensorScope:
        if self._scope is not None:
            raise RuntimeError("scope: this scope is already open; make a new nf.scope() for each with block")
        self._thread = get_ident()
        self._kept = []
        self._scope = ENGINE.start_scope(self.name)
        return self

    def keep(self, result: T) -> T:
        """Let ``result`` (a tensor, or lists, tuples and dicts of them) outlive the block; returns it.

        The tensors join the enclosing scope (or no scope), as a ``tidy`` function's return value does."""
        if self._scope is None:
            raise RuntimeError("scope: keep() is only possible inside the with block")
        tensors = list(walk_tensors(result))
        if not tensors and not isinstance(result, list | tuple | dict):
            raise TypeError(
                f"scope: keep() expects tensors (or lists, tuples, dicts of them), got {type(result).__name__}"
            )
        for t in tensors:
            t.throw_if_disposed("scope.keep")
        self._kept.extend(tensors)
        return result

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        scope, self._scope = self._scope, None
        if scope is None:
            return
        if get_ident() != self._thread:
            raise RuntimeError(
                "scope: a with nf.scope() block must end in the thread that entered it (scopes are per thread)"
            )
        stack = ENGINE._scopes
        if scope not in stack:
            raise RuntimeError("scope: this scope was already ended (by end_scope) inside the with block")
        unbalanced = stack[-1] is not scope
        while stack[-1] is not scope:  # scopes opened inside the block and never ended: end them too
            ENGINE.end_scope(None)
        kept, self._kept = self._kept, []
        ENGINE.end_scope(kept)
        if unbalanced and exc_type is None:
            raise RuntimeError("scope: a scope started inside the with block was not ended; it was ended here")


def scope(name: str | None = None) -> TensorScope:
    """A tidy scope as a context manager.

    ``with nf.scope() as s:`` disposes, when the block ends (also by an exception), every tensor this thread
    created in it except those passed to ``s.keep(...)``, which join the enclosing scope as ``tidy``'s result
    does. Example::

        with nf.scope() as s:
            h = nf.relu(nf.mat_mul(x, w))   # freed at the end of the block
            y = s.keep(nf.sum(h))           # outlives it
    """
    return TensorScope(name)


__all__ = ["scope", "TensorScope"]
