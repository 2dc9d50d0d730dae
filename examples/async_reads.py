#!/usr/bin/env python3
"""Asynchronous reads: ``await t.data()`` instead of the blocking ``t.data_sync()``.

Ops return at once; reading values is where a GPU backend has to wait. ``data()`` / ``array()``
are coroutines (asyncio), so other tasks keep running while a read is pending; ``nf.next_frame()``
yields to the event loop between steps of a long computation. ``tidy`` cannot span an ``await``
(TF.js refuses Promises there too): compute in ``tidy``, await the read outside it.

    python examples/async_reads.py [--steps 5]
"""

from __future__ import annotations

import argparse
import asyncio

import ndflow as nf
from ndflow.legacy import Array1D


async def reads() -> None:
    """``data()``, ``array()`` and several reads at once with ``asyncio.gather``."""
    x = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    y = nf.tidy(lambda: nf.mat_mul(x, x))
    print(f"await y.data()  -> {(await y.data()).tolist()}")
    print(f"await y.array() -> {await y.array()}")
    parts = nf.tidy(lambda: [nf.sum(y), nf.mean(y), nf.max(y)])
    values = await asyncio.gather(*(t.data() for t in parts))
    print(f"gathered sum, mean, max -> {[float(v[0]) for v in values]}")
    print(f"blocking y.data_sync() -> {y.data_sync().tolist()} (same values, but it blocks the loop)")
    nf.dispose([x, y, parts])


async def long_computation(steps: int, log: list[str]) -> float:
    """A loop that reads a value each step and yields with ``next_frame`` so other tasks run."""
    acc = nf.scalar(0.0)
    for step in range(steps):
        new = nf.tidy(lambda acc=acc, step=step: nf.add(acc, nf.sum(nf.random_uniform([100], 0, 1, "float32", step))))
        acc.dispose()
        acc = new
        value = float((await acc.data())[0])
        log.append(f"step {step}: running total {value:.3f}")
        await nf.next_frame()
    acc.dispose()
    return value


async def ticker(log: list[str], done: asyncio.Event) -> int:
    """Another task: it keeps ticking while the computation awaits its reads."""
    ticks = 0
    while not done.is_set():
        ticks += 1
        log.append(f"  tick {ticks}")
        await asyncio.sleep(0)
    return ticks


async def interleaved(steps: int) -> None:
    """The computation and the ticker share the event loop."""
    log: list[str] = []
    done = asyncio.Event()
    tick_task = asyncio.create_task(ticker(log, done))
    total = await long_computation(steps, log)
    done.set()
    ticks = await tick_task
    print("\n".join(log))
    print(f"total {total:.3f}; the ticker ran {ticks} times while the reads were pending")


async def legacy_reads() -> None:
    """deeplearn.js's asynchronous reads: ``await a.val(i)`` and ``await a.getValuesAsync()``."""
    a = Array1D.new([10, 20, 30])
    print(f"await a.val(2) -> {await a.val(2)}; await a.getValuesAsync() -> {(await a.getValuesAsync()).tolist()}")
    a.dispose()


def tidy_refuses_async() -> None:
    """An async function in ``tidy`` is an error, as a Promise in TF.js's ``tidy``."""

    async def compute() -> None:
        await asyncio.sleep(0)

    try:
        nf.tidy(compute)
    except TypeError as exc:
        print(f"tidy(async fn) -> TypeError: {exc}")


def main() -> None:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    print(f"backend: {nf.get_backend()}")
    asyncio.run(reads())
    asyncio.run(interleaved(args.steps))
    asyncio.run(legacy_reads())
    tidy_refuses_async()
    print(f"num_tensors at the end: {nf.memory().num_tensors}")


if __name__ == "__main__":
    main()
