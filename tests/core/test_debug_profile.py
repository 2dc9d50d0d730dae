"""Debug mode (kernel log, NaN/Inf checks), prod mode, ``nf.time`` and ``nf.profile``."""

from __future__ import annotations

import logging
import re

import numpy as np
import pytest

import ndflow as nf
import ndflow.ops.arithmetic


@pytest.fixture
def debug_mode(caplog):
    caplog.set_level(logging.INFO, logger="ndflow")
    nf.enable_debug_mode()
    yield caplog
    nf.env().reset()


def kernel_records(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.name == "ndflow" and r.levelno == logging.INFO]


# ---------------------------------------------------------------------------------------------
# debug mode
# ---------------------------------------------------------------------------------------------
def test_enable_debug_mode_sets_the_flag_and_warns(caplog):
    caplog.set_level(logging.INFO, logger="ndflow")
    try:
        nf.enable_debug_mode()
        assert nf.env().get("DEBUG") is True
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("debug" in message.lower() for message in warnings), warnings
    finally:
        nf.env().reset()
    assert nf.env().get("DEBUG") is False


def test_debug_mode_logs_each_kernel(debug_mode):
    a = nf.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    b = nf.tensor([10.0, 20.0, 30.0])
    debug_mode.clear()
    try:
        y = nf.tidy(lambda: nf.square(nf.add(a, b)))
        y.dispose()
    finally:
        nf.dispose([a, b])
    lines = kernel_records(debug_mode)
    assert len(lines) == 2, lines
    add, square = lines
    assert add.split()[0] == "Add" and square.split()[0] == "Square"
    for line in lines:
        assert re.search(r"\d+\.\d+ ms", line), line  # wall time of the kernel
        assert "[2, 3]" in line  # output shape
        assert re.search(r"\b6\b", line.split("ms", 1)[1]), line  # output size
    assert "2D" in add  # output rank
    assert "[2, 3], [3]" in add  # input shapes
    assert square.rstrip().endswith("[2, 3]")


def test_debug_mode_logs_nothing_when_off(caplog):
    caplog.set_level(logging.INFO, logger="ndflow")
    y = nf.tidy(lambda: nf.add(nf.ones([2]), nf.ones([2])))
    y.dispose()
    assert kernel_records(caplog) == []


@pytest.mark.parametrize(
    ("make", "kernel", "what"),
    [
        (lambda: nf.log(nf.zeros([3])), "Log", "Infinity"),
        (lambda: nf.sqrt(nf.tensor([1.0, -1.0])), "Sqrt", "NaN"),
        (lambda: nf.div(nf.ones([2]), nf.zeros([2])), "RealDiv", "Infinity"),
        (lambda: nf.mul(nf.tensor([np.nan]), 2.0), "Multiply", "NaN"),
        (lambda: nf.exp(nf.tensor([100.0])), "Exp", "Infinity"),
    ],
    ids=["log", "sqrt", "div", "mul", "exp_overflow"],
)
def test_debug_mode_raises_on_nan_and_inf_naming_the_kernel(debug_mode, make, kernel, what):
    start = nf.memory()
    with pytest.raises(nf.ComputationError, match=rf"'{kernel}'") as info:
        nf.tidy(make)
    assert what in str(info.value)
    end = nf.memory()
    assert (end.num_tensors, end.num_bytes, end.num_data_buffers) == (
        start.num_tensors,
        start.num_bytes,
        start.num_data_buffers,
    )


def test_nan_check_leaks_nothing_outside_tidy(debug_mode):
    x = nf.zeros([2, 2])
    start = nf.memory()
    try:
        with pytest.raises(nf.ComputationError, match="Log"):
            nf.log(x)
        end = nf.memory()
        assert (end.num_tensors, end.num_bytes) == (start.num_tensors, start.num_bytes)
    finally:
        x.dispose()


