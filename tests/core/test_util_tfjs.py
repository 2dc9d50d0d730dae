"""nf.util against real TF.js 4.22 (tests/fixtures/tfjs_surface.json, made by tests/fixtures/gen_tfjs_surface.js)."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures" / "tfjs_surface.json").read_text())
TYPED = {"Float32Array": np.float32, "Int32Array": np.int32, "Uint8Array": np.uint8, "Uint32Array": np.uint32}
SKIPPED = {"bytesFromStringArray"}  # its Uint8Array arguments do not survive JSON: tested below


def snake(name: str) -> str:
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name.replace("DType", "Dtype")).lower()


def _python_args(case: dict) -> list:
    args = case["args"]
    if case["fn"] == "checkConversionForErrors":  # JSON wrote NaN as null
        return [[math.nan if v is None else v for v in args[0]], *args[1:]]
    if case["fn"] == "decodeString":
        return [bytes(args[0])]
    return args


CASES = [c for c in FIXTURE["util"] if c["fn"] not in SKIPPED and "sorted" not in c]


@pytest.mark.parametrize("case", CASES, ids=[f"{c['fn']}-{i}" for i, c in enumerate(CASES)])
def test_util_matches_tfjs(case: dict) -> None:
    fn = getattr(nf.util, snake(case["fn"]))
    args = _python_args(case)
    if "error" in case:
        with pytest.raises((AssertionError, ValueError, TypeError)) as info:
            fn(*args)
        if case["fn"] in ("inferFromImplicitShape", "squeezeShape", "assertShapesMatch", "parseAxisParam"):
            assert str(info.value) == case["error"]  # the same words as TF.js where the message is TF.js's own
        return
    got = fn(*args)
    want = case["result"]
    if isinstance(want, dict) and "typed" in want:
        if case["fn"] == "encodeString":
            assert got == bytes(want["values"])
        else:
            assert isinstance(got, np.ndarray) and got.dtype == TYPED[want["typed"]]
            assert got.tolist() == want["values"]
    elif isinstance(want, dict) and "long" in want:
        assert got == int(want["long"])
    elif isinstance(want, dict) and "undefined" in want:
        assert got is None
    elif isinstance(want, dict) and "newShape" in want:
        assert got.new_shape == want["newShape"] and got.kept_dims == want["keptDims"]
        assert list(got) == [want["newShape"], want["keptDims"]]
    elif isinstance(want, float):
        assert got == pytest.approx(want, rel=0, abs=1e-15)
    else:
        assert got == want


def test_every_tfjs_util_function_is_there_or_documented() -> None:
    names = {snake(c["fn"]) for c in FIXTURE["util"]}
    for name in names:
        assert hasattr(nf.util, name), name
    for name in nf.util.__all__:
        assert hasattr(nf.util, name), name
    # the ones TF.js has that take no fixture (random, clock, network, promises) exist too
    for name in ("shuffle", "shuffle_combo", "rand_uniform", "swap", "now", "fetch", "repeated_try", "is_promise",
                 "is_typed_array", "is_function", "create_scalar_value", "convert_backend_values_and_array_buffer",
                 "get_typed_array_from_dtype", "make_zeros_typed_array", "flatten"):  # fmt: skip
        assert callable(getattr(nf.util, name)), name


def test_assert_is_reachable_by_its_tfjs_name() -> None:
    check = getattr(nf.util, "assert")
    assert check is nf.util.assert_
    check(True, "never")
    with pytest.raises(AssertionError, match="^lazy message$"):
        check(False, lambda: "lazy message")
    with pytest.raises(AssertionError, match="^plain$"):
        nf.util.assert_(0, "plain")
    calls = []
    nf.util.assert_(1, lambda: calls.append(1) or "x")
    assert calls == []  # the message function runs only on failure


def test_create_shuffled_indices_is_a_permutation() -> None:
    case = next(c for c in FIXTURE["util"] if c["fn"] == "createShuffledIndices")
    got = nf.util.create_shuffled_indices(case["args"][0])
    assert got.dtype == np.uint32
    assert sorted(got.tolist()) == case["sorted"]
    assert nf.util.create_shuffled_indices(0).tolist() == []
    with pytest.raises(ValueError, match="create_shuffled_indices: argument 'n'"):
        nf.util.create_shuffled_indices(-1)


def test_bytes_from_string_array() -> None:
    assert nf.util.bytes_from_string_array([b"\x01\x02", b"\x03"]) == 3
    assert nf.util.bytes_from_string_array(None) == 0


def test_math_namespace_matches_tfjs() -> None:
    assert nf.math.confusion_matrix is nf.confusion_matrix
    for case in FIXTURE["math"]:
        labels = nf.tensor(case["labels"], dtype="int32")
        predictions = nf.tensor(case["predictions"], dtype="int32")
        out = nf.math.confusion_matrix(labels, predictions, case["num_classes"])
        want = case["output"]
        assert list(out.shape) == want["shape"] and out.dtype == want["dtype"]
        assert out.data_sync().tolist() == want["values"]
        nf.dispose([labels, predictions, out])
