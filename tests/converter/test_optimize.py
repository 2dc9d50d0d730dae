"""Load-time graph optimizations: every rewrite gives the outputs of the unoptimized graph.

Each synthetic graph is loaded twice (``optimize`` on and off); the optimized one must have the expected
fused/folded nodes and the same outputs (within float32 rounding: folding scales into filters rounds
differently). Requests the optimized graph cannot serve (intermediate outputs, fed baked constants) run
the original graph.
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest
from gm_helpers import artifacts, attr_str, const, node, placeholder
from opt_helpers import F, both, conv_attrs, dispose, ilist, ops_of, rand, same_outputs, slist

import ndflow as nf
from ndflow.converter import load_graph_model
from ndflow.converter.passes.optimize import optimize_enabled


# -- fusion --------------------------------------------------------------------------------------------
@pytest.mark.parametrize("act", ["Relu", "Relu6", "Elu", "Sigmoid", "Tanh", "LeakyRelu", "Prelu", None])
@pytest.mark.parametrize("bias_op", ["BiasAdd", "AddV2", "Add"])
def test_conv_bias_activation_fuse(act, bias_op):
    nodes = [
        placeholder("x", [1, 6, 6, 3]),
        const("w"),
        const("b"),
        const("alpha"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs(dilations=ilist(1, 1, 1, 1))),
        node("bias", bias_op, ["conv", "b"] if bias_op != "Add" else ["b", "conv"], **F),
    ]
    last = "bias"
    if act is not None:
        extra = {"alpha": {"f": 0.3}} if act == "LeakyRelu" else {}
        nodes.append(node("act", act, ["bias", "alpha"] if act == "Prelu" else ["bias"], **F, **extra))
        last = "act"
    nodes.append(node("out", "Neg", [last], **F))
    weights = {"w": rand(3, 3, 3, 4), "b": rand(4), "alpha": rand(1, 1, 4)}
    fast, slow = both(nodes, weights)
    x = nf.tensor(rand(1, 6, 6, 3))
    try:
        ops = ops_of(fast)
        assert ops[last] == "_FusedConv2D" and "conv" not in ops and (last == "bias" or "bias" not in ops)
        fused = fast.executor.graph.nodes[last]
        want = ["BiasAdd"] + ([act] if act else [])
        assert fused.strs("fused_ops") == want
        assert [src for src, _ in fused.inputs] == ["x", "w", "b"] + (["alpha"] if act == "Prelu" else [])
        assert fast.optimization.nodes_after == fast.optimization.nodes_before - (2 if act else 1)
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_depthwise_mul_add_relu6_folds_scale_into_filter():
    nodes = [
        placeholder("x", [1, 5, 5, 3]),
        const("w"),
        const("s"),
        const("c"),
        node("dw", "DepthwiseConv2dNative", ["x", "w"], **conv_attrs()),
        node("mul", "Mul", ["dw", "s"], **F),
        node("add", "Add", ["mul", "c"], **F),
        node("sub", "Sub", ["add", "c"], **F),
        node("relu6", "Relu6", ["sub"], **F),
    ]
    weights = {"w": rand(3, 3, 3, 2), "s": rand(6), "c": rand(1, 1, 1, 6)}
    fast, slow = both(nodes, weights)
    x = nf.tensor(rand(1, 5, 5, 3))
    try:
        ops = ops_of(fast)
        assert ops["relu6"] == "FusedDepthwiseConv2dNative" and not {"dw", "mul", "add", "sub"} & set(ops)
        assert fast.optimization.counts["scales folded into filters"] == 1
        assert {"s", "c", "w"} <= fast.executor.baked  # folded into new constants
        assert "w" not in ops and "w" in fast.weights  # the model's weights are still the loaded ones
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


@pytest.mark.parametrize("op", ["FusedBatchNorm", "FusedBatchNormV3"])
def test_batch_norm_folds_into_conv(op):
    nodes = [
        placeholder("x", [2, 4, 4, 3]),
        const("w"),
        *(const(n) for n in ("scale", "offset", "mean", "var")),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("bn", op, ["conv", "scale", "offset", "mean", "var"], epsilon={"f": 0.001}, **F),
        node("relu", "Relu", ["bn"], **F),
    ]
    weights = {"w": rand(1, 1, 3, 5), "scale": rand(5), "offset": rand(5), "mean": rand(5)}
    weights["var"] = np.abs(rand(5)) + 0.1
    fast, slow = both(nodes, weights)
    x = nf.tensor(rand(2, 4, 4, 3))
    try:
        assert ops_of(fast) == {"x": "Placeholder", "relu": "_FusedConv2D", **_new_consts(fast)}
        same_outputs(fast, slow, x, rtol=1e-4)
    finally:
        x.dispose()
        dispose(fast, slow)


def _new_consts(model) -> dict[str, str]:
    return {name: "Const" for name, n in model.executor.graph.nodes.items() if n.op == "Const"}


@pytest.mark.parametrize("transpose_b", [False, True])
def test_matmul_bias_activation_and_scale(transpose_b):
    nodes = [
        placeholder("x", [-1, 3]),
        const("w"),
        const("b"),
        const("k"),
        node("mm", "MatMul", ["x", "w"], transpose_b={"b": transpose_b}, **F),
        node("bias", "BiasAdd", ["mm", "b"], **F),
        node("div", "RealDiv", ["bias", "k"], **F),
        node("act", "LeakyRelu", ["div"], alpha={"f": 0.1}, **F),
    ]
    weights = {"w": rand(4, 3) if transpose_b else rand(3, 4), "b": rand(4), "k": np.float32(2.5)}
    fast, slow = both(nodes, weights)
    x = nf.tensor(rand(5, 3))
    try:
        fused = fast.executor.graph.nodes["act"]
        assert fused.op == "_FusedMatMul" and fused.strs("fused_ops") == ["BiasAdd", "LeakyRelu"]
        assert fused.float("leakyrelu_alpha") == pytest.approx(0.1)
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_fused_conv_takes_a_following_activation_and_affine():
    nodes = [
        placeholder("x", [1, 4, 4, 2]),
        const("w"),
        const("b"),
        const("two"),
        node("conv", "_FusedConv2D", ["x", "w", "b"], fused_ops=slist("BiasAdd"), num_args={"i": "1"}, **conv_attrs()),
        node("mul", "Mul", ["two", "conv"], **F),
        node("elu", "Elu", ["mul"], **F),
    ]
    fast, slow = both(nodes, {"w": rand(3, 3, 2, 3), "b": rand(3), "two": np.float32(2.0)})
    x = nf.tensor(rand(1, 4, 4, 2))
    try:
        fused = fast.executor.graph.nodes["elu"]
        assert fused.op == "_FusedConv2D" and fused.strs("fused_ops") == ["BiasAdd", "Elu"]
        assert "b" in fast.executor.baked  # the bias was scaled too
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_no_fusion_across_shared_or_output_intermediates():
    nodes = [
        placeholder("x", [1, 4, 4, 2]),
        const("w"),
        const("b"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("bias", "BiasAdd", ["conv", "b"], **F),
        node("relu", "Relu", ["bias"], **F),
        node("other", "Neg", ["bias"], **F),  # a second consumer of the biased value
        node("conv2", "Conv2D", ["x", "w"], **conv_attrs()),
        node("mul", "Mul", ["conv2", "x"], **F),  # not a constant: no fold
        node("conv3", "Conv2D", ["x", "w"], **conv_attrs()),
        node("relu3", "Relu", ["conv3"], **F),
    ]
    sig = {"outputs": {k: {"name": f"{k}:0"} for k in ("relu", "other", "mul", "conv3", "relu3")}}
    weights = {"w": rand(1, 1, 2, 2), "b": rand(2)}
    fast, slow = both(nodes, weights, signature=sig)
    x = nf.tensor(rand(1, 4, 4, 2))
    try:
        ops = ops_of(fast)
        # conv + bias fuse (bias keeps its name: both consumers read it); relu stays apart
        assert ops["bias"] == "_FusedConv2D" and ops["relu"] == "Relu" and "conv" not in ops
        assert ops["conv2"] == "Conv2D" and ops["mul"] == "Mul"
        assert ops["conv3"] == "Conv2D" and ops["relu3"] == "Relu"  # conv3 is an output
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_nchw_and_non_channel_constants_do_not_fold():
    nodes = [
        placeholder("x", [1, 2, 4, 4]),
        const("w"),
        const("b"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs(data_format=attr_str("NCHW"))),
        node("add", "AddV2", ["conv", "b"], **F),
        placeholder("y", [1, 4, 4, 2]),
        node("conv2", "Conv2D", ["y", "w"], **conv_attrs()),
        const("b2"),
        node("add2", "AddV2", ["conv2", "b2"], **F),  # varies along H, not the channels
    ]
    fast, slow = both(nodes, {"w": rand(1, 1, 2, 2), "b": rand(1, 2, 1, 1), "b2": rand(1, 4, 1, 1)})
    x, y = nf.tensor(rand(1, 2, 4, 4)), nf.tensor(rand(1, 4, 4, 2))
    try:
        ops = ops_of(fast)
        assert ops["add"] == "AddV2" and ops["add2"] == "AddV2" and fast.optimization.counts == {}
        same_outputs(fast, slow, {"x": x, "y": y}, ["add", "add2"])
    finally:
        nf.dispose([x, y])
        dispose(fast, slow)


# -- constant folding and identities -------------------------------------------------------------------
def test_constant_folding_of_shape_arithmetic():
    i32 = {"T": {"type": "DT_INT32"}}
    nodes = [
        placeholder("x", [-1, 6]),
        const("w"),
        const("two", "DT_INT32"),
        const("three", "DT_INT32"),
        const("axis", "DT_INT32"),
        node("prod", "Mul", ["two", "three"], **i32),
        node("shape", "Pack", ["two", "prod"], N={"i": "2"}, axis={"i": "0"}, **i32),
        node("wr", "Reshape", ["w", "shape"], **F),
        node("wt", "Transpose", ["wr", "perm"], **F),
        const("perm", "DT_INT32"),
        node("cast", "Cast", ["prod"], DstT={"type": "DT_FLOAT"}),
        node("mm", "MatMul", ["x", "wt"], **F),
        node("out", "Mul", ["mm", "cast"], **F),
        node("rand", "RandomUniform", ["shape"], dtype={"type": "DT_FLOAT"}, seed={"i": "3"}),
        node("ctrl", "Neg", ["cast", "^x"], **F),
    ]
    weights = {"w": rand(12), "two": np.int32(2), "three": np.int32(3), "axis": np.int32(0)}
    weights["perm"] = np.array([1, 0], np.int32)
    sig = {"outputs": {k: {"name": f"{k}:0"} for k in ("out", "rand", "ctrl")}}
    fast, slow = both(nodes, weights, signature=sig)
    x = nf.tensor(rand(2, 6))
    try:
        ops = ops_of(fast)
        for name in ("prod", "shape", "wt", "cast"):
            assert ops.get(name, "Const") == "Const", name
        assert "wr" not in ops  # only read by a folded node: gone
        assert ops["rand"] == "RandomUniform" and ops["ctrl"] == "Neg"  # random / control deps: never folded
        assert fast.optimization.counts["constant folded"] == 5
        out = same_outputs(fast, slow, x, ["out", "ctrl"])
        np.testing.assert_allclose(out[1], [-6.0])
    finally:
        x.dispose()
        dispose(fast, slow)


def test_multi_output_folding_and_identity_removal():
    nodes = [
        placeholder("x", [2]),
        const("c"),
        node("parts", "Unpack", ["c"], num={"i": "2"}, axis={"i": "0"}, **F),
        node("id", "Identity", ["x"], **F),
        node("a", "AddV2", ["id", "parts:1"], **F),
        node("b", "Identity", ["a"], **F),
    ]
    fast, slow = both(nodes, {"c": rand(2, 2)})
    x = nf.tensor(rand(2))
    try:
        ops = ops_of(fast)
        assert "id" not in ops and "parts" not in ops and ops["b"] == "Identity"  # b is the output
        assert ops["parts/folded_1"] == "Const"
        assert fast.optimization.counts == {"constant folded": 1, "identity removed": 1}
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_folding_skips_values_that_would_grow_the_model():
    nodes = [
        const("dims", "DT_INT32"),
        const("v"),
        node("big", "Fill", ["dims", "v"], **F),
        node("small", "Fill", ["dims2", "v"], **F),
        const("dims2", "DT_INT32"),
        node("out", "AddV2", ["big", "v"], **F),
        node("out2", "AddV2", ["small", "v"], **F),
    ]
    weights = {"dims": np.array([1100, 1000], np.int32), "dims2": np.array([3, 2], np.int32), "v": np.float32(1)}
    fast = load_graph_model(nf.io.from_memory(artifacts(nodes, weights)))
    try:
        ops = ops_of(fast)
        assert ops["big"] == "Fill" and ops["out2"] == "Const"
        out = fast.execute({}, ["out", "out2"])
        assert out[0].shape == (1100, 1000) and out[1].numpy().tolist() == [[2.0] * 2] * 3
        nf.dispose(out)
    finally:
        fast.dispose()


# -- serving requests, options, memory -----------------------------------------------------------------
CONV_WEIGHTS = {"w": rand(3, 3, 2, 2), "b": rand(2), "s": rand(2)}


def _conv_model(optimize=None):
    nodes = [
        placeholder("x", [1, 4, 4, 2]),
        const("w"),
        const("b"),
        const("s"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("mul", "Mul", ["conv", "s"], **F),
        node("bias", "BiasAdd", ["mul", "b"], **F),
        node("relu", "Relu", ["bias"], **F),
    ]
    options = {} if optimize is None else {"optimize": optimize}
    return load_graph_model(nf.io.from_memory(artifacts(nodes, CONV_WEIGHTS)), options)


def test_requests_the_optimized_graph_cannot_serve_run_the_original():
    fast, slow = _conv_model(), _conv_model(False)
    x = nf.tensor(rand(1, 4, 4, 2))
    s2 = nf.tensor([3.0, -1.0])
    try:
        assert set(ops_of(fast)) == {"x", "relu", "relu/folded_filter", "relu/folded_bias"}
        same_outputs(fast, slow, x, ["conv", "bias", "relu"])  # fused-away intermediates
        same_outputs(fast, slow, {"x": x, "s": s2}, ["relu"])  # a baked constant fed a new value
        conv = slow.execute(x, "conv")
        same_outputs(fast, slow, {"conv": conv}, ["relu"])  # fed in the middle of the chain
        conv.dispose()
        a = asyncio.run(fast.execute_async(x, ["mul", "relu"]))
        b = slow.execute(x, ["mul", "relu"])
        for p, q in zip(a, b, strict=True):
            np.testing.assert_allclose(p.numpy(), q.numpy(), rtol=1e-5, atol=1e-5)
        nf.dispose(a + b)
        assert not fast.needs_async()
        with pytest.raises(ValueError, match="not found in the graph"):
            fast.execute(x, "nope")
        with pytest.raises(ValueError, match=r"keys: \['nope'\] that are not part of graph"):
            fast.execute({"nope": x}, "relu")
    finally:
        nf.dispose([x, s2])
        dispose(fast, slow)


def test_opt_out_by_option_and_flag():
    previous = nf.env().get("GRAPH_MODEL_OPTIMIZE")
    assert optimize_enabled() is previous and not optimize_enabled(False)
    with pytest.raises(TypeError, match="'optimize' must be a bool"):
        optimize_enabled("yes")
    model = _conv_model(False)
    assert model.optimization is None and model.executor.fallback is None and "conv" in ops_of(model)
    model.dispose()
    nf.env().set("GRAPH_MODEL_OPTIMIZE", False)
    try:
        model = _conv_model()
        assert model.optimization is None
        model.dispose()
        model = _conv_model(True)  # the option wins
        assert model.optimization is not None and "conv" not in ops_of(model)
        model.dispose()
    finally:
        nf.env().set("GRAPH_MODEL_OPTIMIZE", previous)


def test_dispose_frees_folded_weights_and_model_metadata_is_unchanged():
    before = nf.memory().num_tensors
    model = _conv_model()
    assert nf.memory().num_tensors == before + 5  # 3 loaded weights + folded filter and bias
    assert sorted(model.weights) == ["b", "s", "w"]
    assert [i.name for i in model.inputs] == ["x"] and model.output_nodes == ["relu"]
    assert "nodes=8" in repr(model)
    model.dispose()
    assert nf.memory().num_tensors == before


def test_program_frees_what_a_node_makes_and_names_the_failing_node():
    # _FusedConv2D with a batch norm makes intermediate tensors inside its mapper (not fused at load:
    # the optimizer leaves fused batch norms to the mapper)
    nodes = [
        placeholder("x", [1, 3, 3, 2]),
        const("w"),
        *(const(n) for n in ("scale", "offset", "mean", "var")),
        node(
            "conv",
            "_FusedConv2D",
            ["x", "w", "scale", "offset", "mean", "var"],
            fused_ops=slist("FusedBatchNorm", "Relu"),
            num_args={"i": "4"},
            epsilon={"f": 0.001},
            **conv_attrs(),
        ),
        node("out", "Reshape", ["conv", "shape"], **F),
        const("shape", "DT_INT32"),
    ]
    weights = {n: np.abs(rand(2)) for n in ("scale", "offset", "mean", "var")}
    weights |= {"w": rand(1, 1, 2, 2), "shape": np.array([-1], np.int32)}
    fast, slow = both(nodes, weights)
    x = nf.tensor(rand(1, 3, 3, 2))
    bad = nf.tensor([7], dtype="int32")
    try:
        info = nf.profile(lambda: fast.execute(x))
        assert info.new_tensors == 1
        info.result.dispose()
        same_outputs(fast, slow, x)
        fast.weights["shape"]  # noqa: B018 - still there
        with pytest.raises(ValueError, match=r"graph model node 'out' \(Reshape\)"):
            fast.execute({"x": x, "shape": bad})
    finally:
        nf.dispose([x, bad])
        dispose(fast, slow)


def test_an_optimizer_failure_leaves_the_model_as_loaded(monkeypatch, caplog):
    import ndflow.converter.graph_model as gm

    def broken(graph, weights):
        raise RuntimeError("boom")

    monkeypatch.setattr(gm, "optimize_graph", broken)
    with caplog.at_level("WARNING", logger="ndflow"):
        model = _conv_model()
    x = nf.tensor(rand(1, 4, 4, 2))
    try:
        assert model.optimization is None and "conv" in ops_of(model)
        assert "optimizations skipped (RuntimeError: boom)" in caplog.text
        nf.dispose(model.predict(x))
    finally:
        x.dispose()
        model.dispose()


def test_constant_minus_conv_folds_with_a_negative_scale():
    nodes = [
        placeholder("x", [1, 4, 4, 2]),
        const("w"),
        const("c"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("sub", "Sub", ["c", "conv"], **F),
        node("relu", "Relu", ["sub"], **F),
    ]
    fast, slow = both(nodes, {"w": rand(3, 3, 2, 3), "c": rand(3)})
    x = nf.tensor(rand(1, 4, 4, 2))
    try:
        assert ops_of(fast)["relu"] == "_FusedConv2D" and fast.optimization.counts["scales folded into filters"] == 1
        out = same_outputs(fast, slow, x)
        assert (out[0] > 0).any() and (out[0] == 0).any()  # both sides of the activation were taken
    finally:
        x.dispose()
        dispose(fast, slow)
