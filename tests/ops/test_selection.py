"""Selection, scatter and search ops against reference results of real TF.js 4.22 (cpu backend).

The cases live in ``tests/fixtures/selection.json``; regenerate them with
``python tests/fixtures/gen_selection.py`` (needs Node and ``../shared/oracle``). Async ops
(``where_async``, ``boolean_mask_async``, ``setdiff1d_async``, ``in_top_k_async``) are awaited with
``asyncio.run``; ``tf.math.confusionMatrix`` is ``nf.confusion_matrix``.
"""

from __future__ import annotations

import asyncio
import inspect

import numpy as np
import pytest
from oracle_cases import OP_ERRORS, _build, _check_output, _describe, _tensors_in, case_ids, load_cases, run_case

import ndflow as nf

# Cases where ndflow deliberately differs from TF.js 4.22; each is checked below against numpy.
BEYOND_TFJS = {
    "gather_nd__out_of_dim_wraps": "TF.js checks only the flattened index, so [0, 5] reads x[1, 2]; ndflow raises",
    "gather_nd__negative_in_dim_wraps": "TF.js checks only the flattened index: [1, -1] reads x[0, 2]; ndflow raises",
    "gather_nd__complex64": "TF.js's cpu GatherNd fails on complex64 with an internal length error; ndflow gathers",
    "scatter_nd__out_of_dim_wraps": "TF.js checks only the flattened index, so [0, 5] writes out[1, 2]; ndflow raises",
    "scatter_nd__slice_rank0_adds_whole": "TF.js counts 0 updates for indices of shape [n, 0] and returns zeros; "
    "ndflow adds each update to the whole output, as TF does",
    "boolean_mask_async__negative_axis": "TF.js fails on a negative axis; ndflow counts it from the end",
    "boolean_mask_async__negative_axis2": "TF.js fails on a negative axis; ndflow counts it from the end",
    "in_top_k_async__fractional_k": "TF.js silently uses ceil(k) for a fractional k; ndflow raises TypeError",
    "topk__nan": "TF.js's quickselect gives input-order-dependent results with NaN; ndflow ranks NaN above all",
    "topk__infinite_ties": "TF.js compares by subtraction (inf - inf is NaN) and scrambles equal infinities; "
    "ndflow breaks those ties by index like every other tie",
    "search_sorted__invalid_side": "TF.js treats any side other than 'left' as 'right'; ndflow raises ValueError",
    "einsum__unused_operand": "TF.js never multiplies in an operand without summed labels ('i,j->i' gives shape "
    "[1]); ndflow computes the einsum",
    "einsum__unsummed_operand_dropped": "same as einsum__unused_operand ('ij,k->ij' gives shape [1, 1])",
    "einsum__repeated_output_label": "TF.js returns the input for 'i->ii'; ndflow raises ValueError",
}

# TF.js documents no order for topk(sorted=false) and its quickselect leaves one; ndflow keeps the
# entries in input order. These cases compare the selected set.
UNORDERED = {"topk__unsorted", "topk__unsorted_2d"}

# TF.js returns search_sorted results in shape [rows, values.shape[-1]] although its documentation
# (and TF) promise the shape of `values`; ndflow returns the shape of `values`, same numbers.
SEARCH_OPS = {"search_sorted", "lower_bound", "upper_bound"}
ASYNC_OPS = {"where_async", "boolean_mask_async", "setdiff1d_async", "in_top_k_async"}

CASES = load_cases("selection", BEYOND_TFJS)
ALL_CASES = {c["id"]: c for c in load_cases("selection")}


def _prepared(case: dict) -> dict:
    case = dict(case)
    if case["op"] == "math.confusionMatrix":
        case["op"] = "confusionMatrix"  # ndflow has it at the top level
    if case["id"].split("__")[0] in SEARCH_OPS and "outputs" in case:
        values_shape = case["args"][1]["tensor"]["shape"]
        case["outputs"] = [dict(case["outputs"][0], shape=values_shape)]
    return case


