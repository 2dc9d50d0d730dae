"""Reductions, scans, segments and counts against reference results of real TF.js 4.22 (cpu backend).

The cases live in ``tests/fixtures/reduction.json``; regenerate them with
``python tests/fixtures/gen_reduction.py`` (needs Node and ``../shared/oracle``). Places where ndflow
deliberately differs from TF.js are listed in ``BEYOND_TFJS`` and checked against numpy below, with
the TF.js behaviour that cannot be written as a fixture case (tensors of shape ``[NaN, 2]``).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_cases import _build, case_ids, load_cases, run_case

import ndflow as nf

_DUP = "TF.js reduces a repeated axis into a wrong shape; ndflow raises a clear error (as for sum)"
_EMPTY_ARG = "TF.js returns index 0 of an empty axis; ndflow raises (no index exists)"
_SCAN_SCALAR = "TF.js returns the identity for a scalar (cumsum(3) is 0); ndflow raises: a scalar has no axis 0"
_SCAN_AXIS = "TF.js silently scans the last axis for an axis >= rank; ndflow raises"
_LSE = "TF.js subtracts a non-finite max and gets NaN; ndflow skips it as TF does (log_sum_exp: +-inf)"
_BINARY = "TF.js ignores binary_output for a rank-1 x; ndflow marks presence with 1 as documented (and as TF)"

_MEAN = "TF.js divides before summing, so a mean over no elements is 0; ndflow gives NaN (0 / 0, as TF and numpy)"

BEYOND_TFJS = {
    "mean__empty_axis": _MEAN,
    "mean__empty": _MEAN,
    "prod__duplicate_axis": _DUP,
    "all__duplicate_axis": _DUP,
    "any__duplicate_axis": _DUP,
    "all__empty": "TF.js's All gives False over no elements; ndflow gives True (the identity of AND, as TF)",
    "all__empty_rows": "TF.js's All gives False over no elements; ndflow gives True (the identity of AND, as TF)",
    "arg_min__empty": _EMPTY_ARG,
    "arg_max__empty": _EMPTY_ARG,
    "cumsum__scalar": _SCAN_SCALAR,
    "cumprod__scalar": _SCAN_SCALAR,
    "cumsum__axis_out_of_range": _SCAN_AXIS,
    "cumprod__axis_out_of_range": _SCAN_AXIS,
    "log_sum_exp__inf": _LSE,
    "log_sum_exp__all_neg_inf": _LSE,
    "log_sum_exp__empty": _LSE + "; an empty sum gives -inf",
    "log_sum_exp__bool": "TF.js subtracts bools as bools and gets Infinity; ndflow computes in float32",
    "dense_bincount__1d_binary": _BINARY,
    "dense_bincount__1d_binary_weights": _BINARY,
    "dense_bincount__2d_weights_flat": "TF.js reads flat weights of a rank-2 x out of bounds (NaN); ndflow raises",
    "unsorted_segment_sum__2d_ids": "TF.js sums only the first axis for rank-2 segment ids; ndflow sums every "
    "labelled element, as TF: the result has shape [num_segments, *x.shape[ids.rank:]]",
    "unsorted_segment_sum__nan_inf": "TF.js multiplies x by a 0/1 mask per segment, so one NaN or Infinity makes "
    "every segment NaN; ndflow sums each segment's own values (as TF)",
    "unsorted_segment_sum__zero_segments": "TF.js crashes reading an empty list; ndflow returns an empty [0] tensor",
}
# Not expressible as fixture cases (TF.js returns tensors with non-integer shapes); tested below:
#   cumsum/cumprod with a negative axis: TF.js returns shape [NaN, ...]; ndflow counts from the end.
#   cumsum/cumprod with a fractional axis, bincount/dense_bincount with a fractional size: TF.js returns
#   tensors of shape [NaN, ...] or [2.5]; ndflow raises TypeError.

CASES = load_cases("reduction", BEYOND_TFJS)
ALL_CASES = {c["id"]: c for c in load_cases("reduction")}


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_reduction_op_matches_tfjs(case, backend):
    """``backend`` (tests/conftest.py) runs every case on each available backend."""
    run_case(case)


def test_beyond_cases_are_in_the_fixture():
    assert set(BEYOND_TFJS) <= set(ALL_CASES)


# ----------------------------------------------------------------------------- BEYOND_TFJS, against numpy


def _op_and_args(cid: str, created: list):
    return getattr(nf, cid.split("__")[0]), _build(ALL_CASES[cid]["args"], created)


@pytest.mark.parametrize(
    "cid, error, match",
    [
        ("prod__duplicate_axis", ValueError, "prod: argument 'axis' .* duplicate"),
        ("all__duplicate_axis", ValueError, "all: argument 'axis' .* duplicate"),
        ("any__duplicate_axis", ValueError, "any: argument 'axis' .* duplicate"),
        ("arg_min__empty", ValueError, "arg_min: cannot reduce an empty axis"),
        ("arg_max__empty", ValueError, "arg_max: cannot reduce an empty axis"),
        ("cumsum__scalar", ValueError, "cumsum: argument 'x' must have rank >= 1"),
        ("cumprod__scalar", ValueError, "cumprod: argument 'x' must have rank >= 1"),
        ("cumsum__axis_out_of_range", ValueError, "cumsum: argument 'axis' 2 is out of range"),
        ("cumprod__axis_out_of_range", ValueError, "cumprod: argument 'axis' 2 is out of range"),
        ("dense_bincount__2d_weights_flat", ValueError, "dense_bincount: argument 'weights' must have the shape"),
    ],
)
def test_beyond_tfjs_raises(backend, cid, error, match):
    created: list = []
    op, args = _op_and_args(cid, created)
    with pytest.raises(error, match=match):
        op(*args)
    nf.dispose(created)


@pytest.mark.parametrize(
    "cid, want",
    [
        ("mean__empty_axis", np.full([3], np.nan, np.float32)),
        ("mean__empty", np.float32(np.nan)),
        ("all__empty", np.array(True)),
        ("all__empty_rows", np.array([True, True])),
        ("log_sum_exp__inf", np.float32(np.inf)),
        ("log_sum_exp__all_neg_inf", np.float32(-np.inf)),
        ("log_sum_exp__empty", np.float32(-np.inf)),
        ("log_sum_exp__bool", np.float32(np.log(2 * np.e + 1))),
        ("dense_bincount__1d_binary", np.array([1, 1, 1, 0, 1], np.float32)),
        ("dense_bincount__1d_binary_weights", np.array([1, 1, 1, 0, 1], np.float32)),
        ("unsorted_segment_sum__2d_ids", np.array([5, 5], np.float32)),
        ("unsorted_segment_sum__zero_segments", np.zeros([0], np.float32)),
        ("unsorted_segment_sum__nan_inf", np.array([np.nan, np.inf], np.float32)),
    ],
)
def test_beyond_tfjs_values(backend, cid, want):
    created: list = []
    op, args = _op_and_args(cid, created)
    got = op(*args)
    assert got.shape == want.shape and got.dtype == {"b": "bool", "f": "float32"}[want.dtype.kind]
    np.testing.assert_allclose(got.numpy(), want, atol=1e-5)
    nf.dispose(created + [got])


@pytest.mark.parametrize("op", ["cumsum", "cumprod"])
@pytest.mark.parametrize("axis", [-1, -2, -3])
def test_scan_negative_axis(backend, op, axis):
    x = np.random.default_rng(1).uniform(0.5, 1.5, (2, 3, 4)).astype(np.float32)
    t = nf.tensor(x)
    y = getattr(nf, op)(t, axis)
    np.testing.assert_allclose(y.numpy(), getattr(np, op)(x, axis=axis), rtol=1e-5)
    nf.dispose([t, y])


@pytest.mark.parametrize("op", ["cumsum", "cumprod", "arg_min"])
def test_fractional_axis_raises(backend, op):
    t = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(TypeError, match=f"{op}: argument 'axis' must be an int"):
        getattr(nf, op)(t, 0.5)
    t.dispose()


@pytest.mark.parametrize("op", ["bincount", "dense_bincount"])
@pytest.mark.parametrize("size, error", [(2.5, TypeError), (True, TypeError), ("3", TypeError), (-1, ValueError)])
def test_bincount_size_must_be_a_count(backend, op, size, error):
    x, w = nf.tensor([0, 1, 1], dtype="int32"), nf.tensor([], dtype="float32")
    with pytest.raises(error, match=f"{op}: argument 'size'"):
        getattr(nf, op)(x, w, size)
    nf.dispose([x, w])


def test_bincount_integral_float_size(backend):
    x, w = nf.tensor([0, 1, 1], dtype="int32"), nf.tensor([], dtype="float32")
    y = nf.bincount(x, w, 3.0)
    np.testing.assert_array_equal(y.numpy(), [1, 2, 0])
    nf.dispose([x, w, y])


@pytest.mark.parametrize("n, error", [(-1, ValueError), (2.5, TypeError), (None, TypeError)])
def test_unsorted_segment_sum_num_segments(backend, n, error):
    x, ids = nf.tensor([1.0, 2.0]), nf.tensor([0, 1], dtype="int32")
    with pytest.raises(error, match="unsorted_segment_sum: argument 'num_segments'"):
        nf.unsorted_segment_sum(x, ids, n)
    nf.dispose([x, ids])


# ----------------------------------------------------------------------------- sum_out_type


@pytest.mark.parametrize(
    "dtype, want", [("bool", "int32"), ("int32", "int32"), ("float32", "float32"), ("complex64", "complex64")]
)
def test_sum_out_type(dtype, want):
    assert nf.sum_out_type(dtype) == want


@pytest.mark.parametrize("dtype", ["string", "float64", None])
def test_sum_out_type_rejects(dtype):
    with pytest.raises(TypeError, match="sum_out_type"):
        nf.sum_out_type(dtype)


# ----------------------------------------------------------------------------- larger inputs against numpy

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("shape, axis", [((5, 7, 3), 0), ((5, 7, 3), 1), ((5, 7, 3), 2), ((64,), 0)])
@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_against_numpy(backend, shape, axis, exclusive, reverse):
    x = RNG.uniform(0.8, 1.25, shape).astype(np.float32)
    t = nf.tensor(x)
    for op, np_op, identity in (("cumsum", np.cumsum, 0.0), ("cumprod", np.cumprod, 1.0)):
        v = np.flip(x, axis) if reverse else x
        if exclusive:
            v = np.concatenate([np.full_like(np.take(v, [0], axis), identity), np.delete(v, -1, axis)], axis)
        want = np_op(v.astype(np.float64), axis=axis)
        want = np.flip(want, axis) if reverse else want
        y = getattr(nf, op)(t, axis, exclusive, reverse)
        assert y.shape == shape and y.dtype == "float32"
        np.testing.assert_allclose(y.numpy(), want, rtol=1e-4)
        y.dispose()
    t.dispose()


@pytest.mark.parametrize("axis", [None, 0, 1, [0, 2], -1])
@pytest.mark.parametrize("keep_dims", [False, True])
def test_reductions_against_numpy(backend, axis, keep_dims):
    x = RNG.uniform(-2, 2, (4, 5, 3)).astype(np.float32)
    b = x > 0
    np_axis = tuple(axis) if isinstance(axis, list) else axis
    t, tb = nf.tensor(x), nf.tensor(b)
    checks = [
        (nf.prod(t, axis, keep_dims), np.prod(x.astype(np.float64), axis=np_axis, keepdims=keep_dims)),
        (nf.all(tb, axis, keep_dims), np.all(b, axis=np_axis, keepdims=keep_dims)),
        (nf.any(tb, axis, keep_dims), np.any(b, axis=np_axis, keepdims=keep_dims)),
        (
            nf.log_sum_exp(t, axis, keep_dims),
            np.log(np.sum(np.exp(x.astype(np.float64)), axis=np_axis, keepdims=keep_dims)),
        ),
    ]
    for got, want in checks:
        assert got.shape == np.shape(want)
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-4, atol=1e-6)
    nf.dispose([t, tb] + [g for g, _ in checks])


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_arg_min_against_numpy(backend, axis):
    x = RNG.integers(-5, 5, (4, 5, 3)).astype(np.int32)
    t = nf.tensor(x)
    y = nf.arg_min(t, axis)
    np.testing.assert_array_equal(y.numpy(), np.argmin(x, axis=axis))
    nf.dispose([t, y])


def test_counts_against_numpy(backend):
    x = RNG.integers(0, 12, (6, 40)).astype(np.int32)
    w = RNG.uniform(0, 1, (6, 40)).astype(np.float32)
    tx, tw, empty = nf.tensor(x), nf.tensor(w), nf.tensor([], dtype="float32")
    got = [nf.bincount(tx, tw, 10), nf.dense_bincount(tx, empty, 10), nf.dense_bincount(tx, tw, 10, True)]
    keep = x < 10
    np.testing.assert_allclose(got[0].numpy(), np.bincount(x[keep], w[keep], minlength=10), rtol=1e-5)
    rows = np.stack([np.bincount(r[r < 10], minlength=10) for r in x])
    np.testing.assert_array_equal(got[1].numpy(), rows)
    np.testing.assert_array_equal(got[2].numpy(), (rows > 0).astype(np.float32))
    nf.dispose([tx, tw, empty] + got)


def test_unsorted_segment_sum_against_numpy(backend):
    x = RNG.uniform(-1, 1, (50, 3, 2)).astype(np.float32)
    ids = RNG.integers(-2, 9, 50).astype(np.int32)
    tx, tids = nf.tensor(x), nf.tensor(ids)
    y = nf.unsorted_segment_sum(tx, tids, 7)
    want = np.stack([x[ids == s].sum(axis=0) for s in range(7)])
    assert y.shape == (7, 3, 2) and y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), want, atol=1e-5)
    nf.dispose([tx, tids, y])


def test_moving_average_matches_formula(backend):
    v, x = RNG.uniform(-1, 1, 5).astype(np.float32), RNG.uniform(-1, 1, 5).astype(np.float32)
    tv, tx = nf.tensor(v), nf.tensor(x)
    y = nf.moving_average(tv, tx, 0.9, 4)
    np.testing.assert_allclose(y.numpy(), v + 0.1 * (x - v) / (1 - 0.9**4), rtol=1e-5)
    nf.dispose([tv, tx, y])


# ----------------------------------------------------------------------------- chain API


def test_chained_methods(backend):
    t = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = nf.tensor([True, False])
    ids = nf.tensor([1, 0], dtype="int32")
    results = {
        "prod": (t.prod(), 24.0),
        "prod_axis": (t.prod(1, True), [[2.0], [12.0]]),
        "all": (b.all(), False),
        "any": (b.any(), True),
        "arg_min": (t.arg_min(1), [0, 0]),
        "log_sum_exp": (t.log_sum_exp(), np.log(np.exp([1, 2, 3, 4]).sum())),
        "cumsum": (t.cumsum(1, False, True), [[3.0, 2.0], [7.0, 4.0]]),
        "cumprod": (t.cumprod(), [[1.0, 2.0], [3.0, 8.0]]),
        "unsorted_segment_sum": (t.unsorted_segment_sum(ids, 2), [[3.0, 4.0], [1.0, 2.0]]),
    }
    for name, (got, want) in results.items():
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6, err_msg=name)
    nf.dispose([t, b, ids] + [g for g, _ in results.values()])


def test_composites_leave_no_temporaries(backend):
    t = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    before = nf.memory().num_tensors
    y = nf.log_sum_exp([1, 2, 3], 0, True)
    z = nf.moving_average(t, t, 0.5, 2)
    w = nf.prod([True, False])
    assert nf.memory().num_tensors == before + 3
    nf.dispose([t, y, z, w])


def test_kernels_registered():
    from ndflow.core.kernel_registry import get_kernel

    for name in (
        "Prod",
        "All",
        "Any",
        "ArgMin",
        "Cumsum",
        "Cumprod",
        "Bincount",
        "DenseBincount",
        "UnsortedSegmentSum",
    ):
        assert get_kernel(name, "cpu") is not None, name
