"""``nf.sparse_to_dense``, ``nf.sparse.*`` and ``nf.string.*`` against real TF.js 4.22 (cpu backend).

The cases live in ``tests/fixtures/losses_sparse_string.json``; regenerate them with
``python tests/fixtures/gen_losses_sparse_string.py``. Ops returning objects in TF.js return named
tuples whose fields come in TF.js's order. Below the fixture: ndflow's deliberate differences
(``BEYOND_TFJS``) and checks of the vectorised kernels against plain-Python references.
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_cases import case_ids, load_cases, run_case

import ndflow as nf

BEYOND_TFJS = {
    "sparse_to_dense__column_out_of_range_in_flat_range": "TF.js checks only the flattened offset, so [0, 2] "
    "writes out[1, 0]; ndflow raises IndexError",
    "sparse_to_dense__negative_column_in_flat_range": "TF.js checks only the flattened offset, so [1, -1] "
    "writes out[0, 1]; ndflow raises IndexError",
    "sparse_to_dense__default_not_scalar": "TF.js silently uses the first element of a non-scalar default_value; "
    "ndflow raises ValueError",
    "sparse_to_dense__index_into_empty_output": "TF.js ignores every index when the output is empty; ndflow raises "
    "IndexError for an index that addresses nothing",
    "sparse_fill_empty_rows__values_too_short": "TF.js reads past the end of 'values' (NaN); ndflow requires one "
    "value per row of 'indices'",
    "sparse_reshape__index_out_of_range": "TF.js maps out-of-range input indices to out-of-range output indices; "
    "ndflow raises IndexError",
    "sparse_reshape__rank_mismatch": "TF.js reads indices with the stride of input_shape's length and returns "
    "garbage; ndflow raises ValueError",
    "string_split__empty_delimiter_unicode": "TF.js splits UTF-8 bytes, cutting 'é' into two invalid strings; "
    "ndflow splits characters",
    "string_to_hash_bucket_fast__fractional_buckets": "TF.js truncates a fractional bucket count; ndflow raises "
    "TypeError",
    "string_n_grams__no_splits_with_data": "TF.js returns an array of nulls as long as the data; ndflow returns no "
    "n-grams (no rows)",
}
_FAMILY = ("sparseToDense", "sparse.", "string.")
CASES = [c for c in load_cases("losses_sparse_string", BEYOND_TFJS) if c["op"].startswith(_FAMILY)]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_sparse_string_op_matches_tfjs(case, backend):
    run_case(case)


def _np(result):
    """Named tuple or tensor -> numpy values, disposing the tensors."""
    if isinstance(result, tuple):
        return type(result)(*(_np(t) for t in result))
    values = result.numpy().copy()
    result.dispose()
    return values


def i32(values):
    return np.asarray(values, np.int32)


# ----------------------------------------------------------------------------- BEYOND_TFJS


@pytest.mark.parametrize("index", [[[0, 2], [1, 0]], [[1, -1], [1, 0]]])
def test_beyond_tfjs_sparse_to_dense_checks_each_coordinate(index, backend):
    with pytest.raises(IndexError, match=r"sparse_to_dense: sparse_indices\[0\] .* out of bounds"):
        nf.sparse_to_dense(index, [5.0, 6.0], [2, 2])


def test_beyond_tfjs_sparse_to_dense_default_must_be_scalar(backend):
    with pytest.raises(ValueError, match="sparse_to_dense: argument 'default_value' must be a scalar"):
        nf.sparse_to_dense([[1, 1], [1, 0]], [5.0, 6.0], [2, 2], [3.0, 4.0])


def test_beyond_tfjs_sparse_to_dense_index_into_empty_output(backend):
    with pytest.raises(IndexError, match="sparse_to_dense"):
        nf.sparse_to_dense([1], [5.0], [0])
    got = _np(nf.sparse_to_dense(i32(np.zeros((0, 1))), np.zeros(0, np.float32), [0]))
    assert got.shape == (0,)


def test_beyond_tfjs_sparse_fill_empty_rows_values_length(backend):
    with pytest.raises(ValueError, match="sparse_fill_empty_rows: argument 'values' must have one value per row"):
        nf.sparse.sparse_fill_empty_rows([[1, 0], [0, 0]], [1.0], [2, 2], 0.0)


def test_beyond_tfjs_sparse_reshape_checks_indices(backend):
    with pytest.raises(IndexError, match=r"sparse_reshape: input_indices\[1\] = \[1, 5\]"):
        nf.sparse.sparse_reshape([[0, 1], [1, 5]], [2, 2], [-1])
    with pytest.raises(ValueError, match="sparse_reshape: input_indices has 2 columns"):
        nf.sparse.sparse_reshape([[0, 1], [1, 1]], [2, 2, 1], [4])


def test_beyond_tfjs_string_split_characters(backend):
    r = _np(nf.string.string_split(["héllo", "de"], ""))
    assert r.values.tolist() == ["h", "é", "l", "l", "o", "d", "e"]
    assert r.indices.tolist() == [[0, 0], [0, 1], [0, 2], [0, 3], [0, 4], [1, 0], [1, 1]]
    assert r.shape.tolist() == [2, 5]


def test_beyond_tfjs_hash_bucket_count_must_be_int(backend):
    with pytest.raises(TypeError, match="string_to_hash_bucket_fast: argument 'num_buckets' must be an int"):
        nf.string.string_to_hash_bucket_fast(["a"], 2.5)


def test_beyond_tfjs_string_n_grams_without_rows(backend):
    r = _np(nf.string.string_n_grams(["a", "b"], i32(np.zeros(0)), "|", [2], "", "", 1, False))
    assert r.n_grams.shape == (0,) and r.n_grams_splits.shape == (0,)


# ----------------------------------------------------------------------------- kernels vs references


def _fill_empty_rows_reference(indices, values, dense_rows, default):
    """TF.js's algorithm, written as loops."""
    rows = [[] for _ in range(dense_rows)]
    for i, (idx, v) in enumerate(zip(indices, values, strict=True)):
        rows[idx[0]].append((i, list(idx), v))
    out_idx, out_val, reverse = [], [], [0] * len(values)
    for r, entries in enumerate(rows):
        if not entries:
            out_idx.append([r] + [0] * (indices.shape[1] - 1))
            out_val.append(default)
        for i, idx, v in entries:
            reverse[i] = len(out_val)
            out_idx.append(idx)
            out_val.append(v)
    return out_idx, out_val, [not e for e in rows], reverse


