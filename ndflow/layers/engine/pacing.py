"""How a training loop waits: one loop body for ``fit`` and ``fit_async`` (and the evaluate / dataset loops).

The loops of ``training.py`` and ``training_dataset.py`` are coroutines that wait only through a :class:`Pace`:
for a callback's result, for the next batch of a dataset, and for their turn to give the event loop a go.

- ``SYNC`` (the plain calls): nothing suspends. A callback that returns a coroutine is run to its end on its
  own (``asyncio.run`` when no loop runs in the thread; refused inside a running loop), a dataset batch is read
  with ``next()``, and there are no yields, so the coroutine is driven to its end without an event loop
  (:func:`run_sync`) and the call returns its result.
- ``Pace(yield_every)`` (the ``*_async`` coroutines): callbacks' coroutines are awaited in the running loop,
  batches of asynchronous sources are awaited (``next_async`` / ``__anext__``), and the loop gets a turn
  (``await nf.next_frame()``) as TF.js's ``yieldEvery`` says: ``'auto'`` (the default) after a batch once at
  least 125 ms have passed since the last turn, a number of ms likewise, ``'batch'`` after every batch,
  ``'epoch'`` after every epoch, ``'never'`` not at all. Beyond TF.js, which yields only through the
  callback it makes when ``callbacks`` holds no ``Callback`` object, an ``_async`` loop yields with any callbacks.

No ``tidy`` scope is open across a wait, so tensors of other tasks never land in a training step's scope.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from ...core.awaitable import is_pending
from ...core.coroutines import drive_without_loop
from ...core.globals import next_frame
from .callbacks import DEFAULT_YIELD_EVERY_MS, run_blocking

__all__ = ["SYNC", "Pace", "check_yield_every", "run_sync"]

T = TypeVar("T")
_MODES = ("auto", "batch", "epoch", "never")


def check_yield_every(yield_every: Any, what: str) -> str | float:
    """``yield_every`` checked: ``'auto'`` (None), ``'batch'``, ``'epoch'``, ``'never'`` or milliseconds >= 0."""
    if yield_every is None:
        return "auto"
    if isinstance(yield_every, str) and yield_every in _MODES:
        return yield_every
    if isinstance(yield_every, int | float) and not isinstance(yield_every, bool) and yield_every >= 0:
        return float(yield_every)
    raise ValueError(
        f"{what}: yield_every must be 'auto', 'batch', 'epoch', 'never' or a number of milliseconds >= 0, "
        f"got {yield_every!r}"
    )


class Pace:
    """The waits of one loop run (see the module docstring); ``asynchronous=False`` is the plain calls' pace."""

    def __init__(
        self,
        yield_every: Any = "auto",
        asynchronous: bool = True,
        now: Callable[[], float] | None = None,
        what: str = "fit_async",
    ) -> None:
        self.asynchronous = asynchronous
        mode = check_yield_every(yield_every, what) if asynchronous else "never"
        self.mode: str | float = float(DEFAULT_YIELD_EVERY_MS) if mode == "auto" else mode
        self._now = now or (lambda: time.perf_counter() * 1000.0)
        self._last = self._now()
        #: How many times this pace gave the event loop a turn (tests read it).
        self.yields = 0

    async def settle(self, result: Any) -> None:
        """Wait for what a callback method returned, when it is a coroutine (or another pending awaitable)."""
        if not is_pending(result):
            return
        if self.asynchronous:
            await result
        else:
            run_blocking(result)

    async def hooks(self, callbacks: Any, hook: str, logs: Any, *args: Any) -> None:
        """Call ``hook`` on every callback of the ``CallbackList`` ``callbacks``, waiting at this pace."""
        await callbacks.run_hook(hook, logs, args, self.settle)

    async def _turn(self) -> None:
        self.yields += 1
        self._last = self._now()
        await next_frame()

    async def batch_end(self) -> None:
        """After a batch: give the loop a turn when ``yield_every`` says so."""
        if self.mode == "batch":
            await self._turn()
        elif isinstance(self.mode, float) and self._now() - self._last >= self.mode:
            await self._turn()

    async def epoch_end(self) -> None:
        """After an epoch: give the loop a turn with ``yield_every='epoch'``."""
        if self.mode == "epoch":
            await self._turn()

    async def next_item(self, iterator: Any) -> Any:
        """The next batch of ``iterator`` (None at its end): awaited from asynchronous sources when asynchronous."""
        if self.asynchronous:
            next_async = getattr(iterator, "next_async", None)
            if next_async is not None:  # an nf.data iterator
                result = await next_async()
                return None if result.done else result.value
            if hasattr(iterator, "__anext__"):
                try:
                    return await iterator.__anext__()
                except StopAsyncIteration:
                    return None
        return next(iterator, None)

    async def close(self, iterator: Any) -> None:
        """Stop an epoch's iterator early (``aclose`` awaited for an async generator)."""
        if self.asynchronous and hasattr(iterator, "aclose"):
            await iterator.aclose()
            return
        closer = getattr(iterator, "close", None)
        if closer is not None:
            closer()


#: The pace of the plain (blocking) calls.
SYNC = Pace(asynchronous=False)


def run_sync(coro: Coroutine[Any, Any, T], what: str) -> T:
    """Drive a loop coroutine paced by ``SYNC`` to its result (it never suspends)."""
    return drive_without_loop(coro, f"{what}: the loop suspended although it runs synchronously (an ndflow bug)")
