"""Convolution and pooling ops (TF.js converter category ``convolution``).

TF gives ``strides``, ``ksize``, ``dilations`` and ``explicit_paddings`` per dimension in the
node's ``data_format`` order; the spatial entries are picked by that order (TF.js always takes
entries 1 and 2, which is wrong for NCHW). Ops whose ndflow op is NHWC-only (pooling, 3-D ops,
transposed convolution) run channels-first inputs through a transpose (TF.js ignores NCHW there).
``_FusedConv2D``/``FusedDepthwiseConv2dNative`` accept ``fused_ops`` ``[BiasAdd|FusedBatchNorm]``
then one activation (``Relu``, ``Relu6``, ``Elu``, ``LeakyRelu``, ``Prelu``, ``Sigmoid``, ``Tanh``);
TF.js refuses ``FusedBatchNorm`` and ``Tanh``, ndflow folds the batch norm into filter and bias.
``_NdflowResidualConv2D``/``_NdflowResidualDepthwiseConv2d`` (written by ndflow's graph optimizer, never by
TF's converter) add a residual input before the activation.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ... import ops as nf
from ...core import conv_util as cu
from ...core.engine import ENGINE
from ...core.tensor import Tensor
from ...ops.fused import ACTIVATIONS, recorded_conv
from ...ops.pool_util import pool2d_info
from ..load.graph import Node
from ._util import (
    attr_num,
    channels_first,
    data_format,
    fail,
    ints,
    lower_str,
    mapper,
    padding,
    spatial,
    to_channels_first,
    to_channels_last,
)


def _nhwc(node: Node, x: Tensor, fn: Callable[[Tensor], Tensor]) -> Tensor:
    """``fn`` (an NHWC/NDHWC op) applied to ``x`` in the node's data format."""
    if not channels_first(node):
        return fn(x)
    return to_channels_first(fn(to_channels_last(x)))


def _pairs_nhwc(node: Node, pad: Any) -> Any:
    """Explicit pad pairs reordered from channels-first to channels-last."""
    if isinstance(pad, str) or not channels_first(node):
        return pad
    return [pad[0], *pad[2:], pad[1]]


def _strides(node: Node, n: int = 2) -> list[int]:
    """The spatial ``strides``."""
    return spatial(node.ints("strides", [1] * (n + 2)), node, n)


def _dilations(node: Node, name: str = "dilations", n: int = 2) -> list[int]:
    """The spatial ``dilations`` (or ``rates``), 1 when absent."""
    return spatial(node.ints(name, [1] * (n + 2)) or [1] * (n + 2), node, n)


def _format2d(node: Node) -> str:
    """``NCHW`` or ``NHWC``."""
    return "NCHW" if channels_first(node) else "NHWC"


def _frozen_pad(pad: Any) -> Any:
    return tuple(tuple(p) if isinstance(p, list) else p for p in pad) if isinstance(pad, list) else pad


def _conv2d_attrs(node: Node) -> tuple[tuple[int, ...], Any, str, tuple[int, ...]]:
    """``(strides, pad, data_format, dilations)`` of a 2-D convolution node, read once (memoized on the node)
    as tuples, which the ops layer's geometry cache takes as they are."""
    key = ("conv2d", "attrs")
    got = node._memo.get(key)
    if got is None:
        got = node._memo[key] = (
            tuple(_strides(node)),
            _frozen_pad(padding(node)),
            _format2d(node),
            tuple(_dilations(node)),
        )
    return got


@mapper("Conv1D")
def conv1d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """1-D convolution: ``stride``, ``padding``, ``dilation``, NWC (or NCW, transposed)."""
    x, f = inputs
    stride, dilation = int(attr_num(node, "stride", 1)), int(attr_num(node, "dilation", 1))
    pad = lower_str(node, "padding", "valid")
    return _nhwc(node, x, lambda t: nf.conv1d(t, f, stride, pad, "NWC", dilation))


@mapper("Conv2D")
def conv2d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """2-D convolution with ``strides``, ``padding`` (incl. ``EXPLICIT``), ``data_format``, ``dilations``."""
    x, f = inputs
    strides, pad, fmt, dilations = _conv2d_attrs(node)
    return nf.conv2d(x, f, strides, pad, fmt, dilations)


