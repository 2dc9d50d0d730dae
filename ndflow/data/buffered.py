"""Iterators that hold elements: ``ShuffleIterator`` (tfjs-data's, same order for a seed) and
``PrefetchIterator`` (a background thread filling a bounded queue).

Both free what they hold when closed or when they become garbage (a prefetch iterator also stops its thread).
"""

from __future__ import annotations

import math
import queue
import threading
import time
import weakref
from typing import Any

from ..core.alea import Alea
from ..core.globals import dispose
from .iterators import DONE, Stage
from .lazy_iterator import IteratorResult, LazyIterator

__all__ = ["PrefetchIterator", "ShuffleIterator", "time_seed"]


def time_seed() -> str:
    """A seed from the clock, as tfjs-data's ``tf.util.now().toString()`` (milliseconds)."""
    return repr(time.perf_counter() * 1000.0)


class ShuffleIterator(Stage):
    """Elements drawn at random from a window of ``window_size`` upstream results.

    The window follows tfjs-data's exactly, so the order matches TF.js for the same seed: the window holds up
    to ``window_size`` upstream *results*, "done" ones included once the upstream ends; each step draws an index
    with ``floor(random() * len(window))``, puts the window's last result in its place, and refills the window
    after returning an element. A drawn "done" result is dropped and the draw repeats.
    """

    def __init__(self, upstream: LazyIterator[Any], window_size: int, seed: str | int | None = None) -> None:
        super().__init__([upstream])
        self._window_size = window_size
        self._random = Alea(seed if seed not in (None, "", 0) else time_seed())
        self._window: list[IteratorResult[Any]] = []  # mutated in place: the finalizer holds it
        self._finalizer = weakref.finalize(self, _dispose_window, self._window)
        self._upstream_exhausted = False  # a "done" was drawn (tfjs-data's flag)
        self._upstream_done = False  # the upstream returned "done" once: every later result is "done"

    async def _refill(self) -> None:
        up = self._upstreams[0]
        while len(self._window) < self._window_size:
            if self._upstream_done:
                self._window.append(DONE)
                continue
            r = await up.next_async()
            self._upstream_done = r.done
            self._window.append(r)

    async def _step(self) -> IteratorResult[Any]:
        if not self._upstream_exhausted:
            await self._refill()
        window = self._window
        while window:
            index = math.floor(self._random.random() * len(window))
            result = window[index]
            last = window.pop()
            if index < len(window):
                window[index] = last
            if result.done:
                self._upstream_exhausted = True
            else:
                await self._refill()
                return result
        return DONE

    def _release(self) -> None:
        self._finalizer()


def _dispose_window(window: list[IteratorResult[Any]]) -> None:
    """Free the elements a shuffle window holds (on close, or when the iterator is garbage)."""
    dispose([r.value for r in window if not r.done])
    window.clear()


class _Failure:
    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def _prefetch_worker(upstream: LazyIterator[Any], q: queue.Queue[Any], stop: threading.Event) -> None:
    while not stop.is_set():
        try:
            item: Any = upstream.next()
        except BaseException as e:  # noqa: BLE001 - handed to the consumer
            item = _Failure(e)
        while True:
            if stop.is_set():
                if isinstance(item, IteratorResult):
                    dispose(item.value)
                return
            try:
                q.put(item, timeout=0.05)
                break
            except queue.Full:
                continue
        if not isinstance(item, IteratorResult) or item.done:
            return


def _shutdown(upstream: LazyIterator[Any], q: queue.Queue[Any], stop: threading.Event, holder: list[Any]) -> None:
    stop.set()
    thread = holder[0] if holder else None
    if thread is not None:
        thread.join(timeout=10)
    while True:
        try:
            item = q.get_nowait()
        except queue.Empty:
            break
        if isinstance(item, IteratorResult):
            dispose(item.value)
    upstream.close()


class PrefetchIterator(LazyIterator[Any]):
    """Elements read ahead by a background thread into a queue of at most ``buffer_size``.

    The thread starts on the first ``next()``. An exception in the upstream reaches the consumer at the element
    where it happened. ``close()`` (or the iterator becoming garbage) stops the thread, disposes the queued
    elements and closes the upstream.
    """

    def __init__(self, upstream: LazyIterator[Any], buffer_size: int) -> None:
        self._upstream = upstream
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=buffer_size)
        self._stop = threading.Event()
        self._holder: list[threading.Thread] = []
        self._finished = False
        self._finalizer = weakref.finalize(self, _shutdown, upstream, self._queue, self._stop, self._holder)

    def _start(self) -> None:
        thread = threading.Thread(
            target=_prefetch_worker, args=(self._upstream, self._queue, self._stop), name="ndflow-prefetch", daemon=True
        )
        self._holder.append(thread)
        thread.start()

    def next(self) -> IteratorResult[Any]:
        if self._closed or self._finished:
            return DONE
        if not self._holder:
            self._start()
        item = self._queue.get()
        if isinstance(item, _Failure):
            self._finished = True
            raise item.error
        if item.done:
            self._finished = True
        return item

    async def next_async(self) -> IteratorResult[Any]:
        return self.next()

    def close(self) -> None:
        if self._closed:
            return
        self._finalizer()
        super().close()

    def summary(self) -> str:
        return f"{self._upstream.summary()} -> Prefetch"
