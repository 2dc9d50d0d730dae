"""Canonical forms before fusion: clips -> Relu/Relu6, spelled-out PReLU -> Prelu, Pad -> conv padding.

Each graph is loaded with and without optimizations; the rewritten one must have the expected nodes and
give the same outputs (inputs straddle the clip points, so every branch of each activation is taken).
"""

from __future__ import annotations

import numpy as np
import pytest
from gm_helpers import attr_str, const, node, placeholder
from opt_helpers import F, both, conv_attrs, dispose, ilist, ops_of, rand, same_outputs, slist

import ndflow as nf


def _scalar_weights(**values: float) -> dict[str, np.ndarray]:
    return {k: np.float32(v) for k, v in values.items()}


def _x(*shape: int) -> nf.Tensor:
    return nf.tensor(rand(*shape) * 8)  # values beyond 6 and below 0


@pytest.mark.parametrize(
    "chain, want",
    [
        ([("Relu", None), ("Minimum", "six")], "Relu6"),
        ([("Minimum", "six"), ("Maximum", "zero")], "Relu6"),  # Keras relu(max_value=6)
        ([("Maximum", "zero"), ("Minimum", "six")], "Relu6"),
        ([("Relu", None), ("Maximum", "zero")], "Relu"),
        ([("Relu6", None), ("Minimum", "six")], "Relu6"),
        ([("Maximum", "zero")], "Relu"),
    ],
)
def test_clips_become_relu_and_relu6(chain, want):
    nodes = [placeholder("x", [2, 8]), const("zero"), const("six")]
    prev = "x"
    for i, (op, c) in enumerate(chain):
        inputs = [prev] if c is None else ([c, prev] if i % 2 else [prev, c])
        nodes.append(node(f"n{i}", op, inputs, **F))
        prev = f"n{i}"
    fast, slow = both(nodes, _scalar_weights(zero=0, six=6))
    x = _x(2, 8)
    try:
        ops = ops_of(fast)
        assert ops[prev] == want and all(f"n{i}" not in ops for i in range(len(chain) - 1))
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_clips_that_are_not_relu_stay():
    nodes = [
        placeholder("x", [4]),
        const("five"),
        const("zero_vec"),
        node("a", "Minimum", ["x", "five"], **F),  # 5, not 6
        node("b", "Maximum", ["a", "zero_vec"], **F),  # not a scalar
        node("c", "Minimum", ["b", "five"], **F),
    ]
    fast, slow = both(nodes, {"five": np.float32(5), "zero_vec": np.zeros(4, np.float32)})
    x = _x(4)
    try:
        assert ops_of(fast) == {"x": "Placeholder", "five": "Const", "zero_vec": "Const", "a": "Minimum",
                                "b": "Maximum", "c": "Minimum"}  # fmt: skip
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


@pytest.mark.parametrize("swap", [False, True])
def test_prelu_from_max_min(swap):
    nodes = [
        placeholder("x", [1, 4, 4, 2]),
        const("w"),
        const("zero"),
        const("gamma"),
        node("conv", "Conv2D", ["x", "w"], **conv_attrs()),
        node("max", "Maximum", ["zero", "conv"] if swap else ["conv", "zero"], **F),
        node("min", "Minimum", ["zero", "conv"], **F),
        node("mul", "Mul", ["gamma", "min"] if swap else ["min", "gamma"], **F),
        node("add", "AddV2", ["mul", "max"] if swap else ["max", "mul"], **F),
    ]
    weights = {"w": rand(3, 3, 2, 2), "zero": np.float32(0), "gamma": rand(2)}
    fast, slow = both(nodes, weights)
    x = _x(1, 4, 4, 2)
    try:
        ops = ops_of(fast)
        assert ops["add"] == "_FusedConv2D" and not {"conv", "max", "min", "mul"} & set(ops)
        assert fast.executor.graph.nodes["add"].strs("fused_ops") == ["Prelu"]
        assert fast.optimization.counts["prelu recognized"] == 1
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_prelu_from_relu_abs():
    nodes = [
        placeholder("x", [1, 3, 3, 2]),
        const("w"),
        const("b"),
        const("m"),
        node("conv", "_FusedConv2D", ["x", "w", "b"], fused_ops=slist("BiasAdd"), num_args={"i": "1"}, **conv_attrs()),
        node("relu", "Relu", ["conv"], **F),
        node("abs", "Abs", ["conv"], **F),
        node("sub", "Sub", ["conv", "abs"], **F),
        node("mul", "Mul", ["sub", "m"], **F),
        node("add", "Add", ["relu", "mul"], **F),
    ]
    weights = {"w": rand(1, 1, 2, 2), "b": rand(2), "m": rand(2) * 0.1}
    fast, slow = both(nodes, weights)
    x = _x(1, 3, 3, 2)
    try:
        ops = ops_of(fast)
        assert ops["add"] == "_FusedConv2D" and not {"relu", "abs", "sub", "mul", "conv"} & set(ops)
        assert fast.executor.graph.nodes["add"].strs("fused_ops") == ["BiasAdd", "Prelu"]
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_prelu_pattern_with_a_shared_term_stays():
    nodes = [
        placeholder("x", [4]),
        const("zero"),
        const("gamma"),
        node("max", "Maximum", ["x", "zero"], **F),
        node("min", "Minimum", ["x", "zero"], **F),
        node("mul", "Mul", ["min", "gamma"], **F),
        node("add", "AddV2", ["max", "mul"], **F),
        node("other", "Neg", ["min"], **F),  # min is read twice
    ]
    sig = {"outputs": {"add": {"name": "add:0"}, "other": {"name": "other:0"}}}
    fast, slow = both(nodes, {"zero": np.float32(0), "gamma": np.float32(0.25)}, signature=sig)
    x = _x(4)
    try:
        assert ops_of(fast)["add"] == "AddV2" and "prelu recognized" not in fast.optimization.counts
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