def _run_async_case(case: dict) -> None:
    """``run_case`` for an async op: the call is awaited."""
    cid = case["id"]
    op_name = cid.split("__")[0]
    op = getattr(nf, op_name)
    assert inspect.iscoroutinefunction(op), f"nf.{op_name} must be async"
    created: list = []
    result = None
    try:
        args = _build(case["args"], created)
        if "error" in case:
            try:
                result = asyncio.run(op(*args))
            except OP_ERRORS as exc:
                assert op_name in str(exc), f"{cid}: error should name {op_name!r}: {exc!r} (TF.js {case['error']!r})"
                return
            pytest.fail(f"{cid}: TF.js raises {case['error']!r}, ndflow returned {_describe(result)}")
        result = asyncio.run(op(*args))
        outs = result if isinstance(result, tuple) else [result]
        assert len(outs) == len(case["outputs"]), f"{cid}: {len(outs)} outputs != TF.js {len(case['outputs'])}"
        for k, (got, exp) in enumerate(zip(outs, case["outputs"], strict=True)):
            _check_output(cid, k, got, exp)
    finally:
        nf.dispose(created + [t for t in _tensors_in(result) if all(t is not c for c in created)])


def _run_unordered_topk(case: dict) -> None:
    created: list = []
    x = _build(case["args"][0], created)
    result = nf.topk(x, *case["args"][1:])
    try:
        exp_values, exp_indices = case["outputs"]
        k = exp_indices["shape"][-1]
        got = result.indices.numpy().reshape(-1, k)
        assert np.array_equal(np.sort(got, axis=1), np.sort(np.reshape(exp_indices["values"], (-1, k)), axis=1))
        assert np.all(np.diff(got, axis=1) > 0), "ndflow keeps unsorted top-k entries in input order"
        want = np.take_along_axis(x.numpy().reshape(-1, x.shape[-1]), got, axis=1)
        np.testing.assert_array_equal(result.values.numpy().reshape(-1, k), want)
        assert result.values.shape == tuple(exp_values["shape"]) and result.values.dtype == exp_values["dtype"]
    finally:
        nf.dispose(created + list(result))


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_selection_op_matches_tfjs(case, backend):
    """``backend`` (tests/conftest.py) runs every case on each available backend."""
    case = _prepared(case)
    name = case["id"].split("__")[0]
    if case["id"] in UNORDERED:
        _run_unordered_topk(case)
    elif name in ASYNC_OPS:
        _run_async_case(case)
    else:
        run_case(case)


# ----------------------------------------------------------------------------- BEYOND_TFJS, against numpy


def _args(cid: str, created: list) -> list:
    return _build(ALL_CASES[cid]["args"], created)


@pytest.mark.parametrize("cid", ["gather_nd__out_of_dim_wraps", "gather_nd__negative_in_dim_wraps"])
def test_beyond_tfjs_gather_nd_checks_each_dim(backend, cid):
    created: list = []
    args = _args(cid, created)
    with pytest.raises(IndexError, match=r"gather_nd: index \[.*\] does not index into shape \[2, 3\]"):
        nf.gather_nd(*args)
    nf.dispose(created)


def test_beyond_tfjs_gather_nd_complex64(backend):
    x = nf.tensor(np.array([1 + 2j, 3 + 4j, 5 - 1j], np.complex64))
    idx = nf.tensor([[2], [0]], dtype="int32")
    y = nf.gather_nd(x, idx)
    assert y.dtype == "complex64"
    np.testing.assert_array_equal(y.numpy(), [5 - 1j, 1 + 2j])
    nf.dispose([x, idx, y])


def test_beyond_tfjs_scatter_nd_checks_each_dim(backend):
    created: list = []
    with pytest.raises(IndexError, match=r"scatter_nd: index \[0, 5\] does not index into shape \[2, 3\]"):
        nf.scatter_nd(*_args("scatter_nd__out_of_dim_wraps", created))
    nf.dispose(created)


