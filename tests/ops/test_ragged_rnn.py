"""``nf.ragged_gather``, ``nf.ragged_range``, ``nf.ragged_tensor_to_tensor``, ``nf.basic_lstm_cell``
and ``nf.multi_rnn_cell`` against real TF.js 4.22 (cpu backend).

The cases live in ``tests/fixtures/ragged_rnn.json``; regenerate them with
``python tests/fixtures/gen_ragged_rnn.py``. ragged_gather and multi_rnn_cell cases hold TF.js's
nested results flattened (see the generator), and multi_rnn_cell's cells are built here from the
case id. Below the fixture: gradients of basic_lstm_cell, ndflow's deliberate differences
(``BEYOND_TFJS``), and the vectorised kernels against plain-Python references.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_cases import OP_ERRORS, _build, _check_output, _tensors_in, case_ids, load_cases, run_case

import ndflow as nf

BEYOND_TFJS = {
    "ragged_gather__wrong_output_ragged_rank": "TF.js ignores output_ragged_rank; ndflow requires it to be "
    "indices.rank + len(params_nested_splits) - 1, as documented",
    "ragged_gather__matrix_splits": "TF.js reads a matrix of splits as flat and returns garbage; ndflow requires "
    "vectors",
    "basic_lstm_cell__int32_data": "TF.js's concat keeps the first tensor's dtype, so [data, h] truncates the float "
    "h to int32; ndflow's concat upcasts (as elsewhere) and keeps h's fractions",
    "ragged_range__bool": "TF.js makes ranges of bools (documented for float32 and int32 only); ndflow raises "
    "TypeError",
    "ragged_tensor_to_tensor__scalar_shape_natural": "TF.js rejects its documented shape -1 (the natural shape); "
    "ndflow uses the natural shape",
    "ragged_tensor_to_tensor__empty_shape_natural": "TF.js rejects an empty (unspecified) shape, documented as the "
    "natural shape; ndflow uses the natural shape",
    "ragged_tensor_to_tensor__matrix_values_natural": "TF.js's shape check indexes the wrong dimension, so the "
    "dense dims of multi-dim values are never filled in and it fails; ndflow takes them from the values",
    "ragged_tensor_to_tensor__dense_dim_resized": "TF.js returns a rank-4 tensor holding NaNs when shape resizes a "
    "dense dim; ndflow raises ValueError",
    "ragged_tensor_to_tensor__vector_default": "TF.js pads with zeros instead of a non-scalar default_value (it "
    "fills a copy); ndflow pads with default_value",
    "ragged_tensor_to_tensor__vector_default_value_rowids": "as vector_default",
    "ragged_tensor_to_tensor__matrix_default": "as vector_default",
    "ragged_tensor_to_tensor__default_broadcast_last_dim": "TF.js aligns default_value's dims with the values' "
    "from the left and rejects a broadcastable [4] for values [3, 2, 4]; ndflow broadcasts, as documented",
    "ragged_tensor_to_tensor__negative_value_rowid": "TF.js reads parent row -1 (undefined) and scrambles the "
    "output; ndflow raises IndexError",
    "ragged_tensor_to_tensor__value_rowids_unsorted": "TF.js's copy assumes sorted value_rowids and writes values "
    "to the wrong places; ndflow raises ValueError",
    "ragged_tensor_to_tensor__value_rowids_unsorted_2": "as value_rowids_unsorted",
    "ragged_tensor_to_tensor__more_tensors_than_types": "TF.js silently ignores the extra row partition tensors; "
    "ndflow raises ValueError",
    "ragged_tensor_to_tensor__unknown_type_after_valid": "TF.js drops an unknown row partition type and all after "
    "it; ndflow raises ValueError",
    "ragged_tensor_to_tensor__row_splits_past_values": "TF.js reads past the end of values (NaN); ndflow raises "
    "ValueError",
}

ALL = load_cases("ragged_rnn", BEYOND_TFJS)
FLAT = ("ragged_gather__", "multi_rnn_cell__")
CASES = [c for c in ALL if not c["id"].startswith(FLAT)]
FLAT_CASES = [c for c in ALL if c["id"].startswith(FLAT)]
GRAD_CASES = [c for c in ALL if "grads" in c]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_ragged_rnn_op_matches_tfjs(case, backend):
    run_case(case)


# ----------------------------------------------------------------------------- flattened results


def _custom_cell(x, c, h):
    """The Python twin of the generator's custom cell."""
    return nf.add(c, nf.mul(x, h)), nf.tanh(nf.sub(x, h))


