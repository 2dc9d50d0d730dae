"""Legacy arrays: constructors, reads, camelCase methods, and results that stay legacy arrays."""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

import ndflow as nf
import ndflow.legacy as dl


def test_constructors_shapes_and_dtypes():
    made = [
        dl.Scalar.new(3),
        dl.Array1D.new([1, 2, 3]),
        dl.Array2D.new([2, 3], [1, 2, 3, 4, 5, 6]),
        dl.Array2D.new([2, 2], [[1, 2], [3, 4]]),
        dl.Array3D.new([2, 1, 2], np.arange(4)),
        dl.Array4D.new([1, 2, 2, 1], [1, 2, 3, 4]),
    ]
    try:
        assert [type(t) for t in made] == [dl.Scalar, dl.Array1D, dl.Array2D, dl.Array2D, dl.Array3D, dl.Array4D]
        assert [t.shape for t in made] == [(), (3,), (2, 3), (2, 2), (2, 1, 2), (1, 2, 2, 1)]
        # deeplearn.js made float32 arrays unless told otherwise (numpy ints included)
        assert {t.dtype for t in made} == {"float32"}
        assert all(isinstance(t, nf.Tensor) and isinstance(t, dl.NDArray) for t in made)
    finally:
        nf.dispose(made)


def test_int_and_bool_arrays_are_disposed():
    a, b = dl.Array1D.new([1, 2], "int32"), dl.Array1D.new([True, False])
    assert (a.dtype, b.dtype) == ("int32", "bool")
    nf.dispose([a, b])


def test_get_loc_to_index_and_values():
    a = dl.Array2D.new([2, 3], [1, 2, 3, 4, 5, 6])
    s = dl.Scalar.new(7)
    try:
        assert a.get(1, 2) == 6.0 and a.get(0, 1) == 2.0 and a.get() == 1.0
        assert isinstance(a.get(1, 0), float)
        assert a.locToIndex([1, 1]) == 4 and a.indexToLoc(4) == [1, 1]
        assert s.get() == 7.0 and s.locToIndex([]) == 0 and s.indexToLoc(0) == []
        np.testing.assert_array_equal(a.getValues(), [1, 2, 3, 4, 5, 6])
        np.testing.assert_array_equal(a.dataSync(), a.getValues())
        with pytest.raises(IndexError, match="out of bounds"):
            a.get(2, 0)
        assert asyncio.run(a.val(1, 2)) == 6.0
        np.testing.assert_array_equal(asyncio.run(a.getValuesAsync()), [1, 2, 3, 4, 5, 6])
        buf = a.buffer()  # synchronous, as in deeplearn.js
        buf.set(10, 0, 0)
        assert buf.get(0, 0) == 10 and a.get(0, 0) == 1.0
    finally:
        nf.dispose([a, s])


def test_static_factories():
    made = [
        dl.NDArray.zeros([2, 2]),
        dl.NDArray.ones([3]),
        dl.NDArray.make([2, 2], {"values": [1, 2, 3, 4]}),
        dl.NDArray.randNormal([2, 3], 0, 1, None, 5),
        dl.NDArray.randNormal([2, 3], 0, 1, None, 5),
        dl.Array2D.randNormal([1, 3], seed=1),
        dl.randNormal([4], seed=2),
        dl.NDArray.randUniform([5], 2, 3),
        dl.NDArray.randTruncatedNormal([100], 0, 1, None, 3),
        dl.NDArray.rand([2], lambda: 0.5),
    ]
    try:
        assert made[0].getValues().tolist() == [0, 0, 0, 0] and made[1].getValues().tolist() == [1, 1, 1]
        assert made[2].get(1, 0) == 3.0
        np.testing.assert_array_equal(made[3].getValues(), made[4].getValues())
        assert made[5].shape == (1, 3) and isinstance(made[5], dl.Array2D)
        assert isinstance(made[6], dl.Array1D)
        assert ((made[7].getValues() >= 2) & (made[7].getValues() < 3)).all()
        assert np.abs(made[8].getValues()).max() <= 2.0
        assert made[9].getValues().tolist() == [0.5, 0.5]
        like = [dl.NDArray.zerosLike(made[2]), dl.NDArray.onesLike(made[2]), dl.NDArray.like(made[2])]
        assert like[2].getValues().tolist() == [1, 2, 3, 4] and like[1].get(1, 1) == 1.0
        made += like
    finally:
        nf.dispose(made)


