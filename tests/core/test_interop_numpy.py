"""numpy on tensors: functions return numpy values, numpy dtypes are dtypes, int64 range, Python protocols."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf


@pytest.fixture
def t():
    x = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    yield x
    x.dispose()


@pytest.mark.parametrize("fn", [np.sum, np.mean, np.max, np.min, np.std, np.prod, np.argmax, np.cumsum, np.median])
def test_numpy_functions_return_numpy_values(t, fn):
    before = nf.memory().num_tensors
    got = fn(t)
    assert not isinstance(got, nf.Tensor)
    np.testing.assert_allclose(got, fn(t.numpy()))
    assert nf.memory().num_tensors == before  # nothing to dispose


def test_numpy_functions_with_arguments_and_lists(t):
    np.testing.assert_array_equal(np.sum(t, axis=0), [4.0, 6.0])
    np.testing.assert_array_equal(np.mean(t, axis=1, keepdims=True), [[1.5], [3.5]])
    assert np.concatenate([t, t]).shape == (4, 2)
    assert np.stack((t, t), axis=-1).shape == (2, 2, 2)
    np.testing.assert_array_equal(np.where(np.asarray(t) > 2, t, 0), [[0, 0], [3, 4]])
    assert np.allclose(t, [[1, 2], [3, 4]])
    view = np.reshape(t, (4,))
    assert isinstance(view, np.ndarray) and not view.flags.writeable  # tensors are immutable


def test_ufuncs_return_numpy_and_operators_stay_tensors(t):
    root = np.sqrt(t)
    assert isinstance(root, np.ndarray)
    np.testing.assert_allclose(root, np.sqrt([[1, 2], [3, 4]]))
    left, right = np.ones(2) + t, t + np.ones(2)
    assert isinstance(left, nf.Tensor) and isinstance(right, nf.Tensor)
    assert left.tolist() == [[2.0, 3.0], [4.0, 5.0]]
    nf.dispose([left, right])


def test_array_protocol_copy_argument(t):
    assert not np.asarray(t).flags.writeable
    assert np.array(t).flags.writeable  # np.array copies
    assert np.asarray(t, dtype=np.float64).dtype == np.float64
    with pytest.raises(ValueError, match="needs a copy"):
        t.__array__(np.float64, copy=False)


@pytest.mark.parametrize("dtype", [np.float32, np.dtype("float32"), "float32", np.int32, np.dtype("int32"),
                                   np.bool_, bool, np.complex64])  # fmt: skip
def test_numpy_dtypes_are_dtypes(dtype):
    x = nf.tensor([1.0], dtype=dtype)
    assert x.dtype == np.dtype(dtype).name
    y = nf.cast(x, dtype)
    z = nf.zeros([2], dtype=dtype)
    assert y.dtype == z.dtype == x.dtype
    nf.dispose([x, y, z])


def test_torch_dtypes_are_dtypes():
    torch = pytest.importorskip("torch")
    x = nf.tensor([1, 2], dtype=torch.int32)
    assert x.dtype == "int32"
    x.dispose()


def test_unstored_dtype_is_refused_with_a_hint():
    with pytest.raises(TypeError, match=r"tensor: .*got 'float64' \(ndflow stores float64 values as float32"):
        nf.tensor([1.0], dtype=np.float64)
    with pytest.raises(TypeError, match="got 'int64'.*'int32'"):
        nf.zeros([1], dtype="int64")


def test_int64_out_of_int32_range_is_an_error_naming_the_op():
    with pytest.raises(OverflowError, match=r"tensor: value 1099511627776 is outside int32's range.*INT64_WRAP"):
        nf.tensor(np.array([2**40]))
    with pytest.raises(OverflowError, match="outside int32's range"):
        nf.tensor([3e10], dtype="int32")
    with pytest.raises(OverflowError, match="int64's range"):
        nf.tensor([2**70], dtype="int32")
    ok = nf.tensor(np.array([-(2**31), 2**31 - 1]))
    assert ok.tolist() == [-(2**31), 2**31 - 1]
    ok.dispose()


def test_int64_wrap_flag_wraps_as_tfjs():
    nf.env().set("INT64_WRAP", True)
    x = nf.tensor(np.array([2**40 + 5, -(2**31) - 1]))
    y = nf.tensor([2.0**32 + 7.9, -1.5], dtype="int32")
    assert x.tolist() == [5, 2**31 - 1]  # modulo 2**32, as Int32Array stores them
    assert y.tolist() == [7, -1]
    nf.dispose([x, y])


def test_item_tolist_ndim(t):
    s = nf.scalar(2.5)
    i = nf.tensor([7], dtype="int32")
    assert (s.item(), i.item(), t.tolist(), t.ndim, s.ndim) == (2.5, 7, [[1.0, 2.0], [3.0, 4.0]], 2, 0)
    assert isinstance(i.item(), int)
    with pytest.raises(ValueError, match="one element"):
        t.item()
    nf.dispose([s, i])


def test_format_follows_torch(t):
    s = nf.scalar(3.14159)
    assert f"{s:.2f}" == "3.14"
    assert f"{s}" == str(s)
    assert f"{t}" == str(t)
    with pytest.raises(TypeError, match="rank-0"):
        f"{t:.2f}"
    s.dispose()


def test_repr_html(t):
    page = t._repr_html_()
    assert page.startswith("<pre>") and "shape: [2,2]" in page
    label = nf.tensor(["<b>"])
    assert "&lt;b&gt;" in label._repr_html_()
    label.dispose()


def test_python_int_beside_an_int32_tensor_is_range_checked():
    i = nf.tensor([1, 2], dtype="int32")
    with pytest.raises(OverflowError, match="combining 1099511627776 with a int32 tensor.*outside int32's range"):
        i + 2**40
    nf.env().set("INT64_WRAP", True)
    wrapped = i + (2**32 + 1)
    assert wrapped.tolist() == [2, 3]
    nf.dispose([i, wrapped])
