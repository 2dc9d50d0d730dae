"""The predict body's fast path (``codec._fast_instances``, pysimdjson): a rectangular array of numbers read straight
into numpy gives exactly what the plain parser's lists give, and every other body takes the plain path."""

from __future__ import annotations

import json

import numpy as np
import pytest

from ndflow.serving import codec
from ndflow.serving.codec import Signature, TensorSpec
from ndflow.serving.errors import ServingError

pytest.importorskip("simdjson", reason="the fast path needs pysimdjson (the serve extra)")


def _plain(raw: bytes) -> object:
    return json.loads(raw)


FAST = [
    b'{"instances": [[1, 2.5], [3e-3, -4]]}',
    b'  {\n "instances" :\t[[[0.1], [0.2]], [[-0.0], [1e10]]]  }\n',
    b'{"instances":[1,2,3]}',
    b'{"instances": [[], []]}',
    json.dumps({"instances": np.random.default_rng(0).random((2, 8, 8, 1)).tolist()}).encode(),
]
PLAIN = [
    b'{"instances": [[1, 2], [3]]}',  # ragged
    b'{"instances": [[1, 2], [3], [4, 5, 6]]}',  # ragged with the element count of a (3, 2) array
    b'{"instances": [[1, 2], [3, 4]], "signature_name": ""}',
    b'{"signature_name": "", "instances": [[1, 2], [3, 4]]}',
    b'{"instances": [NaN, 1]}',
    b'{"instances": [1e400]}',
    b'{"instances": [true, false]}',
    b'{"instances": ["a", "b"]}',
    b'{"instances": [{"b64": "AA=="}]}',
    b'{"instances": [{"x": [1, 2]}]}',
    b'{"instances": []}',
    b'{"instances": [123456789012345678901234567890]}',
    b'{"instances": [1, 2]',
    b'{"instances": [1, 2]} trailing',
    b'{"inputs": [1, 2]}',
    b"[1, 2]",
]


@pytest.mark.parametrize("raw", FAST)
def test_rectangular_numbers_are_read_into_an_array(raw):
    got = codec.loads(raw)["instances"]
    assert isinstance(got, np.ndarray) and got.dtype == np.float64
    want = np.asarray(_plain(raw)["instances"], dtype=np.float64)
    assert got.shape == want.shape
    np.testing.assert_array_equal(got, want)  # the same correctly rounded doubles (bits: -0.0 included)
    assert np.array_equal(np.signbit(got), np.signbit(want))


@pytest.mark.parametrize("raw", PLAIN)
def test_other_bodies_take_the_plain_path(raw):
    assert codec._fast_instances(raw) is None


@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "string"])
def test_decoded_feeds_equal_the_plain_paths(dtype):
    sig = Signature((TensorSpec("x", "x:0", (-1, 2), dtype),), (TensorSpec("y", "y:0", (-1,), "float32"),))
    for raw in (b'{"instances": [[1, 2], [3, 4]]}', b'{"instances": [[1.5, 2], [3, 4]]}'):
        fast_body, plain_body = codec.loads(raw), _plain(raw)
        assert isinstance(fast_body["instances"], np.ndarray)
        try:
            want = codec.decode(plain_body, sig)
        except ServingError as exc:
            with pytest.raises(ServingError) as got:
                codec.decode(fast_body, sig)
            assert got.value.body() == exc.body()
            continue
        got = codec.decode(fast_body, sig)
        assert got.rows == want.rows and got.columnar == want.columnar
        assert got.feeds["x"].dtype == want.feeds["x"].dtype
        np.testing.assert_array_equal(got.feeds["x"], want.feeds["x"])
