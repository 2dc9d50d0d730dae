"""A TF.js graph model run as hand-written eager PyTorch would run it: direct ``torch`` calls, no ndflow engine.

This is the reference that ``benchmarks/torch_models.py`` holds ndflow's ``torch`` backend against. It reads
the model file (ndflow's ``io`` parses ``model.json`` and decodes the weights to numpy; nothing else of ndflow
runs), prepares the weights once as a PyTorch port would hold them (convolution filters as ``OIHW`` tensors
in ``channels_last`` memory format, depthwise filters grouped, matmul weights as they are), then executes
the nodes in order with ``torch`` / ``torch.nn.functional`` calls under ``torch.inference_mode()``.

Activations are NHWC tensors, contiguous; a convolution or pool views its input as NCHW with
``permute(0, 3, 1, 2)`` (a ``channels_last`` tensor: no copy), and its ``channels_last`` output back as NHWC
the same way, which is what an eager PyTorch model in ``channels_last`` does. Bias and activation go into the
convolution call / in place on its output. Intermediates are dropped after their last use.

Only the op types of the conv-net models are covered (``SUPPORTED``); :class:`UnsupportedError` lists the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F  # noqa: N812 - the usual alias

from ndflow import io
from ndflow.converter.load.graph import Node
from ndflow.io.weights import decode_arrays


class UnsupportedError(ValueError):
    """The model has op types this interpreter does not cover."""


def same_pads(size: int, k: int, stride: int, dilation: int = 1) -> tuple[int, int]:
    """TF's SAME padding of one spatial dimension: (before, after)."""
    out = -(-size // stride)
    total = max((out - 1) * stride + (k - 1) * dilation + 1 - size, 0)
    return total // 2, total - total // 2


def _nchw(x: torch.Tensor) -> torch.Tensor:
    return x.permute(0, 3, 1, 2)  # a channels_last NCHW view of NHWC data


def _nhwc(y: torch.Tensor) -> torch.Tensor:
    return y.permute(0, 2, 3, 1)


def _act(y: torch.Tensor, name: str, alpha: torch.Tensor | None = None, leaky: float = 0.2) -> torch.Tensor:
    """A fused activation, in place where torch has it (``y`` is a fresh NCHW or NHWC output)."""
    if name in ("", "linear"):
        return y
    if name == "relu":
        return y.relu_()
    if name == "relu6":
        return y.clamp_(0.0, 6.0)
    if name == "elu":
        return F.elu(y, inplace=True)
    if name == "sigmoid":
        return y.sigmoid_()
    if name == "tanh":
        return y.tanh_()
    if name == "leakyrelu":
        return F.leaky_relu(y, leaky, inplace=True)
    if name == "prelu" and alpha is not None:
        return torch.where(y > 0, y, y * alpha)
    raise UnsupportedError(f"fused activation {name!r}")


class EagerModel:
    """A graph model (``model.json`` with its weight shards) executed with direct torch calls."""

    def __init__(self, path: str, outputs: list[str] | None = None, device: str = "cpu") -> None:
        artifacts = io.resolve_load_handler(path).load()
        topology = artifacts.model_topology
        self.nodes = {d["name"]: Node.from_json(d) for d in topology["node"]}
        specs = artifacts.weight_specs or []
        arrays = decode_arrays(artifacts.weight_data or b"", specs) if specs else {}
        self.device = torch.device(device)
        self.consts = {name: torch.from_numpy(np.ascontiguousarray(a)).to(self.device) for name, a in arrays.items()}
        self.inputs = [n.name for n in self.nodes.values() if n.op == "Placeholder"]
        signature = artifacts.signature or {}
        outputs = outputs or [v["name"] for v in (signature.get("outputs") or {}).values()]
        self.output_refs = [(o.split(":")[0], int(o.split(":")[1]) if ":" in o else 0) for o in outputs]
        self.output_refs = self.output_refs or [(n, 0) for n in self._sinks()]
        self.outputs = [n for n, _ in self.output_refs]
        self.order = self._order()
        missing = sorted({self.nodes[n].op for n in self.order if self.nodes[n].op not in SUPPORTED})
        if missing:
            raise UnsupportedError(f"op types not covered by the eager torch reference: {', '.join(missing)}")
        self._drop = self._last_uses()
        self._prepared: dict[str, Any] = {}

    def _sinks(self) -> list[str]:
        used = {i for n in self.nodes.values() for i, _ in n.inputs}
        return [n.name for n in self.nodes.values() if n.name not in used and n.op not in ("Const", "NoOp")]

    def _order(self) -> list[str]:
        """The nodes the outputs need, each after its inputs."""
        order: list[str] = []
        seen: set[str] = set()
        stack: list[tuple[str, bool]] = [(name, False) for name in reversed(self.outputs)]
        while stack:
            name, done = stack.pop()
            if done:
                order.append(name)
                continue
            if name in seen:
                continue
            seen.add(name)
            stack.append((name, True))
            stack.extend((i, False) for i, _ in reversed(self.nodes[name].inputs) if i not in seen)
        return order

    def _last_uses(self) -> list[list[str]]:
        """For each step, the values no later step (nor the outputs) needs."""
        last: dict[str, int] = {}
        for step, name in enumerate(self.order):
            for i, _ in self.nodes[name].inputs:
                last[i] = step
        drop: list[list[str]] = [[] for _ in self.order]
        for name, step in last.items():
            if name not in self.outputs and self.nodes[name].op != "Const":
                drop[step].append(name)
        return drop

    def prepared(self, key: str, make: Callable[[], Any]) -> Any:
        """A weight in the form the port would hold it, made on first use (the warm-up run)."""
        value = self._prepared.get(key)
        if value is None:
            value = self._prepared[key] = make()
        return value

    def __call__(self, feeds: Mapping[str, Any]) -> list[torch.Tensor]:
        """Run the graph on ``feeds`` (name -> numpy array or torch tensor); the outputs in order."""
        with torch.inference_mode():
            values: dict[str, torch.Tensor] = {}
            for name, value in feeds.items():
                values[name.split(":")[0]] = torch.as_tensor(value, device=self.device)
            for step, name in enumerate(self.order):
                node = self.nodes[name]
                if node.op == "Placeholder":
                    if name not in values:
                        raise ValueError(f"eager torch: no feed for input {name!r}")
                elif node.op == "Const":
                    values[name] = self.consts[name]
                else:
                    args = [_output(values[i], k) for i, k in node.inputs]
                    values[name] = SUPPORTED[node.op](self, node, args)
                for dead in self._drop[step]:
                    values.pop(dead, None)
            return [_output(values[n], k) for n, k in self.output_refs]


def _output(value: torch.Tensor | list[torch.Tensor], index: int) -> torch.Tensor:
    """Output ``index`` of a node (multi-output ops give lists)."""
    return value[index] if isinstance(value, list | tuple) else value


# -- ops ---------------------------------------------------------------------------------------------
def _fused(node: Node, args: list[torch.Tensor]) -> tuple[torch.Tensor | None, str, torch.Tensor | None]:
    """Bias, activation and PReLU alpha of a fused node."""
    ops = [s.lower() for s in node.strs("fused_ops", []) or []]
    extra = args[: node.int("num_args", len(args))]
    bias = alpha = None
    if ops and ops[0] == "biasadd":
        bias, extra, ops = extra[0], extra[1:], ops[1:]
    elif ops:
        raise UnsupportedError(f"fused ops {ops}")
    act = ops[0] if ops else ""
    if act == "prelu":
        alpha = extra[0]
    return bias, act, alpha


def _pads(node: Node, h: int, w: int, kh: int, kw: int, sh: int, sw: int, dh: int = 1, dw: int = 1) -> list[int]:
    """(top, bottom, left, right) for the node's padding."""
    pad = node.str("padding", "VALID")
    if pad == "VALID":
        return [0, 0, 0, 0]
    if pad == "SAME":
        return [*same_pads(h, kh, sh, dh), *same_pads(w, kw, sw, dw)]
    flat = node.ints("explicit_paddings", []) or []
    return flat[2:6]


def _padded(x: torch.Tensor, pads: list[int], value: float = 0.0) -> tuple[torch.Tensor, Any]:
    """NCHW input and the ``padding`` argument for torch: symmetric pads go to the op, others to F.pad."""
    top, bottom, left, right = pads
    if top == bottom and left == right:
        return x, (top, left)
    return F.pad(x, (left, right, top, bottom), value=value), 0


def _conv(m: EagerModel, node: Node, args: list[torch.Tensor], depthwise: bool) -> torch.Tensor:
    x, f = args[0], args[1]
    bias, act, alpha = _fused(node, args[2:]) if node.op.startswith(("_Fused", "Fused")) else (None, "", None)
    kh, kw, cin, cout = f.shape
    if depthwise:
        weight = m.prepared(node.name, lambda: f.permute(2, 3, 0, 1).reshape(cin * cout, 1, kh, kw).contiguous())
        groups = cin
    else:
        weight = m.prepared(node.name, lambda: f.permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last))
        groups = 1
    _, sh, sw, _ = node.ints("strides", [1, 1, 1, 1])
    _, dh, dw, _ = node.ints("dilations", [1, 1, 1, 1])
    xc, padding = _padded(_nchw(x), _pads(node, x.shape[1], x.shape[2], kh, kw, sh, sw, dh, dw))
    y = F.conv2d(xc, weight, bias, (sh, sw), padding, (dh, dw), groups)
    if alpha is not None:
        alpha = alpha.reshape(1, -1, 1, 1) if alpha.numel() == y.shape[1] else alpha
    return _nhwc(_act(y, act, alpha, node.float("leakyrelu_alpha", 0.2)))


