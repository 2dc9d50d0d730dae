"""Hard swish fusion at load (converter/passes/hard_swish.py): ``x * relu6(x + 3) * c`` as one node, the same bits
on cpu as the four ops (compiled and numpy paths), close on every backend; chains that differ stay as they are."""

from __future__ import annotations

import numpy as np
import pytest
from gm_helpers import const, load, node, placeholder

import ndflow as nf

pytestmark = pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # inf * 0 in the references

F = {"T": {"type": "DT_FLOAT"}}
SIXTH = np.array(0.16662598, np.float32)  # selfie's constant (1/6 in float16)


def _graph(order: str, three: str = "three", extra_consumer: bool = False, width: int = 3000) -> list[dict]:
    """conv-free hard swish on x (shape [width]) in either product order; ``extra_consumer`` reads relu6."""
    nodes = [placeholder("x", [width]), const("three"), const("four"), const("c"), const("cvec")]
    nodes.append(node("add", "AddV2", ["x", three], **F))
    nodes.append(node("r6", "Relu6", ["add"], **F))
    if order == "scale_first":
        nodes += [node("xs", "Mul", ["c", "x"], **F), node("y", "Mul", ["xs", "r6"], **F)]
    else:
        nodes += [
            node("xr", "Mul", ["x", "r6"], **F),
            node("y", "Mul", ["xr", "c" if order == "scale_last" else "cvec"], **F),
        ]
    if extra_consumer:
        nodes.append(node("other", "Neg", ["r6"], **F))
    return nodes


def _weights(width: int = 3000) -> dict:
    return {
        "three": np.array(3.0, np.float32),
        "four": np.array(4.0, np.float32),
        "c": SIXTH,
        "cvec": np.full(width, 0.25, np.float32),
    }


def _x(width: int) -> np.ndarray:
    x = (np.random.default_rng(width).standard_normal(width) * 4).astype(np.float32)
    x[:8] = [np.nan, np.inf, -np.inf, -3.0, 3.0, -0.0, 0.0, 1e-40]
    return x


def _run(model, x: np.ndarray, outputs: list[str]) -> list[np.ndarray]:
    t = nf.tensor(x)
    try:
        out = model.execute({"x": t}, outputs)
        outs = out if isinstance(out, list) else [out]
        values = [o.numpy() for o in outs]
        nf.dispose(outs)
        return values
    finally:
        t.dispose()


@pytest.mark.parametrize("width", [3000, 17])  # the compiled pass, and the numpy ops below 2048 values
@pytest.mark.parametrize("order", ["scale_first", "scale_last"])
@pytest.mark.parametrize("jit", [True, False])
def test_fused_equals_the_four_ops_bit_for_bit_on_cpu(order, width, jit):
    previous = nf.get_backend()
    nf.set_backend("cpu")
    nf.env().set("CPU_JIT", jit)
    fused = load(_graph(order, width=width), _weights(width))
    try:
        assert fused.optimization.counts.get("hard swish fused") == 1
        assert [n.op for n in fused.executor.graph.nodes.values() if n.op not in ("Const", "Placeholder")] == [
            "_NdflowHardSwish"
        ]
        x = _x(width)
        (got,) = _run(fused, x, ["y"])
        t = np.clip(x + np.float32(3), np.float32(0), np.float32(6))
        want = (x * SIXTH) * t if order == "scale_first" else (x * t) * SIXTH
        np.testing.assert_array_equal(got.view(np.int32), want.astype(np.float32).view(np.int32))
    finally:
        nf.env().reset()
        fused.dispose()
        nf.set_backend(previous)


@pytest.mark.parametrize("order", ["scale_first", "scale_last"])
def test_every_backend_agrees_with_the_unoptimized_graph(order, backend):
    fused = load(_graph(order), _weights())
    try:
        x = _x(3000)
        (got,) = _run(fused, x, ["y"])
        nf.env().set("GRAPH_MODEL_OPTIMIZE", False)
        unoptimized = load(_graph(order), _weights())
        try:
            assert all(n.op != "_NdflowHardSwish" for n in unoptimized.executor.graph.nodes.values())
            (want,) = _run(unoptimized, x, ["y"])
        finally:
            unoptimized.dispose()
            nf.env().reset()
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    finally:
        fused.dispose()


@pytest.mark.parametrize(
    "variant",
    ["four instead of three", "per-element scale", "relu6 read elsewhere"],
)
def test_other_chains_are_left_alone(variant):
    if variant == "four instead of three":
        nodes = _graph("scale_first", three="four")
    elif variant == "per-element scale":
        nodes = _graph("vector")
    else:
        nodes = _graph("scale_first", extra_consumer=True)
    model = load(nodes, _weights())
    try:
        assert "hard swish fused" not in model.optimization.counts
        x = _x(3000)
        (got,) = _run(model, x, ["y"])
        three = np.float32(4 if variant == "four instead of three" else 3)
        t = np.clip(x + three, np.float32(0), np.float32(6))
        want = (x * t) * np.float32(0.25) if variant == "per-element scale" else (x * SIXTH) * t
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)
    finally:
        model.dispose()


def test_an_inner_node_asked_for_is_still_computed():
    """Asking for relu6's output (fused away) runs the original graph, as for any fused intermediate."""
    model = load(_graph("scale_first"), _weights())
    try:
        assert model.optimization.counts.get("hard swish fused") == 1
        x = _x(3000)
        y, r6 = _run(model, x, ["y", "r6"])
        t = np.clip(x + np.float32(3), np.float32(0), np.float32(6))
        np.testing.assert_array_equal(r6, t)
        np.testing.assert_allclose(y, (x * SIXTH) * t, rtol=1e-6)
    finally:
        model.dispose()


def test_the_cpu_kernel_refuses_a_bad_order():
    previous = nf.get_backend()
    nf.set_backend("cpu")
    x, three, c = nf.tensor(_x(10)), nf.tensor(np.float32(3)), nf.tensor(SIXTH)
    try:
        with pytest.raises(ValueError, match="order"):
            nf.engine().run_kernel("_NdflowHardSwish", (x, three, c), {"order": "sideways"})
    finally:
        nf.dispose([x, three, c])
        nf.set_backend(previous)