def _gather_flat(splits, values, indices, rank):
    r = nf.ragged_gather(splits, values, indices, rank)
    return [*r.output_nested_splits, r.output_dense_values]


def _lstm_stack_flat(forget_bias, kernels, biases, data, c, h):
    def make(k, b):
        return lambda x, cc, hh: nf.basic_lstm_cell(forget_bias, k, b, x, cc, hh)

    new_c, new_h = nf.multi_rnn_cell([make(k, b) for k, b in zip(kernels, biases, strict=True)], data, c, h)
    return [*new_c, *new_h]


def _custom_stack_flat(n, data, c, h):
    new_c, new_h = nf.multi_rnn_cell([_custom_cell] * n, data, c, h)
    return [*new_c, *new_h]


def _flat_call(cid: str):
    if cid.startswith("ragged_gather__"):
        return "ragged_gather", _gather_flat
    if cid.startswith("multi_rnn_cell__lstm_"):
        return "multi_rnn_cell", _lstm_stack_flat
    return "multi_rnn_cell", _custom_stack_flat


@pytest.mark.parametrize("case", FLAT_CASES, ids=case_ids(FLAT_CASES))
def test_nested_result_op_matches_tfjs(case, backend):
    op_name, call = _flat_call(case["id"])
    created: list = []
    result = None
    try:
        args = _build(case["args"], created)
        if "error" in case:
            with pytest.raises(OP_ERRORS) as info:
                result = call(*args)
            assert op_name in str(info.value), f"error should name {op_name}: {info.value} (TF.js: {case['error']})"
            return
        result = call(*args)
        assert len(result) == len(case["outputs"]), f"{len(result)} outputs != TF.js {len(case['outputs'])}"
        for k, (got, exp) in enumerate(zip(result, case["outputs"], strict=True)):
            _check_output(case["id"], k, got, exp)
    finally:
        nf.dispose(created + [t for t in _tensors_in(result) if all(t is not c for c in created)])


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_ids(GRAD_CASES))
def test_basic_lstm_cell_grads_match_tfjs(case, backend):
    created: list = []
    try:
        args = _build(case["args"], created)
        wrt = case["grad"]["wrt"]
        dy = _build(case["grad"]["dy"], created) if case["grad"]["dy"] is not None else None

        def f(*xs):
            full = list(args)
            for i, x in zip(wrt, xs, strict=True):
                full[i] = x
            return nf.basic_lstm_cell(*full)[0]

        grads = nf.grads(f)([args[i] for i in wrt], dy)
        created += grads
        for k, (g, want) in enumerate(zip(grads, case["grads"], strict=True)):
            _check_output(case["id"] + " grad", k, g, want)
    finally:
        nf.dispose(created)


# ----------------------------------------------------------------------------- BEYOND_TFJS


def _np(result):
    """A tensor, or (nested) tuples of them, as numpy values; disposes the tensors."""
    if isinstance(result, tuple):
        return type(result)(*(_np(t) for t in result)) if hasattr(result, "_fields") else tuple(map(_np, result))
    values = result.numpy().copy()
    result.dispose()
    return values


def i32(*values):
    return np.asarray(values, np.int32)


V9 = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9], np.float32)
V6x2 = np.arange(1, 7, dtype=np.float32).reshape(3, 2)


def test_beyond_tfjs_ragged_gather_checks_output_ragged_rank(backend):
    with pytest.raises(ValueError, match="ragged_gather: output_ragged_rank must be .* = 1, got 7"):
        nf.ragged_gather([i32(0, 2, 2, 5)], np.arange(5, dtype=np.float32), i32(2, 0, 1), 7)


def test_beyond_tfjs_ragged_gather_splits_must_be_vectors(backend):
    with pytest.raises(ValueError, match=r"ragged_gather: params_nested_splits\[0\] must be a vector"):
        nf.ragged_gather([i32(0, 2, 2, 5).reshape(2, 2)], np.arange(5, dtype=np.float32), i32(0), 1)


