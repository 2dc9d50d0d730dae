"""Residual-add fusion: ``conv (+ bias) -> Add(other) [-> activation]`` becomes one node whose kernel adds
the residual before the activation; the optimized graph gives the unoptimized graph's outputs on cpu
with the JIT off and on, and on torch and webgpu where they are available."""

from __future__ import annotations

import pytest
from gm_helpers import const, node, placeholder
from opt_helpers import F, both, conv_attrs, dispose, ops_of, rand, same_outputs, slist

import ndflow as nf
from ndflow.backends.cpu import numba as jit
from ndflow.ops import fused as nf_fused

BACKENDS = ["cpu-numpy", *(["cpu-jit"] if jit.numba_available() else [])]
BACKENDS += [n for n in ("torch", "webgpu") if nf.find_backend(n) is not None]


@pytest.fixture(params=BACKENDS)
def backend(request):
    previous = nf.get_backend()
    nf.set_backend("cpu" if request.param.startswith("cpu") else request.param)
    nf.env().set("CPU_JIT", request.param == "cpu-jit")
    yield request.param
    nf.env().reset()
    nf.set_backend(previous)


def _block(residual: str, activation: list[dict]) -> list[dict]:
    """x -> conv+bias (fused by the loader) -> AddV2(residual) -> activation nodes."""
    return [
        placeholder("x", [1, 6, 6, 4]),
        placeholder("y", [1, 6, 6, 4]),
        const("w"),
        const("b"),
        const("dw"),
        const("db"),
        node("pre", "Conv2D", ["x", "w"], **conv_attrs()),
        node("prebias", "BiasAdd", ["pre", "b"], **F),
        node("prerelu", "Relu", ["prebias"], **F),
        node("dconv", "DepthwiseConv2dNative", ["prerelu", "dw"], **conv_attrs()),
        node("dbias", "BiasAdd", ["dconv", "db"], **F),
        node("add", "AddV2", [residual, "dbias"], **F),
        *activation,
    ]


WEIGHTS = {"w": rand(1, 1, 4, 4), "b": rand(4), "dw": rand(3, 3, 4, 1), "db": rand(4), "alpha": rand(4) * 0.1}


@pytest.mark.parametrize("act", ["Relu", "Prelu", "Relu6", None])
def test_depthwise_bias_add_activation(backend, act):
    last = "act" if act else "add"
    activation = []
    if act == "Prelu":
        activation = [const("alpha"), node("act", "Prelu", ["add", "alpha"], **F)]
    elif act:
        activation = [node("act", act, ["add"], **F)]
    nodes = _block("x", activation)
    fast, slow = both(nodes, WEIGHTS, signature={"outputs": {last: {"name": f"{last}:0"}}})
    x = nf.tensor(rand(1, 6, 6, 4))
    try:
        ops = ops_of(fast)
        assert ops[last] == "_NdflowResidualDepthwiseConv2d" and (last == "add" or "add" not in ops)
        assert "dbias" not in ops and "dconv" not in ops
        assert fast.optimization.counts.get("residual adds fused") == 1
        fused = fast.executor.graph.nodes[last]
        assert fused.strs("fused_ops") == ["BiasAdd", *([act] if act else [])]
        assert fused.inputs[-1] == ("x", 0)
        same_outputs(fast, slow, {"x": x, "y": x}, [last])
    finally:
        x.dispose()
        dispose(fast, slow)


def test_conv_with_data_residual_and_relu(backend, monkeypatch):
    calls = []
    real = nf_fused._residual
    monkeypatch.setattr(nf_fused, "_residual", lambda *a: calls.append(a[2]) or real(*a))
    nodes = [
        placeholder("x", [1, 5, 5, 3]),
        const("w"),
        const("b"),
        const("w2"),
        node("skip", "Conv2D", ["x", "w2"], **conv_attrs()),  # the residual: another computed tensor
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("bias", "BiasAdd", ["conv", "b"], **F),
        node("add", "Add", ["bias", "skip"], **F),
        node("relu", "Relu", ["add"], **F),
    ]
    fast, slow = both(nodes, {"w": rand(3, 3, 3, 6), "b": rand(6), "w2": rand(1, 1, 3, 6)})
    x = nf.tensor(rand(1, 5, 5, 3))
    try:
        ops = ops_of(fast)
        assert ops["relu"] == "_NdflowResidualConv2D" and "add" not in ops and "bias" not in ops
        same_outputs(fast, slow, x, ["relu"])
        assert calls == ["float32"]  # the residual went into the kernel
    finally:
        x.dispose()
        dispose(fast, slow)


