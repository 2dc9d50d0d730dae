"""A layers model's inference written as a graph of TF ops, so the graph-model optimizer and program can run it.

:func:`trace_model` walks the model's nodes in topological order and writes, for each layer of a kind known
to be a pure function of its inputs and weights in inference mode, the TF ops a converted graph model would
hold for it (``Conv2D`` + ``BiasAdd`` + ``Relu``, ``FusedBatchNormV3``, ``MatMul``, ``ConcatV2``, ...). The
weights are the layers' own variables (referenced, never copied); the few small constants the graph needs
(axes, paddings, shapes) are new tensors listed in :attr:`Trace.owned`. A layer of any other kind, a
channels-first layout, a call hook, a node called with explicit arguments, a layer with several outputs or
a nested model raises :class:`UntraceableError`; the caller then runs the model eagerly.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ...converter.load.registry import get_mapper
from ...core.tensor import Tensor
from ...ops import tensor as make_tensor
from .. import activations as act
from .. import advanced_activations as adv
from .. import convolutional as conv
from .. import convolutional_depthwise as dconv
from .. import core, core_extra, merge, normalization, pooling
from .inputs import InputLayer
from .topology import SymbolicTensor


class UntraceableError(Exception):
    """The model holds a layer (or a use of one) that the graph path does not reproduce exactly."""


_DTYPES = {"float32": "DT_FLOAT", "int32": "DT_INT32", "bool": "DT_BOOL"}


def _s(value: str) -> dict[str, str]:
    return {"s": base64.b64encode(value.encode()).decode()}


def _ints(values: Sequence[int]) -> dict[str, Any]:
    return {"list": {"i": [str(int(v)) for v in values]}}


class Trace:
    """The nodes (GraphDef JSON), the weights by Const node name, and the constants made for the graph."""

    def __init__(self) -> None:
        self.nodes: list[dict[str, Any]] = []
        self.weights: dict[str, Tensor] = {}
        self.owned: list[Tensor] = []
        self.variables: list[Tensor] = []
        self._count = 0

    def name(self, hint: str) -> str:
        """A node name not used yet."""
        self._count += 1
        return f"{hint}/{self._count}"

    def op(self, hint: str, op: str, inputs: Sequence[str], **attr: Any) -> str:
        """Add a node running ``op`` on ``inputs``; its name."""
        if get_mapper(op) is None:
            raise UntraceableError(f"op {op} has no graph mapper")
        name = self.name(hint)
        self.nodes.append({"name": name, "op": op, "input": list(inputs), "attr": attr})
        return name

    def weight(self, hint: str, variable: Any) -> str:
        """A Const node whose value is the layer variable's (read at each run, never copied)."""
        value = variable.read()
        name = self.name(hint)
        self.nodes.append({"name": name, "op": "Const", "attr": {"dtype": {"type": _DTYPES.get(value.dtype, "")}}})
        self.weights[name] = value
        self.variables.append(value)
        return name

    def const(self, hint: str, values: Any, dtype: str = "int32") -> str:
        """A Const node holding a small new tensor (freed with the trace)."""
        t = make_tensor(np.asarray(values), dtype=dtype)
        self.owned.append(t)
        name = self.name(hint)
        self.nodes.append({"name": name, "op": "Const", "attr": {"dtype": {"type": _DTYPES[dtype]}}})
        self.weights[name] = t
        return name

    def dispose(self) -> None:
        """Free the constants made for the graph."""
        for t in self.owned:
            t.dispose()
        self.owned.clear()


# -- activations ------------------------------------------------------------------------------------
_ACTIVATION_OPS: dict[type, str] = {
    act.Relu: "Relu", act.Relu6: "Relu6", act.Sigmoid: "Sigmoid", act.Tanh: "Tanh", act.Elu: "Elu",
    act.Selu: "Selu", act.Softplus: "Softplus", act.Softmax: "Softmax",
}  # fmt: skip


def activation(trace: Trace, hint: str, x: str, fn: Any) -> str:
    """``fn`` (a layers activation) applied to node ``x``."""
    kind = type(fn)
    if kind is act.Linear:
        return x
    op = _ACTIVATION_OPS.get(kind)
    if op is None:
        raise UntraceableError(f"activation {fn.get_class_name()!r}")
    return trace.op(hint, op, [x])


