"""``NDArrayMath``: scope/keep/track on the modern engine, safe mode, debug mode, and its ops."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
import ndflow.legacy as dl
from ndflow.legacy.math import OPS


@pytest.fixture
def math():
    previous = nf.get_backend()
    yield dl.NDArrayMathCPU()
    nf.set_backend(previous)


def test_scope_frees_intermediates_and_returns_result(math):
    before = nf.memory().num_tensors

    def fn(keep, track):
        a = track(dl.Array1D.new([1, 2, 3]))
        b = track(dl.Array1D.new([4, 5, 6]))
        diff = math.sub(a, b)
        return math.divide(math.sum(math.elementWiseMul(diff, diff)), dl.Scalar.new(a.size))

    average = math.scope(fn)
    assert nf.memory().num_tensors == before + 1
    assert isinstance(average, dl.Scalar) and average.get() == 9.0
    average.dispose()


def test_scope_accepts_functions_of_zero_one_or_two_arguments(math):
    assert math.scope(lambda: 1) == 1
    assert math.scope(lambda keep: keep.__name__) == "keep"
    assert math.scope(lambda keep, track: track.__name__) == "track"
    assert math.scope(lambda *helpers: len(helpers)) == 2
    assert math.scope(lambda i=3: i) == 3  # defaults are the caller's, not keep/track
    assert math.scope("named", lambda keep, track: 5) == 5
    with pytest.raises(TypeError, match="expected a function"):
        math.scope(3)


def test_track_adopts_an_array_made_outside_the_scope(math):
    outside = dl.Array1D.new([1, 2])

    def fn(keep, track):
        track(outside)

    math.scope(fn)
    assert outside.is_disposed  # deeplearn.js's track: disposed with the scope


def test_keep_survives_every_scope(math):
    kept = []

    def inner(keep, track):
        kept.append(keep(math.add(dl.Scalar.new(1), dl.Scalar.new(2))))

    math.scope(lambda: math.scope(inner))
    assert not kept[0].is_disposed and kept[0].get() == 3.0
    kept[0].dispose()


def test_manual_scopes(math):
    before = nf.memory().num_tensors
    math.startScope()
    x = math.add(dl.Scalar.new(1), dl.Scalar.new(1))
    math.endScope(x)
    assert nf.memory().num_tensors == before + 1 and x.get() == 2.0
    math.dispose([x])
    assert x.is_disposed
    with pytest.raises(RuntimeError, match="no open scope"):
        math.endScope()


def test_safe_mode_refuses_ops_outside_scopes():
    previous = nf.get_backend()
    safe = dl.NDArrayMathCPU(safeMode=True)
    a = dl.Array1D.new([1, 2])
    try:
        with pytest.raises(RuntimeError, match="safe mode is ON"):
            safe.add(a, a)
        with pytest.raises(RuntimeError, match="keep: safe mode"):
            safe.keep(a)
        with pytest.raises(RuntimeError, match="track: safe mode"):
            safe.track(a)
        assert safe.scope(lambda keep, track: safe.sum(safe.add(a, a)).get()) == 6.0
        assert nf.tidy(lambda: safe.sum(a).get()) == 3.0  # any scope counts, nf.tidy's too
        unsafe = dl.NDArrayMathCPU()
        s = unsafe.add(a, a)  # without safe mode an op outside scopes just runs
        s.dispose()
    finally:
        a.dispose()
        nf.set_backend(previous)


def test_enable_debug_mode_sets_the_flag(math):
    assert not nf.env().get_bool("DEBUG")
    math.enableDebugMode()
    assert nf.env().get_bool("DEBUG")
    x = dl.Array1D.new([0.0])
    try:
        with pytest.raises(nf.ComputationError, match="Log"):
            math.scope(lambda: math.log(x))
    finally:
        x.dispose()


def test_gpu_math_uses_webgpu_or_says_it_is_missing():
    previous = nf.get_backend()
    try:
        if "webgpu" not in nf.engine().backend_names():
            with pytest.raises(RuntimeError, match="webgpu backend is not available"):
                dl.NDArrayMathGPU()
            return
        try:
            gpu = dl.NDArrayMathGPU()
        except RuntimeError as exc:
            assert "failed to initialize" in str(exc)
            return
        assert nf.get_backend() == "webgpu" and gpu.backendName == "webgpu"
        assert gpu.scope(lambda: gpu.sum(dl.Array1D.new([1, 2, 3])).get()) == 6.0
    finally:
        nf.set_backend(previous)


def test_unknown_backend_is_a_clear_error():
    with pytest.raises(RuntimeError, match="backend 'nope' is not available"):
        dl.NDArrayMath("nope")


def _values(math, name, *args):
    return math.scope(lambda: getattr(math, name)(*args).getValues().tolist())


def test_matrix_products(math):
    m = dl.Array2D.new([2, 3], [1, 2, 3, 4, 5, 6])
    v3, v2 = dl.Array1D.new([1, 0, 1]), dl.Array1D.new([1, 1])
    try:
        assert _values(math, "matrixTimesVector", m, v3) == [4, 10]
        assert _values(math, "vectorTimesMatrix", v2, m) == [5, 7, 9]
        assert _values(math, "matMul", m, m, dl.MatrixOrientation.REGULAR, dl.MatrixOrientation.TRANSPOSED) == [
            14, 32, 32, 77
        ]  # fmt: skip
        assert _values(math, "dotProduct", v3, v3) == [2]
        assert _values(math, "outerProduct", v2, v2) == [1, 1, 1, 1]
        with pytest.raises(ValueError, match="matrixTimesVector"):
            math.matrixTimesVector(m, v2)
        with pytest.raises(ValueError, match="vectorTimesMatrix"):
            math.vectorTimesMatrix(v3, m)
    finally:
        nf.dispose([m, v3, v2])


def test_scalar_array_helpers(math):
    c, a = dl.Scalar.new(2), dl.Array1D.new([1, 2, 4])
    try:
        assert _values(math, "scalarPlusArray", c, a) == [3, 4, 6]
        assert _values(math, "scalarMinusArray", c, a) == [1, 0, -2]
        assert _values(math, "arrayMinusScalar", a, c) == [-1, 0, 2]
        assert _values(math, "scalarTimesArray", c, a) == [2, 4, 8]
        assert _values(math, "arrayDividedByScalar", a, c) == [0.5, 1, 2]
        assert _values(math, "scalarDividedByArray", c, a) == [2, 1, 0.5]
        assert _values(math, "scaledArrayAdd", c, a, c, a) == [4, 8, 16]
        with pytest.raises(ValueError, match="scalarPlusArray: first argument must be rank 0"):
            math.scalarPlusArray(a, a)
        with pytest.raises(ValueError, match="arrayDividedByScalar: second argument"):
            math.arrayDividedByScalar(a, a)
        with pytest.raises(ValueError, match="multiplyStrict: shapes"):
            math.multiplyStrict(a, c)
    finally:
        nf.dispose([c, a])


def test_reductions_and_classification_helpers(math):
    x = dl.Array2D.new([2, 3], [1, 9, 3, 7, 2, 8])
    labels, logits = dl.Array1D.new([0, 0, 1]), dl.Array1D.new([1, 2, 3])
    try:
        assert _values(math, "argMax", x) == [1]  # no axis: the index into the flat values
        assert _values(math, "argMax", x, 1) == [1, 2]
        assert _values(math, "argMin", x, 0) == [0, 1, 0]
        assert _values(math, "argMaxEquals", x, x) == [1.0]
        expected = -np.log(np.exp(3) / np.exp([1, 2, 3]).sum())
        assert _values(math, "softmaxCrossEntropy", labels, logits)[0] == pytest.approx(expected, rel=1e-5)
        assert nf.tidy(lambda: _values(math, "oneHot", dl.Array1D.new([0, 2], "int32"), 3)) == [1, 0, 0, 0, 0, 1]
        top = math.topK(logits, 2)
        assert top.values.getValues().tolist() == [3, 2] and isinstance(top.indices, dl.Array1D)
        moments = math.moments(logits)
        assert moments.mean.get() == 2.0 and moments.variance.get() == pytest.approx(2 / 3)
        nf.dispose([top, moments])
    finally:
        nf.dispose([x, labels, logits])


def test_convolution_helpers_agree_with_autodiff(math):
    x = dl.Array4D.new([1, 3, 3, 1], np.arange(9))
    f = dl.Array4D.new([2, 2, 1, 1], [1, 2, 3, 4])
    b = dl.Array1D.new([10])
    dy = nf.ones([1, 2, 2, 1])
    try:
        assert _values(math, "conv2d", x, f, b, 1, "valid") == [37, 47, 67, 77]
        assert _values(math, "conv2d", x, f, None, 1, "valid") == [27, 37, 57, 67]
        assert _values(math, "conv2dDerInput", [1, 3, 3, 1], dy, f, 1, "valid") == [1, 3, 2, 4, 10, 6, 3, 7, 4]
        assert _values(math, "conv2dDerFilter", x, dy, [2, 2, 1, 1], 1, "valid") == [8, 12, 20, 24]
        x3 = x.as3D(3, 3, 1)
        assert _values(math, "maxPool", x3, 2, 1, "valid") == [4, 5, 7, 8]
        assert _values(math, "minPool", x3, 2, 1, "valid") == [0, 1, 3, 4]
        grads = nf.tidy(lambda: _values(math, "maxPoolBackprop", nf.ones([2, 2, 1]), x3, 2, 1, "valid"))
        assert grads == [0, 0, 0, 0, 1, 1, 0, 1, 1]
        x3.dispose()
    finally:
        nf.dispose([x, f, b, dy])


def test_every_method_is_wrapped_and_documented(math):
    for name in OPS:
        method = getattr(math, name)
        assert method.__name__ == name and method.__doc__
    for name in ("matMul", "relu", "sigmoid", "softmax", "sum", "mean", "argMax", "add", "sub", "multiply", "divide"):
        assert name in OPS
    a = dl.Array1D.new([-1, 0, 2])
    try:
        assert _values(math, "relu", a) == [0, 0, 2]
        assert _values(math, "subtract", a, a) == [0, 0, 0]
        assert nf.tidy(lambda: _values(math, "sigmoid", dl.Array1D.new([0]))) == [0.5]
        assert _values(math, "clip", a, -0.5, 0.5) == [-0.5, 0, 0.5]
        assert math.registeredVariables is nf.engine().variables
    finally:
        a.dispose()
