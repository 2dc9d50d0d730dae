"""Server-side batching: the concurrent requests for one model version are merged along the first axis into one
batch, run once, and the outputs split back by each request's row count.

A batch closes when it holds ``max_batch`` rows, when its oldest request has waited ``timeout_s``, or at once when
no other request for the model is on its way (``arriving()``, the requests whose body is still being received, is
0), so that a lone request pays no batching delay. Only
requests whose inputs agree in everything but the first dimension (shapes and dtypes) are merged; a request
with more rows than ``max_batch`` runs alone. One batch per model runs at a time; requests arriving meanwhile
form the next one. When the merged outputs do not have the total row count as their first dimension, or the
merged run fails, each request is run on its own, so that one bad request never fails the others."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Executor
from typing import Any

import numpy as np

from .errors import ServingError

Arrays = dict[str, np.ndarray]


class BatchItem:
    """One request in the queue: its ``feeds``, ``rows``, and the future that gets its outputs."""

    __slots__ = ("feeds", "rows", "key", "future", "arrived", "started")

    def __init__(self, feeds: Mapping[str, np.ndarray], rows: int, future: asyncio.Future) -> None:
        self.feeds = dict(feeds)
        self.rows = rows
        self.key = tuple((k, v.shape[1:], v.dtype.str) for k, v in sorted(self.feeds.items()))
        self.future = future
        self.arrived = time.monotonic()
        self.started = False


class Batcher:
    """Merges the requests given to :meth:`submit` into batches run by ``run`` (in ``executor``).

    ``on_batch(requests, rows)`` is called for every batch run (for metrics); ``arriving()``, where given, counts
    the requests on their way (a batch waits for more only while it is above 0; call :meth:`poke` when it drops
    without a submit). Create it in the event loop that submits; :meth:`aclose` runs what is queued and stops."""

    def __init__(self, run: Callable[[Arrays], Arrays], max_batch: int, timeout_s: float, executor: Executor,
                 on_batch: Callable[[int, int], None] | None = None,
                 arriving: Callable[[], int] | None = None) -> None:  # fmt: skip
        if max_batch < 2:
            raise ValueError(f"Batcher: max_batch must be at least 2, got {max_batch}")
        if timeout_s < 0:
            raise ValueError(f"Batcher: timeout_s must be >= 0, got {timeout_s}")
        self.run = run
        self.max_batch = max_batch
        self.timeout_s = timeout_s
        self.executor = executor
        self.on_batch = on_batch
        self.arriving = arriving
        self.queue: list[BatchItem] = []
        self.closed = False
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def submit(self, feeds: Mapping[str, np.ndarray], rows: int) -> BatchItem:
        """Queue a request; its outputs arrive on ``item.future``."""
        if self.closed:
            raise ServingError("the model version is being unloaded", "UNAVAILABLE")
        loop = asyncio.get_running_loop()
        item = BatchItem(feeds, rows, loop.create_future())
        self.queue.append(item)
        self._wake.set()
        if self._task is None:
            self._task = loop.create_task(self._loop())
        return item

    def poke(self) -> None:
        """Wake the batcher to look again (a request it might have waited for will not come)."""
        self._wake.set()

    def close(self) -> None:
        """Stop taking requests; what is queued still runs."""
        self.closed = True
        self._wake.set()

    async def aclose(self) -> None:
        self.close()
        if self._task is not None:
            await self._task

    def _ready_rows(self, key: tuple) -> int:
        return sum(i.rows for i in self.queue if i.key == key and not i.future.done())

    async def _loop(self) -> None:
        while True:
            self.queue = [i for i in self.queue if not i.future.done()]
            if not self.queue:
                if self.closed:
                    return
                self._wake.clear()
                await self._wake.wait()
                continue
            first = self.queue[0]
            deadline = first.arrived + self.timeout_s
            while not self.closed and self._ready_rows(first.key) < self.max_batch:
                if self.arriving is not None and self.arriving() <= 0:
                    break
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    break
                self._wake.clear()
                try:
                    await asyncio.wait_for(self._wake.wait(), remaining)
                except TimeoutError:
                    break
            if first.future.done():  # cancelled (timed out) while waiting
                continue
            batch, rows = [], 0
            for item in self.queue:
                if (
                    item.key == first.key
                    and not item.future.done()
                    and (not batch or rows + item.rows <= self.max_batch)
                ):
                    batch.append(item)
                    rows += item.rows
            taken = {id(i) for i in batch}
            self.queue = [i for i in self.queue if id(i) not in taken]
            for item in batch:
                item.started = True
            await self._run_batch(batch, rows)

    async def _run_batch(self, batch: list[BatchItem], rows: int) -> None:
        loop = asyncio.get_running_loop()
        if self.on_batch is not None:
            self.on_batch(len(batch), rows)
        if len(batch) == 1:
            await self._run_one(batch[0])
            return
        feeds = {k: np.concatenate([i.feeds[k] for i in batch]) for k in batch[0].feeds}
        try:
            out = await loop.run_in_executor(self.executor, self.run, feeds)
        except ServingError:
            out = None
        except Exception:  # noqa: BLE001  (retried request by request below, where the error is reported)
            out = None
        if out is None or not all(a.ndim >= 1 and a.shape[0] == rows for a in out.values()):
            await asyncio.gather(*(self._run_one(i) for i in batch))
            return
        offsets = np.cumsum([i.rows for i in batch])[:-1]
        parts = {k: np.split(a, offsets) for k, a in out.items()}
        for n, item in enumerate(batch):
            if not item.future.done():
                item.future.set_result({k: parts[k][n] for k in out})

    async def _run_one(self, item: BatchItem) -> None:
        loop = asyncio.get_running_loop()
        try:
            result: Any = await loop.run_in_executor(self.executor, self.run, item.feeds)
        except Exception as exc:  # noqa: BLE001  (handed to the request that caused it)
            if not item.future.done():
                item.future.set_exception(exc)
            return
        if not item.future.done():
            item.future.set_result(result)
