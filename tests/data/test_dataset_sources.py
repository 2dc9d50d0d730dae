"""nf.data's sources (array, generator, zip, from_numpy) and ndflow's additions (unbatch, shard)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ndflow as nf
from ndflow import data


def test_generator_rules():
    def gen():
        yield from range(3)

    assert data.generator(gen).to_array() == [0, 1, 2]
    ds = data.generator(gen)
    assert list(ds) == list(ds) == [0, 1, 2]  # a function: iterable again
    assert list(data.generator(range(4))) == [0, 1, 2, 3]  # a re-iterable object: iterable again
    rng = data.generator(range(2))
    assert list(rng) == list(rng)
    once = data.generator(gen())
    assert list(once) == [0, 1, 2]
    with pytest.raises(ValueError, match="one-shot iterator"):
        once.iterator()
    assert data.generator(lambda: iter([5, 6])).to_array() == [5, 6]
    with pytest.raises(TypeError, match="nf.data.generator: expected a function"):
        data.generator(3)
    with pytest.raises(TypeError, match="must return an iterator"):
        data.generator(lambda: 3).to_array()


def test_generator_errors_keep_their_type_with_a_note():
    def bad():
        yield 1
        raise ValueError("source broke")

    with pytest.raises(ValueError, match="source broke") as info:
        data.generator(bad).to_array()
    assert any("iterating through a dataset" in n for n in info.value.__notes__)


def test_generator_closed_early_closes_the_generator():
    closed = []

    def gen():
        try:
            yield from range(100)
        finally:
            closed.append(True)

    it = data.generator(gen).take(2).iterator()
    assert list(it) == [0, 1]
    it.close()
    assert closed == [True]


def test_zip_structures_and_size():
    a, b = data.array([1, 2, 3]), data.array(["x", "y"])
    assert data.zip((a, b)).to_array() == [(1, "x"), (2, "y")]
    assert data.zip({"a": a, "n": {"b": b}}).to_array() == [{"a": 1, "n": {"b": "x"}}, {"a": 2, "n": {"b": "y"}}]
    assert data.zip([a, b]).size == 2
    assert data.zip([a, a.filter(lambda x: True)]).size is None
    assert data.zip([a, a.repeat()]).size == 3
    assert data.zip({}).to_array() == []


def test_zip_frees_the_longer_datasets_last_values():
    start = nf.memory().num_tensors
    x = data.from_numpy(np.zeros((5, 2)))
    out = data.zip({"x": x, "n": data.array([1, 2])}).to_array()
    assert len(out) == 2
    nf.dispose(out)
    assert nf.memory().num_tensors == start


def test_from_numpy():
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    y = np.array([0, 1, 0, 1])
    ds = data.from_numpy(x, y)
    assert ds.size == 4
    batch = ds.batch(3).to_array()
    assert batch[0]["xs"].shape == (3, 3) and batch[0]["ys"].array_sync() == [0, 1, 0]
    assert batch[1]["xs"].shape == (1, 3)
    nf.dispose(batch)
    rows = data.from_numpy({"a": x, "b": [[1], [2], [3], [4]]}).take(1).to_array()
    assert rows[0]["a"].array_sync() == [0, 1, 2] and rows[0]["b"].array_sync() == [1]
    nf.dispose(rows)
    with pytest.raises(ValueError, match="x and y differ in length along axis 0: 4 and 3"):
        data.from_numpy(x, y[:3])
    with pytest.raises(ValueError, match="from_numpy: x must have at least one axis"):
        data.from_numpy(np.float32(3))


def test_array_of_numpy_arrays_batches_to_tensors():
    ds = data.array([np.array([1, 2]), np.array([3, 4]), np.array([5, 6])]).batch(2)
    out = ds.to_array()
    assert out[0].dtype == "int32" and out[0].array_sync() == [[1, 2], [3, 4]]
    nf.dispose(out)


def test_batch_of_tuples_lists_of_tensors_and_strings():
    ds = data.array([(i, f"s{i}", [i, i]) for i in range(3)]).batch(3)
    (nums, strs, pairs) = ds.to_array()[0]
    assert nums.array_sync() == [0, 1, 2] and strs.dtype == "string" and pairs.shape == (3, 2)
    nf.dispose([nums, strs, pairs])
    z = data.zip([data.from_numpy(np.ones((4, 2))), data.array([1, 2, 3, 4])]).batch(4).to_array()[0]
    assert isinstance(z, list) and z[0].shape == (4, 2) and z[1].shape == (4,)
    nf.dispose(z)


def test_unbatch_and_shard():
    assert data.array(list(range(10))).shard(3, 1).to_array() == [1, 4, 7]
    assert data.array(list(range(10))).shard(3, 1).size == 3
    assert data.array(list(range(10))).shard(4, 3).size == 2
    assert data.array(list(range(10))).repeat().shard(2, 0).size == math.inf
    ds = data.array(list(range(5))).batch(2).unbatch()
    assert ds.size is None
    values = ds.to_array()
    assert [v.array_sync() for v in values] == [0, 1, 2, 3, 4]
    nf.dispose(values)


def test_repeat_reiterates_and_sizes():
    calls = []

    def gen():
        calls.append(1)
        yield from (1, 2)

    ds = data.generator(gen).repeat(3)
    assert ds.to_array() == [1, 2, 1, 2, 1, 2]
    assert len(calls) == 3
    assert data.array([1]).repeat(0).to_array() == []
    assert data.array([1, 2]).repeat().take(5).to_array() == [1, 2, 1, 2, 1]
    assert data.generator(gen).repeat(2).size is None


def test_len_and_repr():
    ds = data.array([1, 2, 3])
    assert len(ds) == 3
    with pytest.raises(TypeError, match="endless"):
        len(ds.repeat())
    it = ds.map(lambda x: x).iterator()
    assert "Array of 3 items -> Map" in repr(it)
    it.close()