def test_beyond_tfjs_ragged_gather_nested_splits_past_next_level(backend):
    """[0, 1, 4] addresses 4 rows of a level that has 3: TF.js returns a tensor of shape [null]."""
    with pytest.raises(ValueError, match=r"ragged_gather: params_nested_splits\[0\] must not point past the 3 rows"):
        nf.ragged_gather([i32(0, 1, 4), i32(0, 2, 2, 5)], np.arange(5, dtype=np.float32), i32(1, 0), 2)


def test_beyond_tfjs_basic_lstm_cell_int32_data_keeps_float_state(backend):
    rng = np.random.default_rng(5)
    kernel, bias = rng.standard_normal((5, 8)).astype(np.float32), rng.standard_normal(8).astype(np.float32)
    data = rng.integers(-5, 5, (2, 3)).astype(np.int32)
    c, h = rng.standard_normal((2, 2)).astype(np.float32), rng.standard_normal((2, 2)).astype(np.float32)
    got_c, got_h = _np(nf.basic_lstm_cell(1.0, kernel, bias, data, c, h))
    want_c, want_h = _np_lstm(1.0, kernel, bias, data.astype(np.float32), c, h)
    np.testing.assert_allclose(got_c, want_c, atol=1e-5)
    np.testing.assert_allclose(got_h, want_h, atol=1e-5)


def test_beyond_tfjs_ragged_range_rejects_bool(backend):
    with pytest.raises(TypeError, match="ragged_range: argument 'starts' must be a float32 or int32 tensor, got bool"):
        nf.ragged_range([True, False], [True, True], True)


@pytest.mark.parametrize("shape", [-1, [], [-1, -1]])
def test_beyond_tfjs_ragged_to_tensor_natural_shape(shape, backend):
    got = _np(nf.ragged_tensor_to_tensor(shape, V9, 1.5, [i32(0, 3, 3, 7, 9)], ["ROW_SPLITS"]))
    want = np.full((4, 4), 1.5, np.float32)
    want[0, :3], want[2, :4], want[3, :2] = V9[:3], V9[3:7], V9[7:]
    np.testing.assert_array_equal(got, want)


def test_beyond_tfjs_ragged_to_tensor_natural_dense_dims(backend):
    got = _np(nf.ragged_tensor_to_tensor([-1, -1, -1], V6x2, 0.0, [i32(0, 1, 3)], ["ROW_SPLITS"]))
    np.testing.assert_array_equal(got, [[[1, 2], [0, 0]], [[3, 4], [5, 6]]])
    with pytest.raises(ValueError, match=r"ragged_tensor_to_tensor: .*shape\[2\] = 3 but the values have 2"):
        nf.ragged_tensor_to_tensor([2, 3, 3], V6x2, 0.0, [i32(0, 1, 3)], ["ROW_SPLITS"])


@pytest.mark.parametrize(
    "default, partitions, types",
    [
        ([7.0, 8.0], [i32(0, 1, 3)], ["ROW_SPLITS"]),
        ([7.0, 8.0], [np.int32(2), i32(0, 1, 1)], ["FIRST_DIM_SIZE", "VALUE_ROWIDS"]),
    ],
)
def test_beyond_tfjs_ragged_to_tensor_vector_default(default, partitions, types, backend):
    got = _np(nf.ragged_tensor_to_tensor([2, 3, 2], V6x2, default, partitions, types))
    want = np.array([[[1, 2], [7, 8], [7, 8]], [[3, 4], [5, 6], [7, 8]]], np.float32)
    np.testing.assert_array_equal(got, want)