def test_results_keep_the_legacy_class_of_their_rank():
    a = dl.Array1D.new([1, 2, 3])
    out = []
    try:
        out.append(a.add(a))
        out.append(a.as2D(1, 3))
        out.append(a.sum())
        out.append(a * 2)
        out.append(-a)
        out.append(a[1])
        out.append(out[1].matMul(out[1], False, True))
        out.append(a.argMax())
        out.append(nf.tidy(lambda: out[1].transpose().as1D()))
        out.append(nf.add(a, 1))  # an nf op returns a plain tensor ...
        assert [type(t) for t in out[:9]] == [
            dl.Array1D, dl.Array2D, dl.Scalar, dl.Array1D, dl.Array1D, dl.Scalar, dl.Array2D, dl.Scalar, dl.Array1D
        ]  # fmt: skip
        assert type(out[-1]) is nf.Tensor
        assert type(dl.to_legacy(out[-1])) is dl.Array1D  # ... that to_legacy converts in place
        assert out[6].get() == 14.0 and out[7].get() == 2
        out.append(list(a))
        assert [type(x) for x in out[-1]] == [dl.Scalar] * 3
    finally:
        nf.dispose([a, out])


def test_camel_case_methods():
    a = dl.Array2D.new([2, 2], [1, -2, 3, -4])
    out = []
    try:
        out += [a.clipByValue(-1, 1), a.leakyRelu(0.5), a.logSumExp(), a.reshapeAs(a), a.expandDims(0)]
        out += [a.asType("int32"), a.toInt(), a.toFloat(), a.as4D(1, 2, 2, 1), a.as3D(1, 2, 2), a.asScalar]
        out.pop()  # a bound method, not a result
        assert out[0].getValues().tolist() == [1, -1, 1, -1]
        assert out[1].getValues().tolist() == [1, -1, 3, -2]
        assert out[4].shape == (1, 2, 2) and out[5].dtype == "int32" and out[8].shape == (1, 2, 2, 1)
        out.append(a.addStrict(a))
        out.append(a.equalStrict(a))
        with pytest.raises(ValueError, match="addStrict: shapes"):
            a.addStrict(out[4])
        out.append(nf.tidy(lambda: a.where(a.greater(0), a.neg())))
        assert out[-1].getValues().tolist() == [1, 2, 3, 4]
        out.append(nf.tidy(lambda: a.batchNormalization(dl.Scalar.new(0), dl.Scalar.new(1), 0.0)))
        out.append(nf.tidy(lambda: a.as4D(1, 2, 2, 1).minPool(2, 1, "valid")))
        assert out[-1].get() == -4.0
        assert "Tensor" in a.toString()
        out += [a.argMax(), a.argMax(1), a.argMin()]  # no axis: the index into the flat values
        assert [t.getValues().tolist() for t in out[-3:]] == [[2], [0, 0], [3]]
    finally:
        nf.dispose([a, out])


def test_legacy_variable_assign_and_methods():
    init = dl.Array1D.new([1, 2, 3])
    v = init.variable()
    two = dl.Scalar.new(2)
    other = dl.variable(two, True, "legacy-test-scalar")
    new = product = None
    try:
        assert isinstance(v, nf.Variable) and isinstance(v, dl.NDArray)
        new = nf.tensor([4.0, 5.0, 6.0])
        v.assign(new)
        assert v.get(2) == 6.0
        product = v.mul(other)
        assert type(product) is dl.Array1D
        assert nf.engine().variables["legacy-test-scalar"] is other
    finally:
        nf.dispose([init, two, v, other, new, product])


def test_disposed_arrays_raise():
    a = dl.Array1D.new([1, 2])
    a.dispose()
    with pytest.raises(nf.DisposedTensorError):
        a.get(0)
    with pytest.raises(nf.DisposedTensorError):
        a.getValues()