def _pool(node: Node, args: list[torch.Tensor], kind: str) -> torch.Tensor:
    x = args[0]
    _, kh, kw, _ = node.ints("ksize")
    _, sh, sw, _ = node.ints("strides")
    pads = _pads(node, x.shape[1], x.shape[2], kh, kw, sh, sw)
    xc = _nchw(x)
    if kind == "max":
        xc, padding = _padded(xc, pads, -math.inf)
        return _nhwc(F.max_pool2d(xc, (kh, kw), (sh, sw), padding))
    if pads[0] == pads[1] and pads[2] == pads[3]:
        return _nhwc(F.avg_pool2d(xc, (kh, kw), (sh, sw), (pads[0], pads[2]), count_include_pad=False))
    # asymmetric SAME: the sum over the window divided by the number of real (unpadded) values in it
    padded = F.pad(xc, (pads[2], pads[3], pads[0], pads[1]))
    ones = F.pad(torch.ones_like(xc[:1, :1]), (pads[2], pads[3], pads[0], pads[1]))
    return _nhwc(F.avg_pool2d(padded, (kh, kw), (sh, sw)) / F.avg_pool2d(ones, (kh, kw), (sh, sw)))


def _matmul(node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    a, b = args[0], args[1]
    if node.bool("transpose_a", False) or node.bool("adj_x", False):
        a = a.transpose(-1, -2)
    if node.bool("transpose_b", False) or node.bool("adj_y", False):
        b = b.transpose(-1, -2)
    if node.op != "_FusedMatMul":
        return torch.matmul(a, b)
    bias, act, alpha = _fused(node, args[2:])
    y = torch.addmm(bias, a, b) if bias is not None and a.dim() == 2 else torch.matmul(a, b)
    if bias is not None and a.dim() != 2:
        y = y.add_(bias)
    return _act(y, act, alpha, node.float("leakyrelu_alpha", 0.2))


def _resize_bilinear(node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    x, size = args
    out_h, out_w = (int(v) for v in size.tolist())
    align, half = node.bool("align_corners", False), node.bool("half_pixel_centers", False)
    if align or half:
        y = F.interpolate(_nchw(x), size=(out_h, out_w), mode="bilinear", align_corners=align)
        return _nhwc(y)
    # TF's legacy mode: source = destination * in / out (no half-pixel shift)
    n, h, w, c = x.shape

    def axis(out: int, size_in: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        src = torch.arange(out, dtype=torch.float32, device=x.device) * (size_in / out)
        lo = src.floor().long().clamp_(max=size_in - 1)
        return lo, (lo + 1).clamp_(max=size_in - 1), (src - lo).clamp_(0, 1)

    y0, y1, wy = axis(out_h, h)
    x0, x1, wx = axis(out_w, w)
    top = x[:, y0] + (x[:, y1] - x[:, y0]) * wy.view(1, -1, 1, 1)
    return top[:, :, x0] + (top[:, :, x1] - top[:, :, x0]) * wx.view(1, 1, -1, 1)


def _conv_transpose(m: EagerModel, node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    sizes, f, dy = args
    n, out_h, out_w, _ = (int(v) for v in sizes.tolist())
    kh, kw, _, _ = f.shape
    weight = m.prepared(node.name, lambda: f.permute(3, 2, 0, 1).contiguous(memory_format=torch.channels_last))
    _, sh, sw, _ = node.ints("strides", [1, 1, 1, 1])
    y = F.conv_transpose2d(_nchw(dy), weight, None, (sh, sw))
    top = left = 0
    if node.str("padding", "VALID") == "SAME":
        top = max((dy.shape[1] - 1) * sh + kh - out_h, 0) // 2
        left = max((dy.shape[2] - 1) * sw + kw - out_w, 0) // 2
    short_h, short_w = max(top + out_h - y.shape[2], 0), max(left + out_w - y.shape[3], 0)
    if short_h or short_w:
        y = F.pad(y, (0, short_w, 0, short_h))
    return _nhwc(y[:, :, top : top + out_h, left : left + out_w])


def _depth_to_space(node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    x = args[0]
    b = node.int("block_size")
    n, h, w, c = x.shape
    return x.reshape(n, h, w, b, b, c // (b * b)).permute(0, 1, 3, 2, 4, 5).reshape(n, h * b, w * b, c // (b * b))


def _reduce(fn: Callable[..., torch.Tensor]) -> Callable[[EagerModel, Node, list[torch.Tensor]], torch.Tensor]:
    def run(m: EagerModel, node: Node, args: list[torch.Tensor]) -> torch.Tensor:
        axes = [int(a) for a in np.atleast_1d(args[1].cpu().numpy())]
        return fn(args[0], dim=axes, keepdim=bool(node.bool("keep_dims", False)))

    return run


def _amax(x: torch.Tensor, dim: list[int], keepdim: bool) -> torch.Tensor:
    return torch.amax(x, dim=dim, keepdim=keepdim)


def _pad(node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    pads = args[1].tolist()
    value = float(args[2]) if len(args) > 2 else 0.0
    return F.pad(args[0], [p for pair in reversed(pads) for p in pair], value=value)


def _squeeze(node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    dims = node.ints("squeeze_dims", []) or node.ints("axis", []) or []
    return args[0].squeeze(tuple(dims)) if dims else args[0].squeeze()


def _binary(fn: Callable[[torch.Tensor, torch.Tensor], torch.Tensor]) -> Callable[..., torch.Tensor]:
    return lambda m, node, args: fn(args[0], args[1])


def _unary(fn: Callable[[torch.Tensor], torch.Tensor]) -> Callable[..., torch.Tensor]:
    return lambda m, node, args: fn(args[0])


DTYPES = {"DT_FLOAT": torch.float32, "DT_INT32": torch.int32, "DT_INT64": torch.int32, "DT_BOOL": torch.bool}


def _cast(node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    want = DTYPES[node.attr["DstT"]["type"]]
    x = args[0]
    return x.trunc().to(want) if want == torch.int32 and x.is_floating_point() else x.to(want)


def _strided_slice(node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    """TF's StridedSlice with begin/end/shrink masks (no ellipsis or new axes: those raise)."""
    x, begin, end, strides = args[0], args[1].tolist(), args[2].tolist(), args[3].tolist()
    if node.int("ellipsis_mask", 0) or node.int("new_axis_mask", 0):
        raise UnsupportedError("StridedSlice with ellipsis_mask or new_axis_mask")
    bm, em, sm = node.int("begin_mask", 0), node.int("end_mask", 0), node.int("shrink_axis_mask", 0)
    index: list[Any] = []
    for i, (b, e, st) in enumerate(zip(begin, end, strides, strict=True)):
        if sm >> i & 1:
            index.append(b)
        elif st > 0:
            index.append(slice(None if bm >> i & 1 else b, None if em >> i & 1 else e, st))
        else:  # torch has no negative steps: flip, then slice forward
            raise UnsupportedError("StridedSlice with a negative stride")
    return x[tuple(index)]


def _gather_nd(node: Node, args: list[torch.Tensor]) -> torch.Tensor:
    params, indices = args
    return params[tuple(indices.long().unbind(-1))]


SUPPORTED: dict[str, Callable[[EagerModel, Node, list[torch.Tensor]], torch.Tensor]] = {
    "Placeholder": lambda m, node, args: args[0],
    "Const": lambda m, node, args: args[0],
    "Identity": _unary(lambda x: x),
    "NoOp": lambda m, node, args: torch.empty(0),
    "Conv2D": lambda m, node, args: _conv(m, node, args, False),
    "_FusedConv2D": lambda m, node, args: _conv(m, node, args, False),
    "DepthwiseConv2dNative": lambda m, node, args: _conv(m, node, args, True),
    "FusedDepthwiseConv2dNative": lambda m, node, args: _conv(m, node, args, True),
    "Conv2DBackpropInput": _conv_transpose,
    "MaxPool": lambda m, node, args: _pool(node, args, "max"),
    "AvgPool": lambda m, node, args: _pool(node, args, "avg"),
    "MatMul": lambda m, node, args: _matmul(node, args),
    "BatchMatMulV2": lambda m, node, args: _matmul(node, args),
    "_FusedMatMul": lambda m, node, args: _matmul(node, args),
    "BiasAdd": _binary(torch.add),
    "Add": _binary(torch.add),
    "AddV2": _binary(torch.add),
    "Sub": _binary(torch.sub),
    "Mul": _binary(torch.mul),
    "RealDiv": _binary(torch.div),
    "Maximum": _binary(torch.maximum),
    "Minimum": _binary(torch.minimum),
    "AddN": lambda m, node, args: torch.stack(args).sum(0) if len(args) > 2 else torch.add(*args),
    "Relu": _unary(torch.relu),
    "Relu6": _unary(lambda x: torch.clamp(x, 0.0, 6.0)),
    "Sigmoid": _unary(torch.sigmoid),
    "Tanh": _unary(torch.tanh),
    "Abs": _unary(torch.abs),
    "Square": _unary(torch.square),
    "Rsqrt": _unary(torch.rsqrt),
    "Exp": _unary(torch.exp),
    "LeakyRelu": lambda m, node, args: F.leaky_relu(args[0], node.float("alpha", 0.2)),
    "Prelu": _binary(lambda x, a: torch.where(x > 0, x, x * a)),
    "Softmax": _unary(lambda x: torch.softmax(x, -1)),
    "Reshape": lambda m, node, args: args[0].reshape(m.prepared(node.name, lambda: [int(v) for v in args[1].tolist()])),
    "Squeeze": lambda m, node, args: _squeeze(node, args),
    "ConcatV2": lambda m, node, args: torch.cat(args[:-1], m.prepared(node.name, lambda: int(args[-1]))),
    "Pad": lambda m, node, args: _pad(node, args),
    "PadV2": lambda m, node, args: _pad(node, args),
    "Mean": _reduce(torch.mean),
    "Sum": _reduce(torch.sum),
    "Max": _reduce(_amax),
    "ResizeBilinear": lambda m, node, args: _resize_bilinear(node, args),
    "DepthToSpace": lambda m, node, args: _depth_to_space(node, args),
    "Sqrt": _unary(torch.sqrt),
    "SquaredDifference": _binary(lambda a, b: torch.square(a - b)),
    "FloorDiv": _binary(lambda a, b: torch.div(a, b, rounding_mode="floor")),
    "Cast": lambda m, node, args: _cast(node, args),
    "ExpandDims": lambda m, node, args: args[0].unsqueeze(int(args[1])),
    "ArgMax": lambda m, node, args: torch.argmax(args[0], int(args[1])).to(torch.int32),
    "Pack": lambda m, node, args: torch.stack([a.reshape(args[0].shape) for a in args], node.int("axis", 0)),
    "Unpack": lambda m, node, args: list(torch.unbind(args[0], node.int("axis", 0))),
    "Shape": lambda m, node, args: torch.tensor(list(args[0].shape), dtype=torch.int32),
    "StridedSlice": lambda m, node, args: _strided_slice(node, args),
    "GatherNd": lambda m, node, args: _gather_nd(node, args),
}
