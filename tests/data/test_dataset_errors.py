"""Bad arguments to nf.data name the method and the argument; a failing stage leaks nothing."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import ndflow as nf
from ndflow import data

DS = data.array([1, 2, 3])


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda: DS.batch(0), ValueError, r"Dataset.batch: batch_size must be a positive int, got 0"),
        (lambda: DS.batch(2.5), TypeError, r"Dataset.batch: batch_size must be a positive int"),
        (lambda: DS.take(-1), ValueError, r"Dataset.take: count must be >= 0, got -1"),
        (lambda: DS.skip(-2), ValueError, r"Dataset.skip: count must be >= 0, got -2"),
        (lambda: DS.take("3"), TypeError, r"Dataset.take: count must be an int"),
        (lambda: DS.shuffle(), ValueError, r"Dataset.shuffle: buffer_size must be specified.*\(3 elements\)"),
        (lambda: DS.shuffle(0), ValueError, r"Dataset.shuffle: buffer_size must be a positive int"),
        (lambda: DS.shuffle(2, seed=[1]), TypeError, r"Dataset.shuffle: seed must be"),
        (lambda: DS.prefetch(None), ValueError, r"Dataset.prefetch: buffer_size must be specified"),
        (lambda: DS.prefetch(0), ValueError, r"Dataset.prefetch: buffer_size must be a positive int"),
        (lambda: DS.repeat(1.5), TypeError, r"Dataset.repeat: count must be an int or None"),
        (lambda: DS.map(3), TypeError, r"Dataset.map: transform must be a function, got int"),
        (lambda: DS.filter(None), TypeError, r"Dataset.filter: predicate must be a function"),
        (lambda: DS.concatenate([4]), TypeError, r"Dataset.concatenate: dataset must be a Dataset, got list"),
        (lambda: DS.shard(0, 0), ValueError, r"Dataset.shard: num_shards must be a positive int"),
        (lambda: DS.shard(2, 2), ValueError, r"Dataset.shard: index must be < num_shards \(2\), got 2"),
        (lambda: DS.repeat().to_array(), ValueError, r"Dataset.to_array: cannot convert an endless dataset"),
        (lambda: data.zip(DS), TypeError, r"nf.data.zip: datasets must be a dict, list or tuple of datasets"),
        (lambda: data.zip({"a": DS, "b": 3}), TypeError, r"nf.data.zip: leaves of datasets must be Datasets, got int"),
        (lambda: data.array(np.zeros(3)), TypeError, r"nf.data.array: items must be a list.*from_numpy"),
        (lambda: data.array(5), TypeError, r"nf.data.array: items must be a list, got int"),
    ],
)
def test_bad_arguments_name_method_and_argument(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_map_returning_non_values_is_refused():
    async def coro(x):
        return x

    with pytest.raises(TypeError, match="Dataset.map: transform is a coroutine function; use map_async"):
        DS.map(coro)
    with pytest.raises(TypeError, match=r"Dataset.map: transform returned an iterator at element\['g'\]"):
        DS.map(lambda x: {"g": iter([x])}).to_array()
    with pytest.raises(TypeError, match="Dataset.map: transform returned a function"):
        DS.map(lambda x: print).to_array()
    with pytest.raises(TypeError, match="returned an awaitable.*use map_async"):
        DS.map(lambda x: asyncio.sleep(0)).to_array()


def test_failing_stages_dispose_their_inputs():
    start = nf.memory().num_tensors
    ds = data.from_numpy(np.zeros((4, 2)))

    def boom(t):
        raise RuntimeError("transform failed")

    with pytest.raises(RuntimeError, match="transform failed"):
        ds.map(boom).to_array()
    with pytest.raises(ValueError, match="Dataset.batch"):
        data.zip([ds, data.array([{"a": 1}, 2, 3, 4])]).batch(2).to_array()
    with pytest.raises(ValueError, match="Dataset.filter: predicate returned a tensor of shape"):
        ds.filter(lambda t: t > 0).to_array()
    assert nf.memory().num_tensors == start


def test_filter_accepts_a_scalar_tensor_predicate():
    ds = data.from_numpy(np.arange(6).reshape(6, 1)).filter(lambda t: t.sum() > 2)
    out = ds.to_array()
    assert [t.array_sync() for t in out] == [[3], [4], [5]]
    nf.dispose(out)