def test_beyond_tfjs_scatter_nd_slice_rank0(backend):
    created: list = []
    indices, updates, shape = _args("scatter_nd__slice_rank0_adds_whole", created)
    y = nf.scatter_nd(indices, updates, shape)
    np.testing.assert_allclose(y.numpy(), updates.numpy().sum(axis=0), atol=1e-6)
    nf.dispose(created + [y])


@pytest.mark.parametrize("cid", ["boolean_mask_async__negative_axis", "boolean_mask_async__negative_axis2"])
def test_beyond_tfjs_boolean_mask_negative_axis(backend, cid):
    created: list = []
    x, mask, axis = _args(cid, created)
    y = asyncio.run(nf.boolean_mask_async(x, mask, axis))
    moved = np.moveaxis(x.numpy(), axis, 0)[mask.numpy()]
    np.testing.assert_array_equal(y.numpy(), np.moveaxis(moved, 0, axis))
    nf.dispose(created + [y])


def test_beyond_tfjs_in_top_k_fractional_k(backend):
    created: list = []
    with pytest.raises(TypeError, match="in_top_k_async: argument 'k' must be an int"):
        asyncio.run(nf.in_top_k_async(*_args("in_top_k_async__fractional_k", created)))
    nf.dispose(created)


@pytest.mark.parametrize(
    "cid, values, indices",
    [
        ("topk__nan", [np.nan, np.inf, 3], [1, 3, 2]),
        ("topk__infinite_ties", [np.inf, 1, -np.inf, -np.inf], [4, 1, 0, 2]),
    ],
)
def test_beyond_tfjs_topk_non_finite(backend, cid, values, indices):
    created: list = []
    result = nf.topk(*_args(cid, created))
    np.testing.assert_array_equal(result.values.numpy(), np.array(values, np.float32))
    np.testing.assert_array_equal(result.indices.numpy(), indices)
    nf.dispose(created + list(result))


def test_beyond_tfjs_search_sorted_side(backend):
    created: list = []
    with pytest.raises(ValueError, match="search_sorted: argument 'side' must be 'left' or 'right'"):
        nf.search_sorted(*_args("search_sorted__invalid_side", created))
    nf.dispose(created)


@pytest.mark.parametrize("cid", ["einsum__unused_operand", "einsum__unsummed_operand_dropped"])
def test_beyond_tfjs_einsum_every_operand(backend, cid):
    created: list = []
    equation, *tensors = _args(cid, created)
    y = nf.einsum(equation, *tensors)
    np.testing.assert_allclose(y.numpy(), np.einsum(equation, *[t.numpy() for t in tensors]), atol=1e-5)
    nf.dispose(created + [y])


def test_beyond_tfjs_einsum_repeated_output_label(backend):
    created: list = []
    with pytest.raises(ValueError, match="einsum: the output subscripts 'ii' repeat a label"):
        nf.einsum(*_args("einsum__repeated_output_label", created))
    nf.dispose(created)


# ----------------------------------------------------------------------------- search_sorted's shape


def test_search_sorted_keeps_the_shape_of_values(backend):
    rng = np.random.default_rng(3)
    seq = np.sort(rng.integers(0, 20, (2, 3, 10)), axis=-1).astype(np.float32)
    vals = rng.integers(-2, 22, (2, 3, 4)).astype(np.float32)
    s, v = nf.tensor(seq), nf.tensor(vals)
    for side in ("left", "right"):
        y = nf.search_sorted(s, v, side)
        assert y.shape == (2, 3, 4) and y.dtype == "int32"
        want = [np.searchsorted(a, b, side) for a, b in zip(seq.reshape(6, 10), vals.reshape(6, 4), strict=True)]
        np.testing.assert_array_equal(y.numpy().reshape(6, 4), want)
        y.dispose()
    lo, hi = nf.lower_bound(s, v), nf.upper_bound(s, v)
    assert lo.shape == hi.shape == (2, 3, 4)
    nf.dispose([s, v, lo, hi])


# ----------------------------------------------------------------------------- more than the fixtures