def test_debug_mode_does_not_check_int_and_bool_outputs(debug_mode):
    def fn():
        nan = nf.tensor([np.nan, np.inf, 1.0])
        as_int = nf.cast(nan, "int32")  # int32 output: not checked
        ints = nf.tensor([1, 2, 3], dtype="int32")
        floor = nf.floor_div(ints, nf.zeros([3], "int32"))  # 1/0 in int32: not checked
        is_nan = nf.equal(nan, nan)  # bool output: not checked
        return as_int.numpy(), floor.dtype, is_nan.numpy()

    as_int, floor_dtype, is_nan = nf.tidy(fn)
    assert as_int.dtype == np.int32
    assert floor_dtype == "int32"
    np.testing.assert_array_equal(is_nan, [False, True, True])


def test_debug_mode_finite_results_pass(debug_mode):
    values = nf.tidy(lambda: nf.softmax(nf.tensor([[1.0, 2.0, 3.0]])).numpy())
    np.testing.assert_allclose(values, [np.exp([1, 2, 3]) / np.exp([1, 2, 3]).sum()], rtol=1e-5)


# ---------------------------------------------------------------------------------------------
# prod mode
# ---------------------------------------------------------------------------------------------
@pytest.fixture
def prod_mode():
    nf.enable_prod_mode()
    yield
    nf.env().reset()


def test_enable_prod_mode_sets_flags(prod_mode):
    assert nf.env().get("PROD") is True
    assert nf.env().get("DEBUG") is False


def test_prod_mode_skips_the_broadcast_check(monkeypatch):
    calls: list[tuple] = []
    original = ndflow.ops.arithmetic.broadcast_shape

    def spy(*args):
        calls.append(args)
        return original(*args)

    monkeypatch.setattr(ndflow.ops.arithmetic, "broadcast_shape", spy)
    a, b = nf.ones([2, 3]), nf.ones([3])
    try:
        nf.tidy(lambda: a + b).dispose()
        assert len(calls) == 1  # validated in normal mode
        with pytest.raises(ValueError, match="add"):
            nf.tidy(lambda: nf.add(nf.ones([2, 3]), nf.ones([4])))
        calls.clear()
        nf.enable_prod_mode()
        nf.tidy(lambda: a + b).dispose()
        assert calls == []  # skipped in prod mode
    finally:
        nf.env().reset()
        nf.dispose([a, b])


def test_prod_mode_skips_dtype_validation(prod_mode):
    ints = nf.tensor([1, 2, 4], dtype="int32")
    try:
        y = nf.log(ints)  # float32 only in normal mode
        try:
            assert y.dtype == "float32"
            np.testing.assert_allclose(y.numpy(), np.log([1.0, 2.0, 4.0]), rtol=1e-6)
        finally:
            y.dispose()
    finally:
        ints.dispose()


def test_normal_mode_validates_dtype():
    ints = nf.tensor([1, 2, 4], dtype="int32")
    try:
        with pytest.raises(TypeError, match="log"):
            nf.log(ints)
    finally:
        ints.dispose()


def test_prod_mode_skips_nan_checks_even_with_debug(caplog):
    caplog.set_level(logging.INFO, logger="ndflow")
    nf.enable_prod_mode()
    nf.env().set("DEBUG", True)
    try:
        values = nf.tidy(lambda: nf.log(nf.zeros([2])).numpy())
        np.testing.assert_array_equal(values, [-np.inf, -np.inf])
    finally:
        nf.env().reset()


def test_reset_leaves_prod_mode():
    nf.enable_prod_mode()
    nf.env().reset()
    assert nf.env().get("PROD") is False
    ints = nf.tensor([1], dtype="int32")
    try:
        with pytest.raises(TypeError):
            nf.log(ints)
    finally:
        ints.dispose()


# ---------------------------------------------------------------------------------------------
# time
# ---------------------------------------------------------------------------------------------
def test_time():
    a = nf.ones([20, 30])
    start = nf.memory()
    try:
        info = nf.time(lambda: nf.mat_mul(a, nf.transpose(a)))
        assert isinstance(info.kernel_ms, float) and isinstance(info.wall_ms, float)
        assert info.kernel_ms >= 0
        assert info.wall_ms >= 0
        assert info.wall_ms >= info.kernel_ms
        end = nf.memory()  # the timed function's tensors are disposed
        assert (end.num_tensors, end.num_bytes) == (start.num_tensors, start.num_bytes)
    finally:
        a.dispose()