@pytest.mark.parametrize("seed", range(5))
def test_sparse_fill_empty_rows_against_reference(seed, backend):
    rng = np.random.default_rng(seed)
    dense_rows, n = int(rng.integers(1, 12)), int(rng.integers(0, 20))
    indices = np.stack([rng.integers(0, dense_rows, n), rng.integers(0, 5, n)], axis=1).astype(np.int32)
    values = rng.normal(size=n).astype(np.float32)
    r = _np(nf.sparse.sparse_fill_empty_rows(indices, values, i32([dense_rows, 5]), -1.0))
    want = _fill_empty_rows_reference(indices, values, dense_rows, -1.0)
    assert r.output_indices.reshape(-1, 2).tolist() == want[0]
    np.testing.assert_array_equal(r.output_values, np.array(want[1], np.float32))
    assert r.empty_row_indicator.tolist() == want[2]
    assert r.reverse_index_map.tolist() == want[3]


@pytest.mark.parametrize("mean", [False, True])
def test_sparse_segment_reduction_against_reference(mean, backend):
    rng = np.random.default_rng(7)
    data = rng.normal(size=(6, 3)).astype(np.float32)
    ids = np.sort(rng.integers(0, 8, 15)).astype(np.int32)
    idx = rng.integers(0, 6, 15).astype(np.int32)
    op = nf.sparse.sparse_segment_mean if mean else nf.sparse.sparse_segment_sum
    got = _np(op(data, idx, ids))
    want = np.zeros((ids[-1] + 1, 3), np.float64)
    for segment in np.unique(ids):
        rows = data[idx[ids == segment]].astype(np.float64)
        want[segment] = rows.mean(axis=0) if mean else rows.sum(axis=0)
    np.testing.assert_allclose(got, want, atol=1e-5)


def test_sparse_reshape_against_numpy(backend):
    rng = np.random.default_rng(1)
    shape, new_shape = (3, 4, 5), (6, -1, 2)
    flat = rng.choice(60, 12, replace=False)
    indices = np.stack(np.unravel_index(flat, shape), axis=1).astype(np.int32)
    r = _np(nf.sparse.sparse_reshape(indices, i32(list(shape)), i32(list(new_shape))))
    assert r.output_shape.tolist() == [6, 5, 2]
    np.testing.assert_array_equal(r.output_indices, np.stack(np.unravel_index(flat, (6, 5, 2)), axis=1))


