"""The JSON codec on its own: TF Serving's row and columnar formats against a signature, b64 values, the response
shapes, the metadata's signature_def, and the request parser with and without orjson."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ndflow.serving import codec
from ndflow.serving.codec import Signature, TensorSpec
from ndflow.serving.errors import ServingError

SIG = Signature(
    (TensorSpec("x", "x:0", (-1, 2), "float32"), TensorSpec("k", "k:0", (-1,), "int32")),
    (TensorSpec("y", "y:0", (-1, 2), "float32"), TensorSpec("s_bytes", "s:0", None, "string")),
)


def test_row_format_stacks_named_instances():
    d = codec.decode({"instances": [{"x": [1, 2], "k": 3}, {"x": [3, 4], "k": 5}]}, SIG)
    assert not d.columnar and d.rows == 2
    assert d.feeds["x"].dtype == np.float32 and d.feeds["x"].shape == (2, 2)
    assert d.feeds["k"].dtype == np.int32 and d.feeds["k"].tolist() == [3, 5]


def test_columnar_rows_are_the_shared_first_dimension():
    d = codec.decode({"inputs": {"x": [[1, 2]], "k": [1, 2]}}, SIG)
    assert d.columnar and d.rows is None
    assert codec.decode({"inputs": {"x": [[1, 2]], "k": [7]}}, SIG).rows == 1


@pytest.mark.parametrize(
    "body, says",
    [
        ({"inputs": {"x": [[1, 2]], "k": [1.5]}}, "integers"),
        ({"inputs": {"x": [[1, 2]], "k": [2**40]}}, "int32 range"),
        ({"inputs": {"x": [[1, 2]], "k": [True]}}, "true/false"),
        ({"inputs": {"x": [[1, 2, 3]], "k": [1]}}, "expected shape [-1, 2]"),
    ],
)
def test_values_are_checked(body, says):
    with pytest.raises(ServingError, match=says.replace("[", r"\[").replace("]", r"\]")) as err:
        codec.decode(body, SIG)
    assert err.value.status == 400


def test_responses():
    out = {"y": np.array([[1, 2], [3, 4]], np.float32), "s_bytes": np.array(["\x00\xff", "ab"], dtype=object)}
    rows = codec.encode(out, columnar=False, rows=2)["predictions"]
    assert rows[0] == {"y": [1.0, 2.0], "s_bytes": {"b64": "AP8="}}
    cols = codec.encode(out, columnar=True, rows=2)["outputs"]
    assert cols["y"] == [[1.0, 2.0], [3.0, 4.0]] and cols["s_bytes"][1] == {"b64": "YWI="}
    assert codec.encode({"y": np.array([1.0], np.float32)}, False, 1) == {"predictions": [1.0]}


def test_signature_def():
    sig = codec.signature_def(SIG)["signature_def"]["serving_default"]
    assert sig["inputs"]["k"] == {
        "dtype": "DT_INT32",
        "name": "k:0",
        "tensor_shape": {"dim": [{"size": "-1", "name": ""}], "unknown_rank": False},
    }
    assert sig["outputs"]["s_bytes"]["tensor_shape"] == {"dim": [], "unknown_rank": True}


@pytest.mark.parametrize("fast", [True, False], ids=["orjson-if-installed", "standard-json"])
def test_loads_takes_nan_and_refuses_malformed(monkeypatch, fast):
    if not fast:
        monkeypatch.setattr(codec, "_ORJSON", [None])
    assert codec.loads(b'{"a": [1, 2.5]}') == {"a": [1, 2.5]}
    assert math.isnan(codec.loads(b"[NaN, Infinity]")[0])
    with pytest.raises(ValueError):
        codec.loads(b'{"a": ')