def test_beyond_tfjs_ragged_to_tensor_broadcast_defaults(backend):
    values = np.arange(12, dtype=np.float32).reshape(3, 2, 2)
    got = _np(nf.ragged_tensor_to_tensor([3, 2, 2, 2], values, [[7.0, 8.0]], [i32(0, 1, 3)], ["ROW_SPLITS"]))
    want = np.broadcast_to(np.array([7, 8], np.float32), (3, 2, 2, 2)).copy()
    want[0, 0], want[1, :2] = values[0], values[1:]
    np.testing.assert_array_equal(got, want)
    values = np.arange(24, dtype=np.float32).reshape(3, 2, 4)
    got = _np(nf.ragged_tensor_to_tensor([3, 2, 2, 4], values, [7, 8, 9, 10], [i32(0, 1, 1, 3)], ["ROW_SPLITS"]))
    assert (got[1] == [7, 8, 9, 10]).all() and (got[0, 0] == values[0]).all() and (got[2] == values[1:]).all()
    with pytest.raises(ValueError, match="ragged_tensor_to_tensor: default_value of shape .* cannot be broadcast"):
        nf.ragged_tensor_to_tensor(
            [3, 2, 2, 2], np.zeros((3, 2, 2), np.float32), [7.0, 8, 9], [i32(0, 1, 3)], ["ROW_SPLITS"]
        )


def test_beyond_tfjs_ragged_to_tensor_checks_value_rowids(backend):
    fd = np.int32(3)
    with pytest.raises(IndexError, match=r"ragged_tensor_to_tensor: .*\[4\] = -1 is not a row id in \[0, 3\)"):
        nf.ragged_tensor_to_tensor(
            [3, 3], V9, 0.0, [fd, i32(0, 0, 1, 1, -1, 1, 2, 2, 2)], ["FIRST_DIM_SIZE", "VALUE_ROWIDS"]
        )
    for ids in (i32(0, 0, 1, 1, 0, 1, 2, 2, 2), i32(0, 2, 1)):
        with pytest.raises(ValueError, match="ragged_tensor_to_tensor: .* must be sorted"):
            nf.ragged_tensor_to_tensor([3, 3], V9[: ids.size], 0.0, [fd, ids], ["FIRST_DIM_SIZE", "VALUE_ROWIDS"])


def test_beyond_tfjs_ragged_to_tensor_checks_partition_types(backend):
    with pytest.raises(ValueError, match="ragged_tensor_to_tensor: got 2 row_partition_tensors but 1"):
        nf.ragged_tensor_to_tensor([3, 3], V9, 0.0, [i32(0, 1), i32(0, 1, 1, 5)], ["ROW_SPLITS"])
    with pytest.raises(ValueError, match=r"ragged_tensor_to_tensor: row_partition_types\[1\] = 'BOGUS' is not one of"):
        nf.ragged_tensor_to_tensor([3, 3], V9, 0.0, [i32(0, 1, 1, 5)], ["ROW_SPLITS", "BOGUS"])


def test_beyond_tfjs_ragged_to_tensor_partitions_past_values(backend):
    with pytest.raises(ValueError, match="ragged_tensor_to_tensor: the row partitions address value 3, but 'values'"):
        nf.ragged_tensor_to_tensor([3, 3], [1.0, 2.0, 3.0], 0.0, [i32(0, 1, 1, 5)], ["ROW_SPLITS"])


# ----------------------------------------------------------------------------- kernels vs references


def _random_ragged(rng, nrows, ragged_rank, inner=()):
    """Random nested row splits (some rows empty) and values of a ragged tensor."""
    splits, n = [], nrows
    for _ in range(ragged_rank):
        lengths = rng.integers(0, 4, n)
        lengths[rng.random(n) < 0.2] = 0
        s = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
        splits.append(s)
        n = int(s[-1])
    values = rng.standard_normal((n, *inner)).astype(np.float32)
    return splits, values


def _to_nested(splits, values):
    """The ragged tensor as nested Python lists (rows of numpy values)."""
    rows = list(values)
    for s in reversed(splits):
        rows = [rows[s[i] : s[i + 1]] for i in range(len(s) - 1)]
    return rows


def _from_nested(rows, depth):
    """Nested lists -> (splits..., values), the inverse of :func:`_to_nested` for ``depth`` levels."""
    splits = []
    level = rows
    for _ in range(depth):
        splits.append(np.concatenate([[0], np.cumsum([len(r) for r in level])]).astype(np.int32))
        level = [item for r in level for item in r]
    return splits, level