@mapper("DepthwiseConv2d", "DepthwiseConv2dNative")
def depthwise_conv2d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Depthwise 2-D convolution (filter ``[h, w, in, multiplier]``)."""
    x, f = inputs
    strides, pad, fmt, dilations = _conv2d_attrs(node)
    return nf.depthwise_conv2d(x, f, strides, pad, fmt, dilations)


def _fused_plan(node: Node) -> tuple[str, int, str, str, float, float | None]:
    """What a fused node does, read from its attributes once (memoized on the node): the extra op before
    the activation (``'biasadd'``, ``'fusedbatchnorm'`` or ``''``), the number of extra inputs it takes,
    the activation ``nf.fused`` applies, one to apply afterwards (or ``''``), ``leakyrelu_alpha`` and
    ``num_args`` (None when absent)."""
    key = ("fused", "plan")
    got = node._memo.get(key)
    if got is not None:
        return got
    fused_ops = [s.lower() for s in node.strs("fused_ops", []) or []]
    extra, need = "", 0
    if fused_ops and fused_ops[0] in ("biasadd", "fusedbatchnorm"):
        extra, fused_ops = fused_ops[0], fused_ops[1:]
        need = 1 if extra == "biasadd" else 4
    if len(fused_ops) > 1:
        raise fail(node, f"unsupported fused_ops {node.strs('fused_ops')}")
    activation, after = fused_ops[0] if fused_ops else "linear", ""
    if activation not in ACTIVATIONS:
        if activation not in _AFTER:
            raise fail(node, f"unsupported fused activation {activation!r}")
        activation, after = "linear", activation
    num_args = attr_num(node, "num_args", None)
    alpha = attr_num(node, "leakyrelu_alpha", 0.2)
    got = node._memo[key] = (extra, need, activation, after, alpha, None if num_args is None else int(num_args))
    return got


def _fused_args(node: Node, f: Tensor, args: list[Tensor], depthwise: bool) -> tuple[Tensor, dict[str, Any], str]:
    """Filter (batch norm folded in), the ``nf.fused`` keyword arguments, and an activation to apply
    afterwards (one that ``nf.fused`` lacks, or ``''``) from ``fused_ops`` and ``num_args``."""
    extra, need, activation, after, alpha, num_args = _fused_plan(node)
    if num_args is not None:
        args = args[:num_args]
    kwargs: dict[str, Any] = {"activation": activation, "leakyrelu_alpha": alpha}
    if extra:
        if len(args) < need:
            raise fail(node, f"fused op {extra} needs {need} extra input(s), got {len(args)}")
        if extra == "biasadd":
            kwargs["bias"] = args[0]
        else:
            scale, offset, mean, variance = args[:4]
            mult = nf.mul(scale, nf.rsqrt(nf.add(variance, attr_num(node, "epsilon", 1e-4))))
            kwargs["bias"] = nf.sub(offset, nf.mul(mean, mult))
            f = nf.mul(f, nf.reshape(mult, [f.shape[2], f.shape[3]]) if depthwise else mult)
        args = args[need:]
    if activation == "prelu":
        if not args:
            raise fail(node, "fused op Prelu needs its alpha as an extra input")
        kwargs["prelu_activation_weights"] = args[0]
    return f, kwargs, after


_AFTER: dict[str, Callable[[Tensor], Tensor]] = {"tanh": nf.tanh}


def _signature(operands: tuple[Any, ...]) -> tuple:
    """Shapes and dtypes of the operands (None stays None; anything else never matches a recorded call)."""
    return tuple((t.shape, t.dtype) if t.__class__ is Tensor else None if t is None else object() for t in operands)


def _run_fused(node: Node, depthwise: bool, x: Tensor, f: Tensor, kwargs: dict[str, Any], add: Any = None) -> Tensor:
    """``nf.fused.(depthwise_)conv2d`` of the node. The kernel call of a first run on given tensors is kept
    on the node (``recorded_conv``) and repeated, the op's checks skipped, while the tensors have the same
    shapes and dtypes (outside gradient tapes): 3-5 us less per convolution node."""
    operands = (x, f, kwargs.get("bias"), add, kwargs.get("prelu_activation_weights"))
    signature = _signature(operands)
    got = node._memo.get("call")
    if got is not None and got[0] == signature and not ENGINE.gradient_depth:
        _, kernel, positions, attrs = got
        return ENGINE.run_kernel(kernel, tuple([operands[i] for i in positions]), attrs)
    strides, pad, data_format, dilations = _conv2d_attrs(node)
    record: list = []
    y = recorded_conv(
        depthwise, record, x=x, filter=f, strides=strides, pad=pad, data_format=data_format,
        dilations=dilations, add=add, **kwargs,
    )  # fmt: skip
    if record:
        kernel, used, attrs = record[0]
        ids = [id(t) if t.__class__ is Tensor else None for t in operands]
        if all(id(t) in ids for t in used):
            node._memo["call"] = (signature, kernel, tuple(ids.index(id(t)) for t in used), attrs)
    return y


def _fused_conv(node: Node, inputs: list[Any], depthwise: bool) -> Tensor:
    """A fused (depthwise) convolution node through ``nf.fused``."""
    x, f, *args = inputs
    f, kwargs, after = _fused_args(node, f, args, depthwise)
    y = _run_fused(node, depthwise, x, f, kwargs)
    return _AFTER[after](y) if after else y


@mapper("_FusedConv2D")
def fused_conv2d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Conv2D + BiasAdd/FusedBatchNorm + activation in one kernel."""
    return _fused_conv(node, inputs, depthwise=False)


