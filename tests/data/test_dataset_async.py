"""nf.data with asyncio: async for, awaited consumers, async generator sources and map_async, driven from
synchronous code on one private loop per iterator."""

from __future__ import annotations

import asyncio

import pytest

import ndflow as nf
from ndflow import data


async def agen(n):
    for i in range(n):
        await asyncio.sleep(0)
        yield i


def test_async_for_and_awaited_consumers():
    ds = data.array([1, 2, 3]).map(lambda x: x * 10)

    async def main():
        seen = [x async for x in ds]
        arr = await ds.to_array()
        acc = []
        assert await ds.for_each_async(acc.append) is None
        it = await ds.iterator()
        r = await it.next()
        return seen, list(arr), acc, r.value, r["done"]

    assert asyncio.run(main()) == ([10, 20, 30], [10, 20, 30], [10, 20, 30], 10, False)


def test_plain_calls_run_to_completion_and_stay_awaitable():
    ds = data.array([1, 2, 3])
    arr = ds.to_array()
    assert arr == [1, 2, 3]
    acc = []
    done = ds.for_each_async(acc.append)
    assert acc == [1, 2, 3]

    async def main():
        return await arr, await done

    assert asyncio.run(main()) == ([1, 2, 3], None)


def test_async_generator_source_from_sync_code_uses_one_loop():
    ds = data.generator(lambda: agen(5)).map(lambda x: x + 1)
    it = ds.iterator()
    assert it.is_async
    values = [it.next().value for _ in range(3)]
    loop = it._loop
    values += list(it)
    assert values == [1, 2, 3, 4, 5]
    assert it._loop is loop  # one loop for the whole iteration
    it.close()
    assert loop.is_closed()
    assert ds.to_array() == [1, 2, 3, 4, 5]
    assert ds.batch(2).map(lambda b: b.shape[0]).to_array() == [2, 2, 1]


def test_async_source_inside_a_running_loop():
    ds = data.generator(lambda: agen(4))

    async def main():
        assert [x async for x in ds] == [0, 1, 2, 3]
        assert await ds.to_array() == [0, 1, 2, 3]
        it = ds.iterator()
        with pytest.raises(RuntimeError, match="event loop is running"):
            it.next()
        it.close()

    asyncio.run(main())


def test_map_async_and_async_for_each():
    async def slow_square(x):
        await asyncio.sleep(0)
        return nf.tensor([x * x])

    ds = data.array([1, 2, 3]).map_async(slow_square)
    values = ds.to_array()
    assert [v.array_sync() for v in values] == [[1], [4], [9]]
    nf.dispose(values)
    seen = []

    async def record(t):
        await asyncio.sleep(0)
        seen.append(t.array_sync())

    ds.for_each_async(record)
    assert seen == [[1], [4], [9]]


def test_prefetch_of_async_source_and_errors_propagate():
    ds = data.generator(lambda: agen(6)).prefetch(2)
    assert ds.to_array() == list(range(6))

    def broken():
        yield 1
        raise KeyError("boom")

    it = data.generator(broken).prefetch(3).iterator()
    assert it.next().value == 1
    with pytest.raises(KeyError, match="boom"):
        it.next()
    it.close()


def test_shuffle_of_an_async_source_matches_tfjs_order():
    from dataset_cases import FIXTURE

    ds = data.generator(lambda: agen(20)).shuffle(10, 7)
    expected = FIXTURE["datasets"]["shuffle_s7_b10"]["iterations"]
    assert [list(ds), list(ds)] == expected


def test_with_closes_the_iterator():
    with data.generator(lambda: agen(3)).iterator() as it:
        assert it.next().value == 0
        loop = it._loop
    assert loop.is_closed() and it.next().done
