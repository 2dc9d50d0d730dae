"""The pipelines of tests/fixtures/data/gen_data.js, built with nf.data (same names), and a serializer that
writes elements as the generator does."""

from __future__ import annotations

import json
import math
from pathlib import Path

import ndflow as nf
from ndflow import data

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "data" / "tfjs_data.json").read_text())


def ser(v):
    """An element as gen_data.js's ``ser`` writes it (tensors read, then left to the caller to dispose)."""
    if isinstance(v, nf.Tensor):
        return {"tensor": v.array_sync(), "shape": list(v.shape), "dtype": v.dtype}
    if isinstance(v, list | tuple):
        return [ser(x) for x in v]
    if isinstance(v, dict):
        return {"object": {k: ser(x) for k, x in v.items()}}
    return v


def js_size(size):
    return "Infinity" if size == math.inf else size


def _nums():
    return data.array(list(range(10)))


def _dicts():
    return data.array([{"a": i, "b": {"c": [i, i * 2], "d": f"s{i}"}, "e": i * 0.5} for i in range(7)])


CASES = {
    "array_numbers": _nums,
    "array_dicts": _dicts,
    "batch_numbers_4": lambda: _nums().batch(4),
    "batch_numbers_4_drop": lambda: _nums().batch(4, False),
    "batch_dicts_3": lambda: _dicts().batch(3),
    "batch_dicts_3_drop": lambda: _dicts().batch(3, False),
    "batch_nested_arrays": lambda: data.array([[[i, i + 1], [i + 2, i + 3]] for i in range(5)]).batch(2),
    "take_3": lambda: _nums().take(3),
    "take_20": lambda: _nums().take(20),
    "skip_3": lambda: _nums().skip(3),
    "skip_20": lambda: _nums().skip(20),
    "repeat_2": lambda: _nums().take(3).repeat(2),
    "repeat_inf_take": lambda: _nums().take(3).repeat().take(8),
    "repeat_0": lambda: _nums().repeat(0),
    "concatenate": lambda: _nums().take(3).concatenate(data.array([100, 101])),
    "filter_even": lambda: _nums().filter(lambda x: x % 2 == 0),
    "map_square": lambda: _nums().map(lambda x: x * x),
    "map_dict": lambda: _dicts().map(lambda x: {"y": x["a"] + 1, "z": x["b"]["d"]}),
    "zip_dict": lambda: data.zip({"x": _nums(), "y": _dicts().map(lambda d: d["a"] * 10)}),
    "zip_list": lambda: data.zip([_nums(), data.array(["a", "b", "c"])]),
    "zip_nested": lambda: data.zip({"p": [_nums(), _nums().skip(2)], "q": _nums().take(4)}),
    "zip_dict_batch": lambda: data.zip({"x": _nums(), "y": _nums().map(lambda v: v * 2)}).batch(4),
    "filter_batch_map": lambda: _nums().filter(lambda x: x % 3 != 0).map(lambda x: {"v": x}).batch(2),
    "shuffle_then_batch": lambda: data.array(list(range(12))).shuffle(5, 11).batch(4),
    "shuffle_take": lambda: data.array(list(range(30))).shuffle(8, 5).take(10),
    "shuffle_repeat": lambda: data.array(list(range(6))).shuffle(4, 9).repeat(3),
    "map_shuffle_skip": lambda: data.array(list(range(15))).map(lambda x: x * 3).shuffle(6, 3).skip(4),
}
for _seed in (1, 7, 42, 2024):
    for _buf in (1, 3, 10, 25):
        CASES[f"shuffle_s{_seed}_b{_buf}"] = lambda s=_seed, b=_buf: data.array(list(range(20))).shuffle(b, s)
        CASES[f"shuffle_s{_seed}_b{_buf}_noreshuffle"] = lambda s=_seed, b=_buf: data.array(list(range(20))).shuffle(
            b, s, False
        )
