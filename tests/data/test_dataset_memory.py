"""Tensor disposal in nf.data pipelines, as tfjs-data does it: nothing is left behind once a pipeline is
consumed, and closing an iterator frees the elements its buffers hold."""

from __future__ import annotations

import gc

import numpy as np

import ndflow as nf
from ndflow import data


def test_large_pipeline_frees_every_intermediate_tensor():
    start = nf.memory().num_tensors
    ds = data.array(list(range(10_000))).map(lambda x: {"x": nf.tensor([x, x + 1]), "y": x % 3}).shuffle(100, 7)
    count = 0
    for batch in ds.batch(256):
        count += batch["x"].shape[0]
        assert batch["y"].shape == (batch["x"].shape[0],)
        nf.dispose(batch)
    assert count == 10_000
    assert nf.memory().num_tensors == start


def test_map_keeps_tensors_it_returns_and_frees_the_rest():
    ds = data.array([0, 1, 2]).map(lambda i: {"a": nf.tensor([i]), "b": nf.tensor([i * 2])}).map(lambda e: e["a"])
    before = nf.memory().num_tensors
    values = list(ds)
    assert nf.memory().num_tensors == before + 3
    assert [v.array_sync() for v in values] == [[0], [1], [2]]
    nf.dispose(values)


def test_array_of_tensors_yields_clones_and_leaves_the_items():
    items = [nf.tensor([1.0, 2.0]), nf.tensor([3.0, 4.0])]
    before = nf.memory().num_tensors
    for t in data.array(items).filter(lambda t: bool(t.sum().data_sync()[0] > 4)).skip(0).take(5):
        assert t.array_sync() == [3.0, 4.0]
        t.dispose()
    assert nf.memory().num_tensors == before
    assert not items[0].is_disposed
    nf.dispose(items)


def test_take_skip_filter_shard_free_what_they_drop():
    make = data.from_numpy(np.arange(20, dtype=np.float32).reshape(10, 2))
    start = nf.memory().num_tensors
    for ds in (make.skip(3).take(4), make.filter(lambda t: t.sum() > 10), make.shard(3, 1), make.take(2)):
        nf.dispose(ds.to_array())
        assert nf.memory().num_tensors == start


def test_closing_a_shuffle_iterator_frees_its_window():
    start = nf.memory().num_tensors
    it = data.from_numpy(np.zeros((50, 3))).shuffle(20, 1).iterator()
    first = it.next().value
    first.dispose()
    assert nf.memory().num_tensors == start + 20  # the window is full again
    it.close()
    assert nf.memory().num_tensors == start
    assert it.next().done


def test_closing_a_prefetch_iterator_frees_its_queue_and_stops_the_thread():
    start = nf.memory().num_tensors
    it = data.from_numpy(np.zeros((100, 3))).map(lambda t: t + 1).prefetch(5).iterator()
    nf.dispose(it.next().value)
    thread = it._holder[0]
    it.close()
    assert not thread.is_alive()
    assert nf.memory().num_tensors == start


def test_an_abandoned_prefetch_iterator_is_freed_when_garbage():
    start = nf.memory().num_tensors
    it = data.from_numpy(np.zeros((100, 2))).prefetch(4).shuffle(3, 5).iterator()
    nf.dispose(it.next().value)
    del it
    gc.collect()
    assert nf.memory().num_tensors == start


def test_batch_unbatch_round_trip_frees_batches():
    start = nf.memory().num_tensors
    rows = data.from_numpy(np.arange(14).reshape(7, 2), np.arange(7)).batch(3).unbatch().to_array()
    assert len(rows) == 7
    assert rows[4]["xs"].array_sync() == [8, 9] and rows[4]["ys"].array_sync() == 4
    nf.dispose(rows)
    assert nf.memory().num_tensors == start