@mapper("FusedDepthwiseConv2dNative")
def fused_depthwise_conv2d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """DepthwiseConv2dNative + BiasAdd + activation in one kernel."""
    return _fused_conv(node, inputs, depthwise=True)


@mapper("Conv2DBackpropInput")
def conv2d_backprop_input(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Transposed convolution: inputs ``(input_sizes, filter, out_backprop)``."""
    sizes, f, dy = inputs
    out_shape = ints(sizes)
    if any(d != 1 for d in _dilations(node)):
        raise fail(node, f"dilations {node.ints('dilations')} are not supported (only 1)")
    if channels_first(node):
        out_shape = [out_shape[0], *out_shape[2:], out_shape[1]]
    pad = _pairs_nhwc(node, padding(node))
    strides = _strides(node)
    return _nhwc(node, dy, lambda t: nf.conv2d_transpose(t, f, out_shape, strides, pad))


@mapper("Conv3D")
def conv3d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """3-D convolution (NDHWC, or NCDHW transposed)."""
    x, f = inputs
    strides, dilations = _strides(node, 3), _dilations(node, n=3)
    pad = lower_str(node, "padding", "valid")
    return _nhwc(node, x, lambda t: nf.conv3d(t, f, strides, pad, "NDHWC", dilations))


def _pool_args(node: Node, n: int = 2) -> tuple[tuple[int, ...], tuple[int, ...], Any]:
    """Spatial ``ksize``, ``strides`` and the padding (explicit pairs in NHWC order), read once (memoized)."""
    key = ("pool", f"args{n}")
    got = node._memo.get(key)
    if got is None:
        ksize = spatial(node.ints("ksize", [1] * (n + 2)), node, n)
        got = node._memo[key] = (tuple(ksize), tuple(_strides(node, n)), _frozen_pad(_pairs_nhwc(node, padding(node))))
    return got


def _pool2d(node: Node, x: Any, kernel: str, fn: Callable[..., Tensor]) -> Tensor:
    """A 2-D pooling node. A float32 NHWC input of rank 4 runs ``kernel`` on attributes computed once per
    input shape (``pool2d_info``, memoized on the node); anything else goes through the ops-layer ``fn``."""
    ksize, strides, pad = _pool_args(node)
    if type(x) is not Tensor or x.rank != 4 or x.dtype != "float32" or channels_first(node):
        return _nhwc(node, x, lambda t: fn(t, ksize, strides, pad))
    key = ("pool", "attrs")
    got = node._memo.get(key)
    if got is None or got[0] != x.shape:
        info = pool2d_info(x.shape[1:3], ksize, strides, 1, pad, None, fn.__name__)
        got = node._memo[key] = (x.shape, info.attrs(pad, None))
    return ENGINE.run_kernel(kernel, (x,), dict(got[1]))


@mapper("AvgPool")
def avg_pool(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """2-D average pooling (``ksize``, ``strides``, ``padding``)."""
    return _pool2d(node, inputs[0], "AvgPool", nf.avg_pool)


@mapper("MaxPool")
def max_pool(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """2-D max pooling (``ksize``, ``strides``, ``padding`` incl. ``EXPLICIT``)."""
    return _pool2d(node, inputs[0], "MaxPool", nf.max_pool)


@mapper("MaxPoolWithArgmax")
def max_pool_with_argmax(node: Node, inputs: list[Any], ctx: Any) -> list[Tensor]:
    """Max pooling and the flat index of each maximum: ``[output, argmax]``."""
    ksize, strides, pad = _pool_args(node)
    res = nf.max_pool_with_argmax(inputs[0], ksize, strides, pad, bool(node.bool("include_batch_in_index", False)))
    return [res.result, res.indexes]


@mapper("AvgPool3D")
def avg_pool3d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """3-D average pooling."""
    ksize, strides, pad = _pool_args(node, 3)
    return _nhwc(node, inputs[0], lambda t: nf.avg_pool3d(t, ksize, strides, pad))


@mapper("MaxPool3D")
def max_pool3d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """3-D max pooling."""
    ksize, strides, pad = _pool_args(node, 3)
    return _nhwc(node, inputs[0], lambda t: nf.max_pool3d(t, ksize, strides, pad))


@mapper("Dilation2D")
def dilation2d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Grayscale morphological dilation (``strides``, ``rates``, ``padding``; NHWC)."""
    x, f = inputs
    if data_format(node) != "NHWC":
        raise fail(node, "only NHWC is supported")
    pad = lower_str(node, "padding", "valid")
    return nf.dilation2d(x, f, _strides(node), pad, _dilations(node, "rates"), "NHWC")


# ndflow's residual convolutions, written by the graph optimizer (converter/passes/fuse.py): conv + bias + a tensor
# of the output's shape, then the activation.
_AFTER_ACT = {
    "relu": nf.relu,
    "relu6": nf.relu6,
    "elu": nf.elu,
    "sigmoid": nf.sigmoid,
    "tanh": nf.tanh,
}


def _activate(y: Tensor, activation: str, kwargs: dict[str, Any]) -> Tensor:
    """The fused activation as its own op (the residual fallback)."""
    if activation == "linear":
        return y
    if activation == "leakyrelu":
        return nf.leaky_relu(y, kwargs["leakyrelu_alpha"])
    if activation == "prelu":
        return nf.prelu(y, kwargs["prelu_activation_weights"])
    return _AFTER_ACT[activation](y)


def _residual_fits(node: Node, x: Tensor, f: Tensor, residual: Any, depthwise: bool) -> bool:
    """Whether the kernel can add ``residual``: a tensor of x's dtype and the convolution's output shape.
    The geometry is computed once per input signature (memoized on the node)."""
    if not isinstance(residual, Tensor) or x.rank != 4 or f.rank != 4:
        return False
    signature = (x.shape, f.shape, residual.shape, x.dtype, residual.dtype)
    key = ("residual", "fits")
    got = node._memo.get(key)
    if got is not None and got[0] == signature:
        return got[1]
    strides, pad, fmt, dilations = _conv2d_attrs(node)
    s, d = cu.check_strides_dilations(strides, dilations, 2, node.op)
    pad = cu.check_pad(pad, node.op, 2)
    info = cu.conv_info(x.shape, f.shape, s, d, pad, None, depthwise, fmt == "NHWC", node.op)
    fits = tuple(residual.shape) == tuple(info.out_shape) and residual.dtype == x.dtype
    node._memo[key] = (signature, fits)
    return fits


def _residual_conv(node: Node, inputs: list[Any], depthwise: bool) -> Tensor:
    """``activation(conv(x, filter) + bias + residual)``: the residual in the kernel when it has the
    output's shape, else the unfused Add and activation."""
    x, f, *args, residual = inputs
    f, kwargs, after = _fused_args(node, f, args, depthwise)
    strides, pad, fmt, dilations = _conv2d_attrs(node)
    run = nf.fused.depthwise_conv2d if depthwise else nf.fused.conv2d
    if not after and _residual_fits(node, x, f, residual, depthwise):
        return _run_fused(node, depthwise, x, f, kwargs, residual)
    activation = after or kwargs["activation"]
    linear = {**kwargs, "activation": "linear", "prelu_activation_weights": None}
    y = nf.add(run(x=x, filter=f, strides=strides, pad=pad, data_format=fmt, dilations=dilations, **linear), residual)
    return _activate(y, activation, kwargs)


@mapper("_NdflowResidualConv2D")
def _residual_conv2d(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Mapper of ``_NdflowResidualConv2D``."""
    return _residual_conv(node, inputs, depthwise=False)


@mapper("_NdflowResidualDepthwiseConv2d")
def _residual_depthwise(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Mapper of ``_NdflowResidualDepthwiseConv2d``."""
    return _residual_conv(node, inputs, depthwise=True)