# -- layer kinds ------------------------------------------------------------------------------------
Translator = Callable[[Trace, Any, list[str], list[SymbolicTensor]], str]


def _channels_last(layer: Any) -> None:
    if getattr(layer, "data_format", "channelsLast") not in (None, "channelsLast", "channels_last"):
        raise UntraceableError(f"{layer.name}: data_format {layer.data_format!r}")


def _padding(layer: Any) -> dict[str, str]:
    if layer.padding not in ("same", "valid"):
        raise UntraceableError(f"{layer.name}: padding {layer.padding!r}")
    return _s(layer.padding.upper())


def _conv_attrs(layer: Any) -> dict[str, Any]:
    _channels_last(layer)
    if layer.rank != 2:
        raise UntraceableError(f"{layer.name}: rank {layer.rank}")
    return {
        "strides": _ints([1, *layer.strides, 1]),
        "padding": _padding(layer),
        "data_format": _s("NHWC"),
        "dilations": _ints([1, *layer.dilation_rate, 1]),
    }


def _bias_activation(trace: Trace, layer: Any, y: str) -> str:
    if layer.bias is not None:
        y = trace.op(layer.name, "BiasAdd", [y, trace.weight(layer.name, layer.bias)], data_format=_s("NHWC"))
    return activation(trace, layer.name, y, layer.activation)


