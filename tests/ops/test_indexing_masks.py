"""Boolean-mask and integer-array indexing (``t[t > 2]``, ``t[[0, 1]]``, ``t[nf.tensor([0, 1])]``)."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf

VALUES = np.arange(24, dtype=np.float32).reshape(2, 3, 4)


def _check(t, key, np_key=None):
    got = t[key]
    try:
        np.testing.assert_array_equal(got.numpy(), VALUES[key if np_key is None else np_key])
    finally:
        got.dispose()


@pytest.mark.parametrize(
    "key",
    [
        [1, 0], [-1], [[0, 1], [1, 1]], np.array([1, 0]), (slice(None), [2, 0]), (0, [2, 0, 2]), (..., [3, 0]),
        (None, slice(None), [1]), (1, slice(None, None, 2), [0, 3]), np.array([True, False]),
        (slice(None), np.array([False, True, True])), np.arange(24).reshape(2, 3, 4) % 5 == 0,
        (0, np.array([[True, False, True, False]] * 3)), [], (slice(1, None), [0], 1),
    ],
)  # fmt: skip
def test_like_numpy(backend, key):
    t = nf.tensor(VALUES)
    try:
        _check(t, key)
    finally:
        t.dispose()


def test_tensor_indices_and_masks(backend):
    t = nf.tensor(VALUES)
    idx = nf.tensor([1, 0], dtype="int32")
    mask = t > 10
    one = nf.scalar(1, "int32")
    try:
        _check(t, idx, [1, 0])
        _check(t, mask, VALUES > 10)
        _check(t, (0, idx), (0, [1, 0]))
        _check(t, one, 1)
        _check(t, (one, idx), (1, [1, 0]))
    finally:
        nf.dispose([t, idx, mask, one])


def test_mask_of_no_true_value_is_empty():
    t = nf.tensor([1.0, 2.0])
    mask = t > 5
    got = t[mask]
    assert got.shape == (0,)
    nf.dispose([t, mask, got])


def test_gradients_flow_through_masks_and_index_arrays():
    x = nf.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    g_mask = nf.grad(lambda v: nf.sum(v[v > 2] * 2))(x)
    g_idx = nf.grad(lambda v: nf.sum(v[:, [0, 0, 2]]))(x)
    assert g_mask.tolist() == [[0.0, 0.0, 2.0], [2.0, 2.0, 2.0]]
    assert g_idx.tolist() == [[2.0, 0.0, 1.0], [2.0, 0.0, 1.0]]
    nf.dispose([x, g_mask, g_idx])


@pytest.mark.parametrize(
    "key, error, match",
    [
        ([5], IndexError, "index 5 is out of bounds for axis 0 with size 2"),
        ([0.5], IndexError, "must hold ints or bools"),
        (([0], [1]), IndexError, "only one array index"),
        (np.array([True]), IndexError, r"boolean index of shape \[1\] does not match"),
        ((0, 0, 0, [0]), IndexError, "too many indices"),
    ],
)
def test_errors(key, error, match):
    t = nf.tensor(VALUES)
    try:
        with pytest.raises(error, match=match):
            t[key]
    finally:
        t.dispose()


def test_float_tensor_index_is_refused():
    t, index = nf.tensor([1.0, 2.0]), nf.tensor([0.0])
    with pytest.raises(IndexError, match="int32 or bool"):
        t[index]
    nf.dispose([t, index])
