"""Adam's update as one kernel (``_NdflowAdamUpdate``): the op-by-op update's bits, on the compiled loop and on
numpy's expressions; the op-by-op update inside a gradient function."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

import ndflow as nf

adam_module = importlib.import_module("ndflow.train.adam")


def _train(monkeypatch, fused: bool, steps: int = 5) -> np.ndarray:
    with monkeypatch.context() as m:
        if not fused:
            m.setattr(adam_module.AdamOptimizer, "_fused", staticmethod(lambda v, g: False))
        init = nf.tensor(np.random.default_rng(9).standard_normal((300, 7)).astype(np.float32))
        w = nf.variable(init, name=f"adam_w_{fused}")
        init.dispose()
        opt = nf.train.adam(0.01, epsilon=1e-7)
        try:
            for i in range(steps):
                g = nf.tensor(np.random.default_rng(i).standard_normal((300, 7)).astype(np.float32) * (i + 1))
                opt.apply_gradients({w.name: g})
                g.dispose()
            return w.data_sync().copy()
        finally:
            w.dispose()
            opt.dispose()


@pytest.mark.parametrize("jit", [True, False])
def test_the_fused_update_has_the_op_by_op_bits(monkeypatch, jit):
    nf.env().set("CPU_JIT", jit)
    try:
        calls = []
        real = adam_module.AdamOptimizer._fused
        monkeypatch.setattr(
            adam_module.AdamOptimizer, "_fused", staticmethod(lambda v, g: calls.append(1) or real(v, g))
        )
        fused = _train(monkeypatch, True)
        assert calls and all(calls)
    finally:
        nf.env().set("CPU_JIT", True)
    plain = _train(monkeypatch, False)
    np.testing.assert_array_equal(fused.view(np.int32), plain.view(np.int32))


def test_an_update_inside_a_gradient_function_stays_op_by_op():
    zeros = nf.zeros([3])
    w = nf.variable(zeros, name="adam_inside")
    zeros.dispose()
    opt = nf.train.adam(0.1)
    try:
        assert adam_module.AdamOptimizer._fused(w, w) is True

        def f(x):
            assert adam_module.AdamOptimizer._fused(w, x) is False  # a tape is recording
            return nf.sum(nf.mul(x, x))

        ones = nf.ones([3])
        g = nf.grad(f)(ones)
        nf.dispose([g, ones])
    finally:
        w.dispose()
        opt.dispose()


def test_scalar_and_empty_variables_keep_their_shapes():
    for shape in ([], [0], [2, 0, 3]):
        init = nf.zeros(shape)
        w = nf.variable(init, name=f"adam_shape_{len(shape)}_{sum(shape)}")
        init.dispose()
        opt = nf.train.adam(0.1)
        g = nf.ones(shape)
        try:
            opt.apply_gradients({w.name: g})
            opt.apply_gradients({w.name: g})
            assert w.shape == tuple(shape)
            if not shape:
                assert abs(float(w.data_sync()[0]) + 0.2) < 1e-5  # two steps of -lr (Adam's first steps)
        finally:
            nf.dispose([g, w])
            opt.dispose()
