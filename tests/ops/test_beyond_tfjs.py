"""Where ndflow deliberately does better than TF.js 4.22 (docs/beyond-tfjs.md)."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf


def test_mat_mul_broadcasts_batch_dims_fully(backend):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((2, 1, 2, 3)).astype(np.float32)
    b = rng.standard_normal((3, 3, 2)).astype(np.float32)
    ta, tb = nf.tensor(a), nf.tensor(b)
    y = nf.mat_mul(ta, tb)
    assert y.shape == (2, 3, 2, 2)
    np.testing.assert_allclose(y.numpy(), a @ b, atol=1e-5)
    yt = nf.mat_mul(tb, ta, True, True)  # (b^T a^T) = (a b)^T
    np.testing.assert_allclose(yt.numpy(), np.swapaxes(a @ b, -1, -2), atol=1e-5)
    nf.dispose([ta, tb, y, yt])


def test_python_scalar_temporaries_are_disposed(backend):
    x = nf.tensor([1.0, 2.0])
    before = nf.memory().num_tensors
    y = x + 1
    z = nf.mul(2, x)
    assert nf.memory().num_tensors == before + 2  # only the results
    np.testing.assert_array_equal(y.numpy(), [2, 3])
    np.testing.assert_array_equal(z.numpy(), [2, 4])
    nf.dispose([x, y, z])


def test_dtype_matching_casts_are_disposed(backend):
    i = nf.tensor([1, 2], dtype="int32")
    f = nf.tensor([0.5, 0.5])
    before = nf.memory().num_tensors
    y = nf.add(i, f)
    assert y.dtype == "float32"
    assert nf.memory().num_tensors == before + 1
    np.testing.assert_array_equal(y.numpy(), [1.5, 2.5])
    nf.dispose([i, f, y])


@pytest.mark.parametrize(
    ("scalar", "dtype", "values"),
    [(1, "int32", [2, 3]), (1.5, "float32", [2.5, 3.5]), (True, "int32", [2, 3])],
)
def test_python_scalars_are_weakly_typed(backend, scalar, dtype, values):
    i = nf.tensor([1, 2], dtype="int32")
    y = i + scalar
    assert y.dtype == dtype
    np.testing.assert_array_equal(y.numpy(), values)
    nf.dispose([i, y])


def test_num_bytes_counts_shared_buffers_once(backend):
    before = nf.memory()
    x = nf.zeros([10, 10])
    r = nf.reshape(x, [100])
    c = nf.clone(x)
    m = nf.memory()
    assert m.num_tensors == before.num_tensors + 3
    assert m.num_data_buffers == before.num_data_buffers + 1
    assert m.num_bytes == before.num_bytes + 400
    nf.dispose([x, r])
    assert nf.memory().num_bytes == before.num_bytes + 400  # c still holds the buffer
    c.dispose()
    assert nf.memory().num_bytes == before.num_bytes


def test_true_division_operator(backend):
    i = nf.tensor([7, -7], dtype="int32")
    two = nf.tensor([2, 2], dtype="int32")
    q, d, fd = i / two, nf.div(i, two), i // two
    assert (q.dtype, d.dtype, fd.dtype) == ("float32", "int32", "int32")
    np.testing.assert_array_equal(q.numpy(), [3.5, -3.5])
    np.testing.assert_array_equal(d.numpy(), [3, -4])
    np.testing.assert_array_equal(fd.numpy(), [3, -4])
    nf.dispose([i, two, q, d, fd])