# ---------------------------------------------------------------------------------------------
# profile
# ---------------------------------------------------------------------------------------------
def test_profile_fields_by_hand():
    x = nf.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])  # float32 [2,3]: 24 bytes
    start = nf.memory()
    info = nf.profile(lambda: nf.tidy(lambda: nf.add(nf.square(x), x)))
    try:
        assert info.new_tensors == 1
        assert info.new_bytes == 24
        assert info.peak_bytes == start.num_bytes + 48  # square and add alive together
        assert len(info.kernels) == 2
        square, add = info.kernels
        assert square.name == "Square"
        assert square.bytes_added == 24
        assert square.total_bytes_snapshot == start.num_bytes + 24
        assert square.tensors_added == 1
        assert square.total_tensors_snapshot == start.num_tensors + 1
        assert [tuple(s) for s in square.input_shapes] == [(2, 3)]
        assert [tuple(s) for s in square.output_shapes] == [(2, 3)]
        assert square.kernel_time_ms >= 0
        assert add.name == "Add"
        assert add.bytes_added == 24
        assert add.total_bytes_snapshot == start.num_bytes + 48
        assert add.tensors_added == 1
        assert add.total_tensors_snapshot == start.num_tensors + 2
        assert [tuple(s) for s in add.input_shapes] == [(2, 3), (2, 3)]
        assert [tuple(s) for s in add.output_shapes] == [(2, 3)]
        assert add.kernel_time_ms >= 0
        assert isinstance(info.result, nf.Tensor)
        np.testing.assert_array_equal(info.result.numpy(), [[2, 6, 12], [20, 30, 42]])
    finally:
        nf.dispose([x, info.result])


def test_profile_kernel_names_in_first_run_order():
    # TF.js 4.22: kernelNames is Array.from(new Set(kernels.map(k => k.name))), so for this function
    # tf.profile(...).kernelNames is ['Square', 'Add'] (recorded with the oracle's TF.js).
    x = nf.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    try:
        info = nf.profile(lambda: nf.tidy(lambda: nf.add(nf.square(nf.square(x)), x)))
        info.result.dispose()
        assert [k.name for k in info.kernels] == ["Square", "Square", "Add"]
        assert info.kernel_names == ["Square", "Add"]
    finally:
        x.dispose()


def test_profile_bytes_of_other_dtypes():
    def fn():
        i = nf.ones([2, 2], "int32")  # 16 bytes, not a kernel
        b = nf.greater(i, 0)  # bool [2,2]: 4 bytes
        c = nf.cast(b, "float32")  # 16 bytes
        return [i, b, c]

    start = nf.memory()
    info = nf.profile(fn)
    try:
        assert info.new_tensors == 3
        assert info.new_bytes == 16 + 4 + 16
        names = [k.name for k in info.kernels]
        assert "Greater" in names and "Cast" in names
        greater = info.kernels[names.index("Greater")]
        cast = info.kernels[names.index("Cast")]
        assert greater.bytes_added == 4
        assert cast.bytes_added == 16
        assert cast.total_bytes_snapshot == start.num_bytes + 36
        assert info.peak_bytes == start.num_bytes + 36
    finally:
        nf.dispose(info.result)


def test_profile_counts_disposed_intermediates_in_peak():
    x = nf.ones([10])  # 40 bytes
    start = nf.memory()

    def fn():
        a = nf.add(x, x)  # +40
        b = nf.mul(a, a)  # +40
        a.dispose()
        c = nf.add(b, x)  # +40
        b.dispose()
        return c

    info = nf.profile(fn)
    try:
        assert info.new_tensors == 1
        assert info.new_bytes == 40
        assert info.peak_bytes == start.num_bytes + 80
        assert [k.bytes_added for k in info.kernels] == [40, 40, 40]
    finally:
        nf.dispose([x, info.result])


def test_profile_does_not_change_later_behaviour():
    x = nf.ones([3])
    try:
        info = nf.profile(lambda: nf.tidy(lambda: x + 1))
        info.result.dispose()
        again = nf.profile(lambda: None)
        assert again.kernels == [] and again.new_tensors == 0 and again.new_bytes == 0
        assert again.result is None
    finally:
        x.dispose()


def test_profile_refuses_async_functions():
    async def fn():
        return None

    with pytest.raises(TypeError):
        nf.profile(fn)
