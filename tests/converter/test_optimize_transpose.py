"""Transpose sinking: ONNX-style NCHW islands between NHWC convolutions lose their Transposes.

Each graph is loaded with and without optimizations; the rewritten one must have the expected Transposes
left and give the same outputs.
"""

from __future__ import annotations

import numpy as np
from gm_helpers import attr_str, const, node, placeholder
from opt_helpers import F, both, conv_attrs, dispose, ops_of, rand, same_outputs

import ndflow as nf

I32 = "DT_INT32"


def _perms() -> dict[str, np.ndarray]:
    return {"to_nchw": np.array([0, 3, 1, 2], np.int32), "to_nhwc": np.array([0, 2, 3, 1], np.int32)}


def _transposes(model) -> list[str]:
    return sorted(name for name, op in ops_of(model).items() if op == "Transpose")


def test_onnx_style_island_cancels_and_fuses():
    nodes = [
        placeholder("x", [1, 6, 6, 2]),
        const("w1"),
        const("b1"),
        const("w2"),
        const("to_nchw", I32),
        const("to_nhwc", I32),
        const("paddings", I32),
        const("half"),
        const("axis", I32),
        node("conv1", "Conv2D", ["x", "w1"], **conv_attrs()),
        node("bias1", "BiasAdd", ["conv1", "b1"], **F),
        node("t1", "Transpose", ["bias1", "to_nchw"], **F),
        node("lrelu", "LeakyRelu", ["t1"], alpha={"f": 0.1}, **F),
        node("scaled", "Mul", ["lrelu", "half"], **F),  # a scalar constant: the transpose passes
        node("pad", "Pad", ["scaled", "paddings"], **F),  # NCHW paddings
        node("t2", "Transpose", ["pad", "to_nhwc"], **F),
        node("conv2", "Conv2D", ["t2", "w2"], **conv_attrs(padding=attr_str("VALID"))),
        node("t3", "Transpose", ["conv2", "to_nchw"], **F),
        node("t4", "Transpose", ["x", "to_nchw"], **F),
        node("cat", "ConcatV2", ["t3", "t4", "axis"], N={"i": "2"}, **F),  # along C in NCHW
        node("t5", "Transpose", ["cat", "to_nhwc"], **F),
        node("out", "Sigmoid", ["t5"], **F),
    ]
    weights = {"w1": rand(3, 3, 2, 4), "b1": rand(4), "w2": rand(3, 3, 4, 2), "half": np.float32(0.5)}
    weights |= _perms() | {"paddings": np.array([[0, 0], [0, 0], [1, 1], [2, 0]], np.int32), "axis": np.int32(1)}
    fast, slow = both(nodes, weights)
    x = nf.tensor(rand(1, 6, 6, 2))
    try:
        assert _transposes(fast) == []
        counts = fast.optimization.counts
        assert counts["transposes cancelled"] == 2 and counts["pads moved into convolutions"] == 1
        ops = ops_of(fast)
        assert ops["lrelu/untransposed"] == "_FusedConv2D"  # the moved LeakyRelu fused into conv1
        same_outputs(fast, slow, x)
    finally:
        x.dispose()
        dispose(fast, slow)


def test_transposes_merge_and_stay_where_they_must():
    nodes = [
        placeholder("x", [2, 3, 4, 5]),
        placeholder("y", [2, 3, 4, 5]),
        const("p1", I32),
        const("p2", I32),
        const("vec"),
        node("a", "Transpose", ["x", "p1"], **F),
        node("b", "Transpose", ["a", "p2"], **F),  # p1 then p2: one transpose
        node("c", "Transpose", ["y", "p1"], **F),
        node("d", "AddV2", ["c", "vec"], **F),  # not a scalar: stays below the transpose
        node("e", "Transpose", ["x", "p1"], **F),
        node("f", "Relu", ["e"], **F),
        node("g", "Neg", ["e"], **F),  # e has two consumers: it stays
    ]
    weights = {"p1": np.array([0, 2, 3, 1], np.int32), "p2": np.array([3, 1, 0, 2], np.int32), "vec": rand(3)}
    sig = {"outputs": {k: {"name": f"{k}:0"} for k in ("b", "d", "f", "g")}}
    fast, slow = both(nodes, weights, signature=sig)
    x, y = nf.tensor(rand(2, 3, 4, 5)), nf.tensor(rand(2, 3, 4, 5))
    try:
        assert _transposes(fast) == ["b", "c", "e"] and "a" not in ops_of(fast)
        assert fast.optimization.counts == {"transposes merged": 1}
        same_outputs(fast, slow, {"x": x, "y": y}, ["b", "d", "f", "g"])
    finally:
        nf.dispose([x, y])
        dispose(fast, slow)


def test_an_output_transpose_is_not_moved():
    nodes = [
        placeholder("x", [1, 2, 2, 3]),
        const("to_nchw", I32),
        node("t", "Transpose", ["x", "to_nchw"], **F),
        node("r", "Relu", ["t"], **F),
    ]
    sig = {"outputs": {"t": {"name": "t:0"}, "r": {"name": "r:0"}}}
    fast, slow = both(nodes, _perms(), signature=sig)
    x = nf.tensor(rand(1, 2, 2, 3))
    try:
        assert ops_of(fast)["r"] == "Relu" and "transposes moved" not in fast.optimization.counts
        same_outputs(fast, slow, x, ["t", "r"])
    finally:
        x.dispose()
        dispose(fast, slow)