def test_broadcast_residual_falls_back(backend, monkeypatch):
    # the residual [1, 1, 1, 4] broadcasts over the output: the node runs the Add (and activation) unfused
    nodes = [
        placeholder("x", [1, 6, 6, 4]),
        placeholder("r", [1, 1, 1, 4]),
        const("dw"),
        const("db"),
        node("dconv", "DepthwiseConv2dNative", ["x", "dw"], **conv_attrs()),
        node("dbias", "BiasAdd", ["dconv", "db"], **F),
        node("add", "AddV2", ["dbias", "r"], **F),
        node("act", "Relu6", ["add"], **F),
    ]
    fast, slow = both(nodes, WEIGHTS)
    x, r = nf.tensor(rand(1, 6, 6, 4) * 4), nf.tensor(rand(1, 1, 1, 4) * 4)
    try:
        assert ops_of(fast)["act"] == "_NdflowResidualDepthwiseConv2d"
        monkeypatch.setattr(nf_fused, "_residual", None)  # the fallback never passes the residual in
        same_outputs(fast, slow, {"x": x, "r": r}, ["act"])
    finally:
        nf.dispose([x, r])
        dispose(fast, slow)


def test_no_residual_fusion_when_shared_constant_or_activated():
    nodes = [
        placeholder("x", [1, 4, 4, 4]),
        const("w"),
        const("b"),
        const("c"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("bias", "BiasAdd", ["conv", "b"], **F),
        node("add", "AddV2", ["bias", "x"], **F),
        node("neg", "Neg", ["bias"], **F),  # the conv output has a second consumer: no residual fusion
        node("conv2", "Conv2D", ["x", "w"], **conv_attrs()),
        node("add2", "AddV2", ["conv2", "c"], **F),  # a constant addend of another shape: not a residual
        node(
            "conv3",
            "_FusedConv2D",
            ["x", "w", "b"],
            fused_ops=slist("BiasAdd", "Relu"),
            num_args={"i": "1"},
            **conv_attrs(),
        ),  # fmt: skip
        node("add3", "AddV2", ["conv3", "x"], **F),  # the conv already has its activation
    ]
    sig = {"outputs": {k: {"name": f"{k}:0"} for k in ("add", "neg", "add2", "add3")}}
    fast, slow = both(nodes, {"w": rand(1, 1, 4, 4), "b": rand(4), "c": rand(1, 4, 1, 1)}, signature=sig)
    x = nf.tensor(rand(1, 4, 4, 4))
    try:
        ops = ops_of(fast)
        assert ops["add"] == "AddV2" and ops["add2"] == "AddV2" and ops["add3"] == "AddV2"
        assert "residual adds fused" not in fast.optimization.counts
        same_outputs(fast, slow, x, ["add", "neg", "add2", "add3"])
    finally:
        x.dispose()
        dispose(fast, slow)


@pytest.mark.parametrize("bias_after", [None, "AddV2", "BiasAdd"])
def test_grappler_addn_residual_then_bias_then_prelu(backend, bias_after):
    """TF's grappler writes ``conv + residual`` as an AddN of two and may move the bias after it:
    ``Prelu(AddN(r, conv) + c)`` becomes one residual conv with bias ``c``, the same values up to float32
    rounding (``(conv + c) + r`` for ``(conv + r) + c``)."""
    nodes = [
        placeholder("x", [1, 5, 5, 4]),
        placeholder("r", [1, 5, 5, 6]),
        const("w"),
        const("c"),
        const("alpha"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("sum", "AddN", ["r", "conv"], N={"i": "2"}, **F),
    ]
    last = "sum"
    if bias_after:
        nodes.append(node("biased", bias_after, ["sum", "c"], **F))
        last = "biased"
    nodes.append(node("act", "Prelu", [last, "alpha"], **F))
    weights = {"w": rand(1, 1, 4, 6), "c": rand(6), "alpha": rand(6) * 0.1}
    fast, slow = both(nodes, weights)
    x, r = nf.tensor(rand(1, 5, 5, 4)), nf.tensor(rand(1, 5, 5, 6))
    try:
        ops = ops_of(fast)
        assert ops["act"] == "_NdflowResidualConv2D" and not {"conv", "sum", "biased"} & set(ops)
        fused = fast.executor.graph.nodes["act"]
        assert fused.strs("fused_ops") == [*(["BiasAdd"] if bias_after else []), "Prelu"]
        assert fused.inputs[-1] == ("r", 0)
        same_outputs(fast, slow, {"x": x, "r": r}, ["act"])
    finally:
        nf.dispose([x, r])
        dispose(fast, slow)


def test_an_addn_of_three_is_not_a_residual():
    nodes = [
        placeholder("x", [1, 4, 4, 4]),
        const("w"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("sum", "AddN", ["x", "conv", "x"], N={"i": "3"}, **F),
    ]
    fast, slow = both(nodes, {"w": rand(1, 1, 4, 4)})
    try:
        assert ops_of(fast)["sum"] == "AddN"
    finally:
        dispose(fast, slow)