@pytest.mark.parametrize("seed", range(6))
def test_ragged_gather_matches_python_reference(seed, backend):
    rng = np.random.default_rng(seed)
    ragged_rank = 1 + seed % 3
    splits, values = _random_ragged(rng, 5, ragged_rank, inner=(2,) if seed % 2 else ())
    idx_shape = [(), (4,), (2, 3)][seed % 3]
    indices = rng.integers(0, 5, idx_shape).astype(np.int32)
    rows = _to_nested(splits, values)
    picked = [rows[int(i)] for i in indices.reshape(-1)]
    if indices.ndim == 0:
        want_splits, want_values = _from_nested(picked[0], ragged_rank - 1)
    else:
        want_splits, want_values = _from_nested(picked, ragged_rank)
        outer = [
            np.arange(int(np.prod(indices.shape[: d + 1])) + 1) * indices.shape[d + 1] for d in range(indices.ndim - 1)
        ]
        want_splits = outer + want_splits
    r = _np(nf.ragged_gather(splits, values, indices, indices.ndim + ragged_rank - 1))
    assert len(r.output_nested_splits) == len(want_splits)
    for got, want in zip(r.output_nested_splits, want_splits, strict=True):
        np.testing.assert_array_equal(got, want)
    want_values = np.array(want_values, np.float32).reshape((-1, *values.shape[1:]))
    np.testing.assert_array_equal(r.output_dense_values, want_values)


@pytest.mark.parametrize("dtype", ["int32", "float32"])
def test_ragged_range_matches_arange(dtype, backend):
    rng = np.random.default_rng(7)
    starts = rng.integers(-10, 10, 20)
    limits = rng.integers(-10, 10, 20)
    deltas = rng.choice([-3, -2, -1, 1, 2, 3], 20)
    if dtype == "float32":
        starts, limits, deltas = starts * 0.5, limits * 0.75, deltas * 0.25
    s, lim, d = (np.asarray(a, dtype) for a in (starts, limits, deltas))
    rows = [np.arange(a, b, c, dtype=np.float64) for a, b, c in zip(s, lim, d, strict=True)]
    r = _np(nf.ragged_range(s, lim, d))
    np.testing.assert_array_equal(r.rt_nested_splits, np.concatenate([[0], np.cumsum([len(x) for x in rows])]))
    np.testing.assert_allclose(r.rt_dense_values, np.concatenate(rows), atol=1e-5)
    assert r.rt_dense_values.dtype == np.dtype(dtype)


def _to_tensor_reference(rows, shape, default):
    """Dense tensor from nested lists (depth = len(shape) - value rank), cut/padded to ``shape``."""
    out = np.empty(shape, np.float32)
    out[...] = default

    def fill(rows, index):
        if len(index) == len(shape) - (np.ndim(rows) if isinstance(rows, np.ndarray) else 0):
            out[tuple(index)] = rows
            return
        for i, r in enumerate(rows[: shape[len(index)]]):
            fill(r, [*index, i])

    fill(rows, [])
    return out


@pytest.mark.parametrize("seed", range(6))
def test_ragged_to_tensor_matches_python_reference(seed, backend):
    rng = np.random.default_rng(100 + seed)
    ragged_rank = 1 + seed % 3
    inner = (2,) if seed % 2 else ()
    splits, values = _random_ragged(rng, 4, ragged_rank, inner)
    rows = _to_nested(splits, values)
    natural = [4] + [max([len(r) for r in _level(rows, d)], default=0) for d in range(1, ragged_rank + 1)]
    shape = [int(rng.integers(0, n + 2)) for n in natural] + list(inner)
    want = _to_tensor_reference(rows, shape, -1.0)
    # Row splits everywhere, and the same tensor with value_rowids after FIRST_DIM_SIZE.
    got = _np(nf.ragged_tensor_to_tensor(shape, values, -1.0, splits, ["ROW_SPLITS"] * ragged_rank))
    np.testing.assert_array_equal(got, want)
    rowids = [np.repeat(np.arange(len(s) - 1), np.diff(s)).astype(np.int32) for s in splits]
    got = _np(
        nf.ragged_tensor_to_tensor(
            shape, values, -1.0, [np.int32(4), *rowids], ["FIRST_DIM_SIZE"] + ["VALUE_ROWIDS"] * ragged_rank
        )
    )
    np.testing.assert_array_equal(got, want)
    got = _np(nf.ragged_tensor_to_tensor(-1, values, -1.0, splits, ["ROW_SPLITS"] * ragged_rank))
    np.testing.assert_array_equal(got, _to_tensor_reference(rows, natural + list(inner), -1.0))


