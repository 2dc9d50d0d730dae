"""nf.data pipelines against TF.js 4.22's tf.data (tests/fixtures/data/tfjs_data.json, made by gen_data.js):
same elements in the same order, same structures, dtypes and shapes, same ``size``. Values are small integers
and halves, exact in float32, so they are compared exactly."""

from __future__ import annotations

import math

import pytest
from dataset_cases import CASES, FIXTURE, js_size, ser

import ndflow as nf
from ndflow import data


def run(ds):
    out = []
    for value in ds:
        out.append(ser(value))
        nf.dispose(value)
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_pipeline_matches_tfjs(name):
    expected = FIXTURE["datasets"][name]
    ds = CASES[name]()
    assert js_size(ds.size) == expected["size"]
    for iteration in expected["iterations"]:
        assert run(ds) == iteration


def test_every_fixture_pipeline_is_checked():
    # batch_tensors needs tensors made outside the pipeline: checked below.
    assert set(FIXTURE["datasets"]) - set(CASES) == {"batch_tensors"}


def test_batch_of_tensors_matches_tfjs():
    ts = [nf.tensor([i, -i], dtype="float32") for i in range(5)]
    try:
        assert run(data.array(ts).batch(2)) == FIXTURE["datasets"]["batch_tensors"]["iterations"][0]
    finally:
        nf.dispose(ts)


def test_sizes_match_tfjs():
    nums = data.array(list(range(10)))
    sizes = FIXTURE["sizes"]
    assert nums.repeat().size == math.inf and sizes["repeat_inf"] == "Infinity"
    assert nums.filter(lambda x: True).size is None and sizes["filter"] is None
    assert nums.batch(3, False).size == sizes["batch_drop"]
    assert nums.batch(3).size == sizes["batch_keep"]
    assert nums.concatenate(nums.repeat()).size == math.inf and sizes["concat_inf"] == "Infinity"
    assert data.zip([nums, nums.take(4)]).size == sizes["zip_min"]
    assert nums.repeat().take(5).size == sizes["take_repeat_inf"]
