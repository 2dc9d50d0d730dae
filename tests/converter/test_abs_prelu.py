"""PReLU written with Abs, fused at load (converter/passes/abs_prelu.py): ``x + (x - |x|) * c`` as one node, the same
bits on cpu as the four ops (compiled and numpy paths), close on every backend; chains that differ stay."""

from __future__ import annotations

import numpy as np
import pytest
from gm_helpers import const, load, node, placeholder

import ndflow as nf
from ndflow.converter.passes.abs_prelu import ABS_PRELU
from ndflow.core.engine import ENGINE

pytestmark = pytest.mark.filterwarnings(
    "ignore:invalid value encountered:RuntimeWarning"
)  # inf - inf in the references

F = {"T": {"type": "DT_FLOAT"}}
CH = 8


def _graph(mul_first: bool = False, add_first: bool = False, sub_order: bool = True, extra: bool = False):
    """The chain on x (N, H, W, CH) with the per-channel constant ``c`` (or ``s``, one value); variants swap
    the operands of Mul and Add, swap Sub's (not the pattern) or give Sub another consumer."""
    mul_in = ["c", "sub"] if mul_first else ["sub", "c"]
    add_in = ["mul", "x"] if add_first else ["x", "mul"]
    nodes = [
        placeholder("x", [-1, -1, -1, CH]),
        const("c"),
        node("abs", "Abs", ["x"], **F),
        node("sub", "Sub", ["x", "abs"] if sub_order else ["abs", "x"], **F),
        node("mul", "Mul", mul_in, **F),
        node("y", "AddV2", add_in, **F),
    ]
    if extra:
        nodes.append(node("other", "Neg", ["sub"], **F))
    return nodes


C = np.linspace(-0.4, 0.3, CH).astype(np.float32)


def _reference(x: np.ndarray, c: np.ndarray = C) -> np.ndarray:
    return x + (x - np.abs(x)) * c


def _ops_of(model) -> list[str]:
    return [n.op for n in model.executor.graph.nodes.values()]


def _x(shape, seed: int = 0) -> np.ndarray:
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    flat = x.reshape(-1)
    flat[:6] = [np.nan, np.inf, -np.inf, -0.0, 0.0, -1e-42]  # specials, a subnormal
    return x


@pytest.mark.parametrize("shape", [(1, 16, 16, CH), (1, 2, 3, CH)], ids=["compiled", "numpy"])
@pytest.mark.parametrize(("mul_first", "add_first"), [(False, False), (True, True)])
def test_the_chain_is_one_node_with_the_same_bits(shape, mul_first, add_first):
    nf.set_backend("cpu")
    x = _x(shape)
    fused = load(_graph(mul_first, add_first), {"c": C})
    nf.env().set("GRAPH_MODEL_OPTIMIZE", False)
    try:
        plain = load(_graph(mul_first, add_first), {"c": C})
    finally:
        nf.env().set("GRAPH_MODEL_OPTIMIZE", True)
    try:
        assert ABS_PRELU in _ops_of(fused) and "Abs" not in _ops_of(fused)
        t = nf.tensor(x)
        a, b = fused.execute({"x": t}, "y"), plain.execute({"x": t}, "y")
        np.testing.assert_array_equal(a.numpy().view(np.int32), b.numpy().view(np.int32))
        np.testing.assert_array_equal(a.numpy(), _reference(x))
        nf.dispose([a, b, t])
    finally:
        fused.dispose()
        plain.dispose()


def test_a_one_value_constant_is_one_slope_for_every_channel():
    nf.set_backend("cpu")
    x = _x((1, 16, 16, CH), 1)
    c = np.array([0.125], np.float32)
    model = load(_graph(), {"c": c})
    try:
        t = nf.tensor(x)
        y = model.execute({"x": t}, "y")
        np.testing.assert_array_equal(y.numpy(), _reference(x, c))
        nf.dispose([y, t])
    finally:
        model.dispose()


@pytest.mark.parametrize("variant", [{"sub_order": False}, {"extra": True}])
def test_chains_that_differ_stay_as_they_are(variant):
    nf.set_backend("cpu")
    model = load(_graph(**variant), {"c": C})
    try:
        assert ABS_PRELU not in _ops_of(model) and "Abs" in _ops_of(model)
    finally:
        model.dispose()


def test_every_backend_computes_it(backend):
    x = _x((1, 4, 4, CH), 2)
    x = np.nan_to_num(x, nan=0.5, posinf=2.0, neginf=-2.0)
    model = load(_graph(), {"c": C})
    try:
        t = nf.tensor(x)
        y = model.execute({"x": t}, "y")
        np.testing.assert_allclose(y.numpy(), _reference(x), rtol=1e-6, atol=1e-30)
        nf.dispose([y, t])
    finally:
        model.dispose()


def test_the_kernel_names_bad_operands():
    nf.set_backend("cpu")
    x, c = nf.tensor(np.ones((2, 3), np.float32)), nf.tensor(np.ones(4, np.float32))
    try:
        with pytest.raises(ValueError, match="_NdflowAbsPrelu: .*broadcasts to x's shape"):
            ENGINE.run_kernel("_NdflowAbsPrelu", (x, c), {})
    finally:
        nf.dispose([x, c])