def _conv2d(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    if getattr(layer, "groups", 1) not in (None, 1):
        raise UntraceableError(f"{layer.name}: groups")
    y = trace.op(layer.name, "Conv2D", [xs[0], trace.weight(layer.name, layer.kernel)], **_conv_attrs(layer))
    return _bias_activation(trace, layer, y)


def _depthwise2d(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    kernel = trace.weight(layer.name, layer.depthwise_kernel)
    y = trace.op(layer.name, "DepthwiseConv2dNative", [xs[0], kernel], **_conv_attrs(layer))
    return _bias_activation(trace, layer, y)


def _separable2d(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    attrs = _conv_attrs(layer)
    kernel = trace.weight(layer.name, layer.depthwise_kernel)
    y = trace.op(layer.name, "DepthwiseConv2dNative", [xs[0], kernel], **attrs)
    pointwise = {**attrs, "strides": _ints([1, 1, 1, 1]), "padding": _s("VALID"), "dilations": _ints([1, 1, 1, 1])}
    y = trace.op(layer.name, "Conv2D", [y, trace.weight(layer.name, layer.pointwise_kernel)], **pointwise)
    return _bias_activation(trace, layer, y)


def _dense(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    if len(syms[0].shape) != 2:
        raise UntraceableError(f"{layer.name}: Dense on rank {len(syms[0].shape)}")
    y = trace.op(layer.name, "MatMul", [xs[0], trace.weight(layer.name, layer.kernel)])
    return _bias_activation(trace, layer, y)


def _batch_norm(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    rank = len(syms[0].shape)
    axis = layer.axis[0] if isinstance(layer.axis, list | tuple) and len(layer.axis) == 1 else layer.axis
    if not isinstance(axis, int) or axis not in (-1, rank - 1) or rank < 2:
        raise UntraceableError(f"{layer.name}: batch norm over axis {layer.axis!r}")
    dim = int(layer.moving_mean.shape[0])
    ones, zeros = [1.0] * dim, [0.0] * dim
    scale = trace.weight(layer.name, layer.gamma) if layer.gamma is not None else trace.const("one", ones, "float32")
    offset = trace.weight(layer.name, layer.beta) if layer.beta is not None else trace.const("zero", zeros, "float32")
    mean, variance = trace.weight(layer.name, layer.moving_mean), trace.weight(layer.name, layer.moving_variance)
    return trace.op(
        layer.name, "FusedBatchNormV3", [xs[0], scale, offset, mean, variance],
        epsilon={"f": float(layer.epsilon)}, data_format=_s("NHWC"), is_training={"b": False},
    )  # fmt: skip


def _activation_layer(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    return activation(trace, layer.name, xs[0], layer.activation)


def _relu(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    if getattr(layer, "negative_slope", 0) or getattr(layer, "threshold", 0):
        raise UntraceableError(f"{layer.name}: ReLU with a slope or threshold")
    if layer.max_value is None:
        return trace.op(layer.name, "Relu", [xs[0]])
    if float(layer.max_value) == 6.0:
        return trace.op(layer.name, "Relu6", [xs[0]])
    raise UntraceableError(f"{layer.name}: ReLU max_value {layer.max_value}")


def _leaky_relu(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    return trace.op(layer.name, "LeakyRelu", [xs[0]], alpha={"f": float(layer.alpha)})


def _same_shapes(layer: Any, syms: list[SymbolicTensor]) -> None:
    if any(tuple(s.shape) != tuple(syms[0].shape) for s in syms):
        raise UntraceableError(f"{layer.name}: inputs of different shapes")


def _elementwise(op: str) -> Translator:
    def translate(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
        _same_shapes(layer, syms)
        y = xs[0]
        for x in xs[1:]:
            y = trace.op(layer.name, op, [y, x])
        return y if len(xs) > 1 else trace.op(layer.name, "Identity", [y])

    return translate


def _concatenate(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    if len({len(s.shape) for s in syms}) != 1:
        raise UntraceableError(f"{layer.name}: inputs of different ranks")
    axis = trace.const("axis", int(layer.axis))
    return trace.op(layer.name, "ConcatV2", [*xs, axis], N={"i": str(len(xs))})


def _pool2d(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    _channels_last(layer)
    op = "MaxPool" if layer.pool_mode == "max" else "AvgPool"
    return trace.op(
        layer.name, op, [xs[0]], ksize=_ints([1, *layer.pool_size, 1]), strides=_ints([1, *layer.strides, 1]),
        padding=_padding(layer), data_format=_s("NHWC"),
    )  # fmt: skip


def _global_pool(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    _channels_last(layer)
    axes = trace.const("axes", layer._spatial_axes())
    op = "Max" if layer.pool_mode == "max" else "Mean"
    return trace.op(layer.name, op, [xs[0], axes], keep_dims={"b": bool(getattr(layer, "keepdims", False))})


def _flatten(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    shape = syms[0].shape
    if len(shape) > 2:
        _channels_last(layer)
    if any(d is None for d in shape[1:]):
        raise UntraceableError(f"{layer.name}: Flatten of an unknown shape")
    target = trace.const("shape", [-1, math.prod(shape[1:])])
    return trace.op(layer.name, "Reshape", [xs[0], target])


def _reshape(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    if any(d is None or d < 0 for d in layer.target_shape):
        raise UntraceableError(f"{layer.name}: Reshape with an unknown dimension")
    return trace.op(layer.name, "Reshape", [xs[0], trace.const("shape", [-1, *layer.target_shape])])


def _identity(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    return trace.op(layer.name, "Identity", [xs[0]])


def _zero_padding2d(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    _channels_last(layer)
    (top, bottom), (left, right) = layer.padding
    pads = trace.const("paddings", [[0, 0], [top, bottom], [left, right], [0, 0]])
    return trace.op(layer.name, "Pad", [xs[0], pads])


def _upsampling2d(trace: Trace, layer: Any, xs: list[str], syms: list[SymbolicTensor]) -> str:
    _channels_last(layer)
    shape = trace.op(layer.name, "Shape", [xs[0]], out_type={"type": "DT_INT32"})
    begin, end, step = trace.const("begin", [1]), trace.const("end", [3]), trace.const("strides", [1])
    size = trace.op(layer.name, "StridedSlice", [shape, begin, end, step])
    size = trace.op(layer.name, "Mul", [size, trace.const("factor", list(layer.size))])
    op = "ResizeNearestNeighbor" if layer.interpolation == "nearest" else "ResizeBilinear"
    return trace.op(
        layer.name, op, [xs[0], size], align_corners={"b": False}, half_pixel_centers={"b": False}
    )  # fmt: skip


TRANSLATORS: dict[type, Translator] = {
    conv.Conv2D: _conv2d,
    dconv.DepthwiseConv2D: _depthwise2d,
    dconv.SeparableConv2D: _separable2d,
    core.Dense: _dense,
    core.Activation: _activation_layer,
    core.Flatten: _flatten,
    core.Reshape: _reshape,
    core.Dropout: _identity,
    core_extra.SpatialDropout1D: _identity,
    normalization.BatchNormalization: _batch_norm,
    adv.ReLU: _relu,
    adv.LeakyReLU: _leaky_relu,
    merge.Add: _elementwise("AddV2"),
    merge.Multiply: _elementwise("Mul"),
    merge.Concatenate: _concatenate,
    pooling.MaxPooling2D: _pool2d,
    pooling.AveragePooling2D: _pool2d,
    pooling.GlobalAveragePooling2D: _global_pool,
    pooling.GlobalMaxPooling2D: _global_pool,
    conv.ZeroPadding2D: _zero_padding2d,
    conv.UpSampling2D: _upsampling2d,
}


def trace_model(
    ordered: Sequence[SymbolicTensor],
    inputs: Sequence[SymbolicTensor],
    trace: Trace,
    names: dict[int, str] | None = None,
) -> dict[int, str]:
    """Write the nodes of ``ordered`` (the model's symbolic tensors in dependency order) into ``trace``; the node
    name of each symbolic tensor by id (``names``: those already written, for a nested model's inputs). Raises
    :class:`UntraceableError` at the first layer the graph cannot hold."""
    from .executor import _node_outputs

    names = {} if names is None else names
    for i, symbolic in enumerate(inputs):
        dtype = _DTYPES.get(symbolic.dtype or "float32")
        if dtype is None:
            raise UntraceableError(f"input {symbolic.name!r} of dtype {symbolic.dtype}")
        names[symbolic.id] = trace.op(f"input{i}", "Placeholder", [], dtype={"type": dtype})
    for symbolic in ordered:
        if symbolic.id in names:
            continue
        layer = symbolic.source_layer
        if isinstance(layer, InputLayer):
            raise UntraceableError(f"input {symbolic.name!r} is not among the model's inputs")
        if layer._call_hook is not None or layer.stateful:
            raise UntraceableError(f"layer {layer.name!r} has a call hook or state")
        if any(v is not None for k, v in symbolic.call_args.items() if k != "mask"):
            raise UntraceableError(f"layer {layer.name!r} is called with arguments {sorted(symbolic.call_args)}")
        outputs = _node_outputs(symbolic)
        if _nested(layer):
            _trace_nested(layer, symbolic, outputs, trace, names)
            continue
        translate = TRANSLATORS.get(type(layer))
        if translate is None:
            raise UntraceableError(f"layer {layer.name!r} of class {type(layer).__name__}")
        if len(outputs) != 1:
            raise UntraceableError(f"layer {layer.name!r} has several outputs")
        if any((t.dtype or "float32") != "float32" for t in (symbolic, *symbolic.inputs)):
            raise UntraceableError(f"layer {layer.name!r} works on {symbolic.dtype}")
        names[symbolic.id] = translate(trace, layer, [names[x.id] for x in symbolic.inputs], list(symbolic.inputs))
    return names


def _nested(layer: Any) -> bool:
    """Whether ``layer`` is a functional or sequential model used as a layer (not a subclass with its own call)."""
    from .models import LayersModel
    from .sequential import Sequential

    return type(layer) in (LayersModel, Sequential)


def _trace_nested(
    model: Any, symbolic: SymbolicTensor, outputs: list[SymbolicTensor], trace: Trace, names: dict[int, str]
) -> None:
    """Write a nested model's layers in place of its node: its inputs are the node's inputs."""
    from .executor import FeedDict, _topological_sort

    if isinstance(model, _nested_sequential()):
        model = model._ensure_model()
    if len(model.inputs) != len(symbolic.inputs) or len(model.outputs) != len(outputs):
        raise UntraceableError(f"nested model {model.name!r} called with another number of inputs or outputs")
    inner = {x.id: names[y.id] for x, y in zip(model.inputs, symbolic.inputs, strict=True)}
    ordered, _ = _topological_sort(list(model.outputs), FeedDict())
    inner = trace_model(ordered, [], trace, inner)
    for outer, out in zip(outputs, model.outputs, strict=True):
        names[outer.id] = inner[out.id]


def _nested_sequential() -> type:
    from .sequential import Sequential

    return Sequential


__all__ = ["TRANSLATORS", "Trace", "UntraceableError", "trace_model"]