def test_sparse_to_dense_last_duplicate_wins(backend):
    idx = np.array([3, 1, 3, 3, 0, 1], np.int32)
    vals = np.arange(6, dtype=np.int32) + 10
    got = _np(nf.sparse_to_dense(idx, vals, [5], -1))
    np.testing.assert_array_equal(got, [14, 15, -1, 13, -1])


def test_named_tuples(backend):
    r = nf.sparse.sparse_fill_empty_rows([[1, 0]], [1.0], [2, 2], 0.0)
    assert r._fields == ("output_indices", "output_values", "empty_row_indicator", "reverse_index_map")
    nf.dispose(list(r))
    r = nf.sparse.sparse_reshape([[1, 0]], [2, 2], [4])
    assert r._fields == ("output_indices", "output_shape")
    nf.dispose(list(r))
    r = nf.string.string_split(["a b"], " ")
    assert r._fields == ("indices", "values", "shape")
    nf.dispose(list(r))
    r = nf.string.string_n_grams(["a", "b"], i32([0, 2]), " ", [2], "", "", 0, False)
    assert r._fields == ("n_grams", "n_grams_splits")
    nf.dispose(list(r))


# ----------------------------------------------------------------------------- strings


@pytest.mark.parametrize(
    "pattern, rewrite, text, want",
    [
        ("(?<=a)b", "X", "abab cb", "aXaX cb"),  # lookbehind is not a named group
        ("(?<!a)b", "X", "ab cb", "ab cX"),
        ("(?<w>o)\\k<w>", "0", "foo boo bo", "f0 b0 bo"),
        ("[^]", ".", "a\nb", "..."),  # JavaScript: any character
        ("x[]", "-", "x", "x"),  # JavaScript: an empty class matches nothing
        ("[^\\d]", "_", "a1b2", "_1_2"),
        ("b$", "B", "ab\n", "ab\n"),  # JavaScript's $ is the end of input, not before a final newline
        ("\\d", "#", "1٣", "#٣"),  # JavaScript's \d is ASCII
        ("(a)|(b)", "[$2]", "ab", "[][b]"),  # an unmatched group is empty
        ("a", "$<x>", "a", "$<x>"),  # no named groups: literal
    ],
)
def test_static_regex_replace_javascript_semantics(pattern, rewrite, text, want, backend):
    assert _np(nf.string.static_regex_replace([text], pattern, rewrite)).tolist() == [want]


def test_static_regex_replace_argument_errors(backend):
    with pytest.raises(TypeError, match="static_regex_replace: argument 'pattern' must be a str"):
        nf.string.static_regex_replace(["a"], 1, "b")
    with pytest.raises(ValueError, match="static_regex_replace: invalid regular expression"):
        nf.string.static_regex_replace(["a"], "a)", "b")


def test_string_ops_accept_plain_python_strings(backend):
    assert _np(nf.string.string_to_hash_bucket_fast("hello world", 1000)).tolist() == 11
    assert _np(nf.string.static_regex_replace("banana", "a", "o", False)).tolist() == "bonana"


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"n_gram_widths": 2}, ValueError, "non-empty list"),
        ({"n_gram_widths": [2, -1]}, ValueError, "positive"),
        ({"n_gram_widths": [2.0]}, TypeError, "'n_gram_widths' must be an int"),
        ({"pad_width": 1.5}, TypeError, "'pad_width' must be an int"),
        ({"separator": None}, TypeError, "'separator' must be a str"),
    ],
)
def test_string_n_grams_argument_errors(kwargs, error, match, backend):
    args = {"separator": " ", "n_gram_widths": [2], "left_pad": "", "right_pad": "", "pad_width": 0}
    args.update(kwargs)
    with pytest.raises(error, match=f"string_n_grams: .*{match}"):
        nf.string.string_n_grams(["a"], i32([0, 1]), preserve_short_sequences=False, **args)


def test_hash_bucket_count_range(backend):
    with pytest.raises(ValueError, match="string_to_hash_bucket_fast: argument 'num_buckets' must be in"):
        nf.string.string_to_hash_bucket_fast(["a"], 2**31)
