"""The lean forms of some gradients (fewer kernels than TF.js runs, the same values).

Each test checks the values and, through ``nf.profile``, which kernels the backward pass runs: the
point of these forms is the kernels they leave out.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import ndflow as nf


def _backward_kernels(f, x: nf.Tensor) -> tuple[np.ndarray, list[str]]:
    """(df/dx, names of the kernels that computing it ran) with the all-ones seed."""
    info = nf.profile(lambda: nf.grad(f)(x))
    g = info.result
    try:
        return g.numpy(), [k.name for k in info.kernels]
    finally:
        g.dispose()


def test_clip_by_value_gradient_from_the_output(backend):
    x = nf.tensor([-2.0, 0.0, 0.5, 1.0, 3.0, math.nan, -0.0])
    try:
        g, kernels = _backward_kernels(lambda t: nf.clip_by_value(t, 0.0, 1.0), x)
    finally:
        x.dispose()
    # bounds included (TF.js), NaN outside, -0 equals the lower bound 0
    np.testing.assert_array_equal(g, [0, 1, 1, 1, 0, 0, 1])
    assert kernels.count("ClipByValue") == 1  # the forward one only
    assert not {"GreaterEqual", "LessEqual", "LogicalAnd", "ZerosLike"} & set(kernels)


def test_clip_by_value_second_order_is_zero(backend):
    x = nf.tensor([-1.0, 0.5, 2.0])
    try:
        gg, _ = _backward_kernels(nf.grad(lambda t: nf.clip_by_value(t, 0.0, 1.0)), x)
    finally:
        x.dispose()
    np.testing.assert_array_equal(gg, [0, 0, 0])


@pytest.mark.parametrize(
    ("x_shape", "b_shape"),
    [((4, 3), (1, 3)), ((4, 3), (3,)), ((2, 4, 3), (4, 1)), ((2, 4, 3), (1, 1, 3)), ((4, 3), (4, 3))],
)
def test_broadcast_gradient_sums_in_one_kernel(backend, x_shape, b_shape):
    rng = np.random.default_rng(0)
    x_np = rng.standard_normal(x_shape).astype(np.float32)
    b = nf.tensor(rng.standard_normal(b_shape).astype(np.float32))
    x = nf.tensor(x_np)
    try:
        g, kernels = _backward_kernels(lambda t: nf.mul(nf.add(x, t), nf.add(x, t)), b)
        b_np = b.numpy()
    finally:
        nf.dispose([x, b])
    full = 2 * (x_np + b_np)
    added = len(x_shape) - len(b_shape)
    axes = tuple(i for i in range(len(x_shape)) if i < added or b_shape[i - added] == 1 and x_shape[i] != 1)
    expected = full.sum(axis=axes, keepdims=True).reshape(b_shape) if axes else full
    np.testing.assert_allclose(g, expected, rtol=1e-5, atol=1e-5)
    backward = kernels[kernels.index("Multiply") + 1 :]  # after the forward product
    stretched = any(i >= added for i in axes)
    # one sum for each of the two additions' b, and a reshape after it only where leading axes were
    # added and others stretched as well
    assert backward.count("Sum") == (2 if axes else 0)
    assert backward.count("Reshape") == (2 if axes and added and stretched else 0)


@pytest.mark.parametrize(("axis", "keep"), [(None, False), (0, False), (1, True), (-1, False)])
def test_sum_and_mean_gradients(backend, axis, keep):
    x_np = np.arange(12, dtype=np.float32).reshape(3, 4)
    x = nf.tensor(x_np)
    try:
        gs, sum_kernels = _backward_kernels(lambda t: nf.mul(nf.sum(t, axis, keep), 3.0), x)
        gm, _ = _backward_kernels(lambda t: nf.mean(t, axis, keep), x)
    finally:
        x.dispose()
    np.testing.assert_array_equal(gs, np.full((3, 4), 3, np.float32))
    count = x_np.size if axis is None else x_np.shape[axis]
    np.testing.assert_allclose(gm, np.full((3, 4), 1 / count, np.float32), rtol=1e-6)
    if axis is None or axis == 0 or keep:  # broadcasting aligns the reduced gradient: no reshape needed
        assert "Reshape" not in sum_kernels


def test_max_gradient_shares_ties(backend):
    x = nf.tensor([[1.0, 3.0, 3.0], [2.0, 0.0, -1.0]])
    try:
        g, kernels = _backward_kernels(lambda t: nf.max(t, 1), x)
    finally:
        x.dispose()
    np.testing.assert_array_equal(g, [[0, 1, 1], [1, 0, 0]])
    assert "BroadcastTo" not in kernels