@pytest.mark.parametrize("op", ["Conv2D", "DepthwiseConv2dNative", "FusedDepthwiseConv2dNative"])
@pytest.mark.parametrize("strides", [1, 2])
def test_pad_moves_into_convolution(op, strides):
    extra = {"fused_ops": slist("BiasAdd", "Relu6"), "num_args": {"i": "1"}} if op.startswith("Fused") else {}
    nodes = [
        placeholder("x", [1, 7, 7, 3]),
        const("paddings", "DT_INT32"),
        const("w"),
        const("b"),
        node("pad", "Pad", ["x", "paddings"], **F),
        node(
            "conv",
            op,
            ["pad", "w", "b"] if extra else ["pad", "w"],
            **conv_attrs(padding=attr_str("VALID"), strides=ilist(1, strides, strides, 1)),
            **extra,
        ),
    ]
    weights = {"paddings": np.array([[0, 0], [1, 2], [0, 1], [0, 0]], np.int32), "b": rand(3)}
    weights["w"] = rand(3, 3, 3, 2) if op == "Conv2D" else rand(3, 3, 3, 1)
    fast, slow = both(nodes, weights)
    x = _x(1, 7, 7, 3)
    try:
        ops = ops_of(fast)
        assert "pad" not in ops and "paddings" not in ops
        conv = fast.executor.graph.nodes["conv"]
        assert conv.str("padding") == "EXPLICIT" and conv.ints("explicit_paddings") == [0, 0, 1, 2, 0, 1, 0, 0]
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


@pytest.mark.parametrize(
    "pad_op, paddings, padding",
    [
        ("Pad", [[0, 0], [0, 0], [0, 0], [0, 2]], "VALID"),  # channels
        ("Pad", [[0, 0], [1, 1], [1, 1], [0, 0]], "SAME"),
        ("PadV2", [[0, 0], [1, 1], [1, 1], [0, 0]], "VALID"),  # pads with 1.5
        ("MirrorPad", [[0, 0], [1, 1], [1, 1], [0, 0]], "VALID"),
    ],
)
def test_pads_that_do_not_move(pad_op, paddings, padding):
    inputs = ["x", "paddings", "value"] if pad_op == "PadV2" else ["x", "paddings"]
    extra = {"mode": attr_str("REFLECT")} if pad_op == "MirrorPad" else {}
    nodes = [
        placeholder("x", [1, 5, 5, 2]),
        const("paddings", "DT_INT32"),
        const("value"),
        const("w"),
        node("pad", pad_op, inputs, **F, **extra),
        node("conv", "Conv2D", ["pad", "w"], **conv_attrs(padding=attr_str(padding))),
    ]
    channels = 4 if paddings[3][1] else 2
    weights = {"paddings": np.array(paddings, np.int32), "value": np.float32(1.5), "w": rand(3, 3, channels, 2)}
    fast, slow = both(nodes, weights)
    x = _x(1, 5, 5, 2)
    try:
        assert ops_of(fast)["pad"] == pad_op and "pads moved into convolutions" not in fast.optimization.counts
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)