def _level(rows, depth):
    """The rows ``depth`` levels down (depth 1: the top rows themselves)."""
    level = rows
    for _ in range(depth - 1):
        level = [item for r in level for item in r]
    return level


# ----------------------------------------------------------------------------- RNN cells


def _np_lstm(forget_bias, kernel, bias, data, c, h):
    res = np.concatenate([data, h], 1) @ kernel + bias
    i, j, f, o = np.split(res, 4, axis=1)
    sig = lambda x: 1 / (1 + np.exp(-x))  # noqa: E731
    new_c = sig(i) * np.tanh(j) + c * sig(forget_bias + f)
    return new_c, np.tanh(new_c) * sig(o)


def test_multi_rnn_cell_stacks_basic_lstm_cells(backend):
    rng = np.random.default_rng(3)
    sizes = [(4, 3), (3, 5), (5, 2)]  # (input, units) per layer
    kernels = [rng.standard_normal((n_in + n, 4 * n)).astype(np.float32) for n_in, n in sizes]
    biases = [rng.standard_normal(4 * n).astype(np.float32) for _, n in sizes]
    c = [rng.standard_normal((2, n)).astype(np.float32) for _, n in sizes]
    h = [rng.standard_normal((2, n)).astype(np.float32) for _, n in sizes]
    x = rng.standard_normal((2, 4)).astype(np.float32)
    cells = [
        lambda d, cc, hh, k=k, b=b: nf.basic_lstm_cell(1.0, k, b, d, cc, hh)
        for k, b in zip(kernels, biases, strict=True)
    ]
    new_c, new_h = _np(nf.multi_rnn_cell(cells, x, c, h))
    inp = x
    for i in range(3):
        want_c, want_h = _np_lstm(1.0, kernels[i], biases[i], inp, c[i], h[i])
        np.testing.assert_allclose(new_c[i], want_c, atol=1e-5)
        np.testing.assert_allclose(new_h[i], want_h, atol=1e-5)
        inp = want_h


def test_rnn_cells_dispose_their_temporaries(backend):
    before = nf.memory().num_tensors
    out = nf.basic_lstm_cell(1, np.zeros((3, 4), np.float32), [0, 0, 0, 0], [[0.0, 1.0]], [[0.5]], [[0.1]])
    assert nf.memory().num_tensors == before + 2
    nf.dispose(out)
    # A cell that returns its (converted) states: they become results, not disposed temporaries.
    new_c, new_h = nf.multi_rnn_cell([lambda x, c, h: (c, h)], [[1.0]], [[[2.0]]], [[[3.0]]])
    assert new_c[0].numpy().tolist() == [[2.0]] and new_h[0].numpy().tolist() == [[3.0]]
    nf.dispose([new_c, new_h])
    with pytest.raises(ValueError, match=r"multi_rnn_cell: lstm_cells\[0\]: basic_lstm_cell: "):
        nf.multi_rnn_cell(
            [lambda x, c, h: nf.basic_lstm_cell(1.0, np.zeros((9, 4), np.float32), [0.0] * 4, x, c, h)],
            [[1.0]],
            [[[2.0]]],
            [[[3.0]]],
        )
    assert nf.memory().num_tensors == before


def test_rnn_cell_argument_errors(backend):
    with pytest.raises(TypeError, match="multi_rnn_cell: lstm_cells\\[0\\] must be a function"):
        nf.multi_rnn_cell([1], [[1.0]], [[[2.0]]], [[[3.0]]])
    with pytest.raises(TypeError, match="multi_rnn_cell: lstm_cells\\[0\\] must return a pair of tensors"):
        nf.multi_rnn_cell([lambda x, c, h: x], [[1.0]], [[[2.0]]], [[[3.0]]])
    with pytest.raises(ValueError, match="basic_lstm_cell: lstm_kernel must have 4 \\* units columns"):
        nf.basic_lstm_cell(1.0, np.zeros((3, 6), np.float32), [0.0] * 6, [[0.0, 1.0]], [[0.5]], [[0.1]])