def test_topk_matches_a_stable_descending_sort(backend):
    rng = np.random.default_rng(0)
    x = rng.integers(0, 6, (4, 50)).astype(np.float32)
    t = nf.tensor(x)
    result = t.topk(7)  # also a Tensor method, as in TF.js
    order = np.argsort(-x, axis=1, kind="stable")[:, :7]
    np.testing.assert_array_equal(result.indices.numpy(), order)
    np.testing.assert_array_equal(result.values.numpy(), np.take_along_axis(x, order, axis=1))
    assert result._fields == ("values", "indices")
    nf.dispose([t, *result])


def test_unique_matches_numpy_in_first_occurrence_order(backend):
    rng = np.random.default_rng(1)
    x = rng.integers(0, 3, (5, 6, 2)).astype(np.int32)
    t = nf.tensor(x)
    result = t.unique(1)
    values, indices = result.values.numpy(), result.indices.numpy()
    np.testing.assert_array_equal(values[:, indices, :], x)  # every slice maps back to itself
    _, first = np.unique(x.transpose(1, 0, 2).reshape(6, -1), axis=0, return_index=True)
    np.testing.assert_array_equal(values, x[:, np.sort(first), :])
    nf.dispose([t, *result])


def test_kernels_read_reshaped_inputs(backend):
    """Reshaped tensors share their buffer; the kernels must use each tensor's own shape."""

    def check() -> None:
        x2 = nf.reshape(nf.tensor(np.arange(6, dtype=np.float32)), [2, 3])
        idx = nf.reshape(nf.tensor([1, 2, 0, 0], dtype="int32"), [2, 2])
        np.testing.assert_array_equal(nf.gather_nd(x2, idx).numpy(), [5, 0])
        s = nf.scatter_nd(idx, nf.tensor([1.0, 2.0]), [2, 3])
        np.testing.assert_array_equal(s.numpy(), [[2, 0, 0], [0, 0, 1]])
        u = nf.tensor_scatter_update(x2, idx, nf.tensor([7.0, 8.0]))
        np.testing.assert_array_equal(u.numpy(), [[8, 1, 2], [3, 4, 7]])
        np.testing.assert_array_equal(nf.topk(x2, 1).indices.numpy(), [[2], [2]])
        assert nf.unique(nf.reshape(x2, [3, 2]), 1).values.shape == (3, 2)
        np.testing.assert_array_equal(nf.einsum("ij->ji", x2).numpy(), np.arange(6).reshape(2, 3).T)
        found = nf.search_sorted(nf.reshape(x2, [1, 6]), nf.reshape(nf.tensor([2.5, 0.0]), [1, 2]))
        np.testing.assert_array_equal(found.numpy(), [[3, 0]])

    nf.tidy(check)


def test_async_ops_are_coroutines_and_do_not_leak(backend):
    for name in ASYNC_OPS:
        assert inspect.iscoroutinefunction(getattr(nf, name)), name
    before = nf.memory().num_tensors
    x = nf.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    y = asyncio.run(nf.boolean_mask_async(x, [[True, False, True, False]] * 3))
    assert y.shape == (6,) and nf.memory().num_tensors == before + 2
    c = nf.confusion_matrix([0, 1, 1], [1, 1, 0], 2)
    np.testing.assert_array_equal(c.numpy(), [[0, 1], [1, 1]])
    assert nf.memory().num_tensors == before + 3
    nf.dispose([x, y, c])


def test_where_async_awaited_inside_a_coroutine(backend):
    async def main():
        c = nf.tensor([[True, False], [False, True]])
        coords = await nf.where_async(c)
        out, idx = await nf.setdiff1d_async([1.0, 2.0, 3.0], [2.0])
        return c, coords, out, idx

    c, coords, out, idx = asyncio.run(main())
    np.testing.assert_array_equal(coords.numpy(), [[0, 0], [1, 1]])
    np.testing.assert_array_equal(out.numpy(), [1, 3])
    np.testing.assert_array_equal(idx.numpy(), [0, 2])
    nf.dispose([c, coords, out, idx])
