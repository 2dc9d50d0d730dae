"""Finished results that ``await`` accepts: how ndflow ports TF.js's Promise-returning APIs.

The rule (one for every such API: ``fit``, ``fit_dataset``, ``evaluate``, ``evaluate_dataset``, ``save``,
``load_layers_model``, ``load_graph_model``, ``GraphModel.execute_async``, ``Dataset.to_array``, ...):

- a plain call runs to completion and returns its result (a ``History``, a model, a ``SaveResult``, a tensor,
  a list of tensors);
- that result is also awaitable, and ``await result`` gives the result itself at once, without the event loop
  running anything (no task, no suspension), so ported ``h = await model.fit(x, y)`` works unchanged in a
  script under ``asyncio.run`` and in a notebook whose loop is always running;
- the ``*_async`` variants (``fit_async``, ``evaluate_async``, ``load_layers_model_async``, ...) are real
  coroutines: they give the event loop a turn between batches (TF.js's ``yieldEvery``) or while they wait on
  input, so other tasks keep running during a long training.

:class:`Resolved` is the mixin that makes a finished result awaitable; :class:`ResolvedList` is a list that is
one (``evaluate`` with metrics, ``predict`` of a multi-output model), :class:`ResolvedDict` a dict. ``Tensor``
awaits to itself too. :func:`finish` is how a plain call settles a user's awaitable (an async IO handler).
:func:`is_pending` tells an awaitable that still needs a loop (a coroutine, a future) from a finished one.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Generator
from typing import Any, TypeVar

from .coroutines import drive_without_loop
from .tensor import Tensor

__all__ = ["Resolved", "ResolvedDict", "ResolvedList", "finish", "is_pending", "resolved"]

R = TypeVar("R", bound="Resolved")
T = TypeVar("T")


class Resolved:
    """Mixin: ``await obj`` returns ``obj`` itself, at once (a finished result, as a resolved Promise)."""

    __slots__ = ()

    def __await__(self: R) -> Generator[Any, None, R]:
        return self
        yield  # pragma: no cover - makes this a generator that finishes on its first step


class ResolvedList(Resolved, list[T]):
    """A list that ``await`` returns as it is (TF.js's ``Promise<Scalar[]>`` of a finished computation)."""

    __slots__ = ()


class ResolvedDict(Resolved, dict[str, T]):
    """A dict that ``await`` returns as it is (a graph model's structured outputs)."""

    __slots__ = ()


def resolved(value: Any) -> Any:
    """``value`` made awaitable when it is a plain list or dict (as :class:`ResolvedList` /
    :class:`ResolvedDict`); tensors, ``Resolved`` objects and other values are returned as they are."""
    if type(value) is list:
        return ResolvedList(value)
    if type(value) is dict:
        return ResolvedDict(value)
    return value


def is_pending(value: Any) -> bool:
    """Whether ``value`` is an awaitable that needs an event loop to finish (a coroutine, a future, a task);
    False for plain values and for finished results that await to themselves (:class:`Resolved`, tensors)."""
    if isinstance(value, Resolved | Tensor):
        return False
    return inspect.isawaitable(value)


async def _wait(awaitable: Awaitable[T]) -> T:
    return await awaitable


def finish(value: Any, what: str) -> Any:
    """What a plain call returns for ``value`` (a user's IO handler may return a coroutine): ``value`` itself
    unless it is pending; a pending one run to its end, on a fresh event loop when none runs in this thread,
    else stepped without the loop (ndflow's own asynchronous work never really waits) and a ``RuntimeError``
    naming ``what`` when it does wait (blocking a running loop would deadlock it: await the ``_async`` variant)."""
    if not is_pending(value):
        return value
    import asyncio  # here: asyncio (with ssl and socket) is 20-40 ms of ``import ndflow``

    coro = value if inspect.iscoroutine(value) else _wait(value)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    return drive_without_loop(
        coro,
        f"{what} waits on asynchronous work and an event loop is running in this thread; await its _async "
        "variant there",
    )
