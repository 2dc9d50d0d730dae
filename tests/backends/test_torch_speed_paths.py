"""The torch backend's speed paths keep TF.js's results: the per-kernel thread policy (``_threads``), the
float forms of bool work (``_bools``), the fused convolution / product / pooling shortcuts, the Step kernel's
comparison, MaxPoolGrad from the arg-max positions the forward pass kept, views for small slices, and
channels_last backprop of convolutions. Each path is checked against the cpu backend (the reference) or
against torch's plain result, on the inputs that make it take the path and on those that must not."""

from __future__ import annotations

import math

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.kernel_registry import kernel_table

torch = pytest.importorskip("torch", reason="the torch backend needs torch (pip install -e '.[torch]')")

from ndflow.backends.torch.kernels import _bools, _threads, pool  # noqa: E402


@pytest.fixture
def on_torch(on_torch):
    """The torch backend (tests/backends/conftest.py), on the CPU: the paths tested here are CPU paths."""
    if on_torch.is_cuda:
        pytest.skip("the thread policy and the host shortcuts are CPU paths")
    return on_torch


@pytest.fixture
def two_threads():
    """torch with two intra-op threads for the test (the count restored afterwards)."""
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    yield
    torch.set_num_threads(before)


def on_both(fn, *arrays: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``fn(*tensors)`` on torch and on cpu, as numpy (everything made inside a tidy)."""
    results = []
    for name in ("torch", "cpu"):
        before = nf.get_backend()
        nf.set_backend(name)
        try:
            results.append(nf.tidy(lambda: fn(*[nf.tensor(a) for a in arrays]).numpy().copy()))
        finally:
            nf.set_backend(before)
    return results[0], results[1]


class _FakeTensor:
    def __init__(self, size: int) -> None:
        self.size = size


class _FakeBackend:
    is_cuda = False


# ---------------------------------------------------------------------------------------------
# thread policy
# ---------------------------------------------------------------------------------------------
def _seen_threads(kernel_wrapper, sizes: list[int], attrs=None) -> int:
    seen = []

    def kernel(backend, inputs, attrs):
        seen.append(torch.get_num_threads())
        return "done"

    assert kernel_wrapper(kernel)(_FakeBackend(), tuple(_FakeTensor(n) for n in sizes), attrs) == "done"
    return seen[0]


def test_mid_sized_kernels_run_on_one_thread_and_restore_the_count(two_threads):
    assert _seen_threads(_threads.by_elements, [100_000]) == 1
    assert _seen_threads(_threads.by_elements, [40_000, 40_000]) == 1
    assert torch.get_num_threads() == 2


def test_tiny_and_large_kernels_keep_the_threads(two_threads):
    assert _seen_threads(_threads.by_elements, [1000]) == 2  # torch stays serial below its grain anyway
    assert _seen_threads(_threads.by_elements, [_threads.PARALLEL_ELEMENTS]) == 2


def test_thread_count_restored_when_the_kernel_raises(two_threads):
    def kernel(backend, inputs, attrs):
        assert torch.get_num_threads() == 1
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        _threads.by_elements(kernel)(_FakeBackend(), (_FakeTensor(100_000),), None)
    assert torch.get_num_threads() == 2


def test_estimates_decide_for_products_and_convolutions(two_threads):
    class T:
        def __init__(self, shape):
            self.shape = shape
            self.size = math.prod(shape)

    small = (T((1, 64, 64, 3)), T((3, 3, 3, 16)))
    large = (T((1, 224, 224, 32)), T((3, 3, 32, 64)))
    assert not _threads.conv_forward_flops(small, {"strides": (1, 1)})
    assert _threads.conv_forward_flops(large, {"strides": (1, 1)})
    assert not _threads.conv_forward_flops(large, {"strides": (16, 16)})  # a 256th of the output positions
    # about 16.5 MFLOP each: enough for a 1x1 convolution (a matrix product), not for a 3x3 one
    assert _threads.conv_forward_flops((T((1, 32, 32, 64)), T((1, 1, 64, 128))), {"strides": 1})
    assert not _threads.conv_forward_flops((T((1, 32, 32, 64)), T((3, 3, 64, 14))), {"strides": 1})
    assert not _threads.matmul_flops((T((32, 256)), T((256, 256))), {})
    assert _threads.matmul_flops((T((256, 1024)), T((1024, 1024))), {})
    assert _threads.filter_grad_flops((T((32, 28, 28, 1)), T((32, 26, 26, 8))), {"filter_shape": (3, 3, 1, 8)}) is False
    assert _seen_threads(lambda fn: _threads.by_estimate(fn, lambda i, a: False), [10]) == 1
    assert _seen_threads(lambda fn: _threads.by_estimate(fn, lambda i, a: True), [10]) == 2


def test_registered_kernels_run_serially_for_small_work(on_torch, two_threads):
    """A real kernel (Relu on 100k values) observes one thread; the count is back to two afterwards."""
    seen = []
    original = torch.relu

    def spy(v):
        seen.append(torch.get_num_threads())
        return original(v)

    x = nf.tensor(np.linspace(-1, 1, 100_000, dtype=np.float32))
    torch.relu = spy
    try:
        y = kernel_table("torch")["Relu"].kernel_func(on_torch, (x,), None)
    finally:
        torch.relu = original
    on_torch.dispose_data(y[0])
    x.dispose()
    assert seen == [1] and torch.get_num_threads() == 2


# ---------------------------------------------------------------------------------------------
# bool work in float form
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fn", [torch.gt, torch.ge, torch.lt, torch.le, torch.eq, torch.ne])
def test_compare_matches_torch_bool_results(fn):
    rng = np.random.default_rng(0)
    a = torch.from_numpy(rng.standard_normal((64, 9, 9)).astype(np.float32))
    a[0, 0, :3] = torch.tensor([math.nan, math.inf, -math.inf])
    a[1] = 0.0
    for b in (a.clone(), torch.zeros(()), torch.from_numpy(rng.standard_normal(9).astype(np.float32))):
        got = _bools.compare(fn, a, b)
        assert got.dtype is torch.bool and torch.equal(got, fn(a, b))


def test_compare_small_or_integer_inputs_take_torch_directly():
    a = torch.arange(10, dtype=torch.int32)
    assert torch.equal(_bools.compare(torch.gt, a, torch.tensor(4, dtype=torch.int32)), a > 4)
    f = torch.tensor([1.0, math.nan])
    assert torch.equal(_bools.compare(torch.ne, f, f), torch.tensor([False, True]))


def test_from_bool_gives_ones_and_zeros():
    b = torch.rand(10_000) > 0.5
    for dtype in (torch.float32, torch.int32, torch.float64):
        got = _bools.from_bool(b, dtype)
        assert got.dtype is dtype and torch.equal(got, b.to(dtype))


def test_comparisons_and_casts_match_cpu(on_torch):
    rng = np.random.default_rng(1)
    x = rng.standard_normal((32, 13, 13, 8)).astype(np.float32)
    x[0, 0, 0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    got, want = on_both(lambda t: nf.cast(nf.greater(t, nf.scalar(0.0)), "float32"), x)
    np.testing.assert_array_equal(got, want)
    got, want = on_both(lambda t: nf.cast(nf.cast(t, "bool"), "int32"), x)
    np.testing.assert_array_equal(got, want)
    got, want = on_both(lambda t: nf.cast(nf.less_equal(t, t), "int32"), x)
    np.testing.assert_array_equal(got, want)


# ---------------------------------------------------------------------------------------------
# Step, fused kernels, pooling
# ---------------------------------------------------------------------------------------------
@pytest.mark.parametrize("alpha", [0.0, 0.3])
def test_step_matches_cpu_with_and_without_nan(on_torch, alpha):
    rng = np.random.default_rng(2)
    x = rng.standard_normal((32, 26, 26, 8)).astype(np.float32)
    got, want = on_both(lambda t: nf.step(t, alpha), x)
    np.testing.assert_array_equal(got, want)
    x[3, 4, 5, 6] = np.nan
    x[0, 0, 0, 0] = -np.inf
    got, want = on_both(lambda t: nf.step(t, alpha), x)
    np.testing.assert_array_equal(got, want)
    assert np.isnan(got[3, 4, 5, 6])


@pytest.mark.parametrize("activation", ["linear", "relu", "relu6", "sigmoid", "elu"])
def test_fused_conv_matches_cpu(on_torch, activation):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((1, 9, 9, 3)).astype(np.float32)
    f = rng.standard_normal((3, 3, 3, 4)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    for strides, pad in ((1, "same"), (2, "valid")):

        def fused(x_, f_, b_, strides=strides, pad=pad):
            return nf.fused.conv2d(x=x_, filter=f_, strides=strides, pad=pad, bias=b_, activation=activation)

        got, want = on_both(fused, x, f, b)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_fused_mat_mul_matches_cpu(on_torch):
    rng = np.random.default_rng(4)
    a = rng.standard_normal((5, 7)).astype(np.float32)
    b = rng.standard_normal((3, 7)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    for activation in ("linear", "relu", "relu6", "sigmoid", "leakyrelu"):

        def fused(a_, b_, c_, activation=activation):
            return nf.fused.mat_mul(a=a_, b=b_, transpose_b=True, bias=c_, activation=activation)

        got, want = on_both(fused, a, b, bias)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("pad", ["valid", "same"])
@pytest.mark.parametrize("size", [(2, 2), (3, 2), (8, 8)])
def test_pools_match_cpu_including_nan(on_torch, pad, size):
    rng = np.random.default_rng(5)
    x = rng.standard_normal((2, 31, 31, 5)).astype(np.float32)
    for values in (x, np.where(rng.random(x.shape) < 0.01, np.nan, x).astype(np.float32)):
        got, want = on_both(lambda t: nf.max_pool(t, size, size[::-1], pad), values)
        np.testing.assert_array_equal(got, want)
        got, want = on_both(lambda t: nf.avg_pool(t, size, size[::-1], pad), values)
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def _max_pool_grad(values: np.ndarray, size: int, stride: int, pad: str = "valid") -> tuple[np.ndarray, np.ndarray]:
    return on_both(lambda t: nf.grad(lambda v: nf.sum(nf.mul(nf.max_pool(v, size, stride, pad), 3.0)))(t), values)


@pytest.mark.parametrize(("size", "stride", "pad"), [(2, 2, "valid"), (3, 3, "same"), (3, 2, "same"), (2, 1, "valid")])
def test_max_pool_gradient_matches_cpu(on_torch, size, stride, pad):
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, 13, 13, 4)).astype(np.float32)
    got, want = _max_pool_grad(x, size, stride, pad)
    np.testing.assert_array_equal(got, want)
    x = np.maximum(x, 0)  # many ties at 0: the first position of each window gets the gradient
    got, want = _max_pool_grad(x, size, stride, pad)
    np.testing.assert_array_equal(got, want)
    x[0, :4, :4, 0] = np.nan  # NaN never wins; a window of NaN only sends nothing
    got, want = _max_pool_grad(x, size, stride, pad)
    np.testing.assert_array_equal(got, want)


def test_max_pool_gradient_uses_the_kept_positions(on_torch, monkeypatch):
    """Under a tape the forward kernel keeps its arg-max positions on y's buffer; MaxPoolGrad uses them
    instead of pooling again, and only for the x they were computed from."""
    calls = []
    original = pool.max_grad_2d
    monkeypatch.setattr(pool, "max_grad_2d", lambda *a: calls.append(1) or original(*a))
    x = nf.tensor(np.random.default_rng(7).standard_normal((2, 8, 8, 3)).astype(np.float32))
    g = nf.grad(lambda v: nf.sum(nf.max_pool(v, 2, 2, "valid")))(x)
    assert calls == []
    np.testing.assert_array_equal(g.numpy().sum(axis=(1, 2)), np.full((2, 3), 16.0))
    y = nf.max_pool(x, 2, 2, "valid")  # no tape: nothing kept
    assert on_torch.data[y.data_id].prepared is None
    other = nf.tensor(np.zeros((2, 8, 8, 3), np.float32))
    dy = nf.ones_like(y)
    attrs = {"filter_size": (2, 2), "strides": (2, 2), "dilations": (1, 1), "pad": "valid",
             "dim_rounding_mode": None, "pad_before": (0, 0), "out_size": (4, 4)}  # fmt: skip
    out = kernel_table("torch")["MaxPoolGrad"].kernel_func(on_torch, (dy, other, y), attrs)
    assert calls == [1]  # y's buffer keeps nothing: the positions were computed again
    on_torch.dispose_data(out[0])
    nf.dispose([x, g, y, other, dy])


# ---------------------------------------------------------------------------------------------
# slices, convolution backprops
# ---------------------------------------------------------------------------------------------
def _storage(backend, t) -> int:
    return backend.data[t.data_id].values.untyped_storage().data_ptr()


def test_small_slices_are_views_and_large_inputs_are_copied(on_torch):
    small = nf.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    part = nf.strided_slice(small, [1, 0], [3, 4], [1, 2])
    assert _storage(on_torch, part) == _storage(on_torch, small)
    small.dispose()  # the view lives on with its values
    np.testing.assert_array_equal(part.numpy(), [[4, 6], [8, 10]])
    big = nf.tensor(np.arange(300_000, dtype=np.float32))
    piece = nf.slice(big, [10], [5])
    half = nf.slice(big, [0], [200_000])
    assert _storage(on_torch, piece) != _storage(on_torch, big)
    assert _storage(on_torch, half) == _storage(on_torch, big)
    np.testing.assert_array_equal(piece.numpy(), np.arange(10, 15, dtype=np.float32))
    nf.dispose([part, big, piece, half])


def test_strided_slice_index_cache_keeps_specs_apart(on_torch):
    x = nf.tensor(np.arange(24, dtype=np.float32).reshape(2, 3, 4))
    a = nf.strided_slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2])
    b = nf.strided_slice(x, [0, 1, 0], [2, 3, 4], [1, 1, 2], shrink_axis_mask=1)
    c = nf.strided_slice(x, [0, 1, 0], [2, 3, 4], [1, 1, -1])
    want = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    np.testing.assert_array_equal(a.numpy(), want[0:2, 1:3, 0:4:2])
    np.testing.assert_array_equal(b.numpy(), want[0, 1:3, 0:4:2])
    np.testing.assert_array_equal(c.numpy(), want[0:2, 1:3, 0:4:-1])
    nf.dispose([x, a, b, c])


def test_conv_backprop_input_keeps_channels_last(on_torch):
    """dy and dx stay NHWC (channels_last for torch): no layout copy of dy, dx stored contiguous."""
    rng = np.random.default_rng(8)
    dy = rng.standard_normal((4, 11, 11, 16)).astype(np.float32)
    f = rng.standard_normal((3, 3, 8, 16)).astype(np.float32)
    got, want = on_both(lambda d, w: nf.conv2d_transpose(d, w, [4, 13, 13, 8], 1, "valid"), dy, f)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-4)
    d, w = nf.tensor(dy), nf.tensor(f)
    dx = nf.conv2d_transpose(d, w, [4, 13, 13, 8], 1, "valid")
    assert on_torch.data[dx.data_id].values.is_contiguous()
    nf.dispose([d, w, dx])
