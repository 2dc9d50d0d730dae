"""Malformed op calls (issue 24) raise a ValueError or TypeError naming the op and argument, and free every
tensor they made before raising (the conftest fixture checks that nothing leaked), plus a seeded mutation
test: wrong types, shapes and values over common ops give only ValueError/TypeError/NotImplementedError."""

from __future__ import annotations

import math
import random
import time
import warnings

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.dtypes import upcast_type
from ndflow.core.tensor import DisposedTensorError


def _with_tensor_axis(op: object) -> object:
    """``op(X, axis)`` with a tensor axis (iterating it would make tensors that leak when the op raises)."""
    axis = nf.tensor([0], dtype="int32")
    try:
        return op(X, axis)
    finally:
        axis.dispose()


X = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]
CASES = [
    ("strided_slice", lambda: nf.strided_slice(X, [[0, 0]], [1, 1]), TypeError, "strided_slice: argument 'begin'"),
    ("strided_slice", lambda: nf.strided_slice(X, "ab", [1, 1]), TypeError, "strided_slice: argument 'begin'"),
    ("strided_slice", lambda: nf.strided_slice(X, [0, 0], [1, 1], [1, "a"]), TypeError, "argument 'strides'"),
    ("slice", lambda: nf.slice(X, "ab", [1, 1]), TypeError, "slice: argument 'begin'"),
    ("slice", lambda: nf.slice(X, [0, 0], "a"), TypeError, "slice: argument 'size'"),
    ("slice2d", lambda: nf.slice2d(X, "ab", [1, 1]), TypeError, "slice2d: argument 'begin'"),
    ("upcast_type", lambda: upcast_type("foo", "float32"), TypeError, "upcast_type: argument 'a'"),
    ("upcast_type", lambda: upcast_type("float32", 3), TypeError, "upcast_type: argument 'b'"),
    ("buffer", lambda: nf.buffer("ab"), TypeError, "buffer: argument 'shape'"),
    ("buffer", lambda: nf.buffer([2], "foo"), TypeError, "buffer: argument 'dtype'"),
    ("buffer", lambda: nf.buffer([2], "float32", ["a", "b"]), TypeError, "buffer: values"),
    ("cosine_window", lambda: nf.cosine_window("a", 0.5, 0.5), TypeError, "cosine_window: argument 'window_length'"),
    ("mirror_pad", lambda: nf.mirror_pad(X, [[1, 1]], "reflect"), ValueError, "mirror_pad: argument 'paddings'"),
    ("mirror_pad", lambda: nf.mirror_pad(X, "ab", "reflect"), TypeError, "mirror_pad: argument 'paddings'"),
    ("mirror_pad", lambda: nf.mirror_pad(X, [[1, 1], [1, 1]], "x"), ValueError, "mirror_pad: argument 'mode'"),
    ("lower_bound", lambda: nf.lower_bound([1, 2], "abc"), TypeError, "lower_bound: argument 'values'"),
    ("lower_bound", lambda: nf.lower_bound(3, [1]), ValueError, "lower_bound: 'sorted_sequence'"),
    ("enclosing_power_of_two", lambda: nf.enclosing_power_of_two(math.inf), ValueError, "argument 'value'"),
    ("enclosing_power_of_two", lambda: nf.enclosing_power_of_two(math.nan), ValueError, "argument 'value'"),
    ("add", lambda: nf.add([1.0, 2.0], [1, "x"]), TypeError, "add: argument 'b'"),
    ("sum", lambda: _with_tensor_axis(nf.sum), TypeError, "sum: argument 'axis'"),
    ("mean", lambda: _with_tensor_axis(nf.mean), TypeError, "mean: argument 'axis'"),
    ("transpose", lambda: nf.transpose(X, "ab"), TypeError, "transpose: argument 'perm'"),
    ("squeeze", lambda: nf.squeeze(X, [0.5]), TypeError, "squeeze: argument 'axis'"),
]


@pytest.mark.parametrize(("op", "call", "error", "match"), CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(CASES)])
def test_malformed_call(op, call, error, match):
    with pytest.raises(error, match=match.replace("(", r"\(")):
        call()


def test_clip_by_value_on_a_disposed_tensor_raises_when_min_equals_max():
    x = nf.tensor([1.0, 2.0])
    x.dispose()
    with pytest.raises(DisposedTensorError, match="disposed"):
        nf.clip_by_value(x, 1, 1)


# -- seeded mutation ---------------------------------------------------------------------------------------

ARITY = {
    "add": 2, "sub": 2, "mul": 2, "div": 2, "maximum": 2, "mat_mul": 2, "pow": 2, "relu": 1, "exp": 1, "sum": 2,
    "mean": 2, "reshape": 2, "transpose": 2, "concat": 2, "stack": 2, "slice": 3, "strided_slice": 4, "pad": 2,
    "mirror_pad": 3, "gather": 3, "tile": 2, "expand_dims": 2, "squeeze": 2, "clip_by_value": 3, "one_hot": 2,
    "where": 3, "lower_bound": 2, "cumsum": 2, "softmax": 2, "arg_max": 2, "split": 2, "reverse": 2, "cast": 2,
    "topk": 2, "fill": 2, "cosine_window": 3, "slice2d": 3,
}  # fmt: skip


def _arg(rng: random.Random, made: list[nf.Tensor]) -> object:
    plain = [None, "ab", math.inf, -math.inf, math.nan, 1e30, -1, [[0, 0]], [1, "x"], [1.0, 2.0, 3.0], {"a": 1},
             [[1, 2], [3]], "float32", 2.5, [], 0, 3, (1, 2), True]  # fmt: skip
    k = rng.randrange(len(plain) + 4)
    if k < len(plain):
        return plain[k]
    t = [
        lambda: nf.tensor([[1.0, 2.0], [3.0, 4.0]]),
        lambda: nf.tensor([True, False]),
        lambda: nf.tensor([[[1, 2]]], dtype="int32"),
        lambda: nf.tensor(3.0),
    ][k - len(plain)]()
    made.append(t)
    return t


def test_seeded_op_argument_mutation():
    rng = random.Random(24)
    start = time.perf_counter()
    names = sorted(ARITY)
    for _ in range(300):
        name = rng.choice(names)
        made: list[nf.Tensor] = []
        args = [_arg(rng, made) for _ in range(rng.randint(1, ARITY[name]))]
        before = nf.memory().num_tensors
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                out = getattr(nf, name)(*args)
        except (ValueError, TypeError, NotImplementedError):
            assert nf.memory().num_tensors == before, f"{name}{tuple(args)!r:.200} leaked"
        except IndexError as exc:  # a data-dependent index out of range: IndexError on every backend, by design
            assert "is not in [0" in str(exc), f"{name}: {exc}"
            assert nf.memory().num_tensors == before
        else:
            for t in out if isinstance(out, list | tuple) else [out]:
                if isinstance(t, nf.Tensor):
                    t.dispose()
        finally:
            for t in made:
                t.dispose()
    assert time.perf_counter() - start < 5


def test_mutation_arguments_cover_numpy_inputs():
    assert nf.sum(np.ones((2, 2), np.float32)).dispose() is None
