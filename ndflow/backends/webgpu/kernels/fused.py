"""Fused kernels: _FusedMatMul, FusedConv2D, FusedDepthwiseConv2D (+ bias, + activation in the store).

:class:`Epilogue` is what a matrix-product or convolution program does with each accumulated value before
storing it: ``fn ep_apply(acc: T, c: array<i32, R>) -> OT`` adds the bias read at the output coordinates
``c`` (numpy broadcasting; with NCHW a 1-D bias runs along the channels, as the cpu kernel), then applies
the activation (``linear``, ``relu``, ``relu6``, ``elu``, ``leakyrelu``, ``prelu``, ``sigmoid``), as the
cpu kernel's ``fused.py``: int32 results stay int32 for relu, relu6, elu (``max(v, 0)``: exp(v) - 1 of a
negative integer truncates to 0) and sigmoid (1 where 1 / (1 + exp(-v)) rounds to 1 in float64, i.e.
v >= 37, else 0); leakyrelu and prelu give float32. A float bias on an int32 product is added and truncated
as numpy's unsafe in-place add does (exactly, without going through f32). The plain kernels use the
identity epilogue (:data:`PLAIN`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from ....core import kernel_names as kn
from ...shared.fused import ACTIVATIONS
from .common import Output, Ref, WebGPUBackend, broadcast_strides, gpu_kernel

_FLOAT_ACT = {
    "linear": "return v;",
    "relu": "return select(v, 0.0, v < 0.0);",
    "relu6": "return select(select(v, 6.0, v > 6.0), 0.0, v < 0.0);",
    "elu": "return select(v, exp(v) - 1.0, v < 0.0);",
    "sigmoid": "return 1.0 / (1.0 + exp(-v));",
    "leakyrelu": "return select(v, v * ep_alpha, v < 0.0);",
    "prelu": "return select(v, v * f32(load_prelu(pi)), v < 0.0);",
}
_INT_ACT = {
    "linear": "return v;",
    "relu": "return max(v, 0i);",
    "relu6": "return clamp(v, 0i, 6i);",
    "elu": "return max(v, 0i);",
    "sigmoid": "return select(0i, 1i, v >= 37i);",
    "leakyrelu": "let x = f32(v); return select(x, x * ep_alpha, x < 0.0);",
    "prelu": "let x = f32(v); return select(x, x * f32(load_prelu(pi)), x < 0.0);",
}


@dataclass
class Epilogue:
    """Bias and activation applied to a program's accumulated values (see the module docstring)."""

    activation: str = "linear"
    bias: object = None
    prelu: object = None
    alpha: float = 0.2
    channels_first: bool = False
    extra: dict = field(default_factory=dict)

    def key(self) -> tuple:
        bias_dtype = None if self.bias is None else self.bias.dtype  # type: ignore[attr-defined]
        return (self.activation, bias_dtype, self.prelu is not None)

    def out_dtype(self, dtype: str) -> str:
        return "float32" if self.activation in ("leakyrelu", "prelu") else dtype

    def _aligned(self, t: object, out_rank: int) -> list[int]:
        shape = tuple(t.shape)  # type: ignore[attr-defined]
        if self.channels_first and len(shape) == 1 and shape[0] != 1:
            shape = (shape[0], 1, 1)
        shape = (1,) * (out_rank - len(shape)) + shape
        return broadcast_strides(shape)

    def inputs(self) -> list[tuple[str, object]]:
        named = [("bias", self.bias), ("prelu", self.prelu)]
        return [(n, t) for n, t in named if t is not None]

    def params(self, out_rank: int) -> dict:
        params: dict = {}
        if self.bias is not None:
            params["bias_bstr"] = self._aligned(self.bias, out_rank)
        if self.prelu is not None:
            params["prelu_bstr"] = self._aligned(self.prelu, out_rank)
        if self.activation == "leakyrelu":
            params["ep_alpha"] = float(self.alpha)
        return params

    def code(self, t: str, out_rank: int) -> str:
        """WGSL ``fn ep_apply(acc: t, c: array<i32, R>)`` for compute type ``t`` and output rank ``out_rank``."""
        r = max(out_rank, 1)
        is_int = t == "i32"
        out_t = "f32" if not is_int or self.activation in ("leakyrelu", "prelu") else "i32"

        def index(name: str) -> str:
            terms = " + ".join(f"c[{d}] * {name}_bstr[{d}]" for d in range(out_rank)) or "0"
            return f"let {name[0]}i = {terms};"

        lines = [f"fn ep_act(v: {t}, pi: i32) -> {out_t} {{ {(_INT_ACT if is_int else _FLOAT_ACT)[self.activation]} }}"]
        body = ["var v = acc;"]
        body.append(index("bias") if self.bias is not None else "let bi = 0;")
        body.append(index("prelu") if self.prelu is not None else "let pi = 0;")
        if self.bias is not None:
            if is_int and self.bias.dtype == "float32":  # type: ignore[attr-defined]
                # trunc(v + b) exactly: v + floor(b) is an integer, plus a fraction in [0, 1)
                body.append("let b = load_bias(bi); let bf = floor(b); let s = v + i32(bf);")
                body.append("v = select(s, s + 1i, s < 0i && b - bf > 0.0);")
            else:
                body.append(f"v = v + {t}(load_bias(bi));")
        body.append("return ep_act(v, pi);")
        lines.append(f"fn ep_apply(acc: {t}, c: array<i32, {r}>) -> {out_t} {{\n  " + "\n  ".join(body) + "\n}")
        return "\n".join(lines)


PLAIN = Epilogue()


def split_inputs(inputs: tuple, attrs: dict, kernel: str, channels_first: bool = False) -> tuple[tuple, Epilogue]:
    """The main inputs and the epilogue of a fused kernel's call (bias, then the PReLU weights, as the cpu kernel)."""
    activation = (attrs or {}).get("activation") or "linear"
    if activation not in ACTIVATIONS:
        raise ValueError(f"{kernel}: activation {activation!r} is not one of {list(ACTIVATIONS)}")
    main, rest = tuple(inputs[:2]), list(inputs[2:])
    prelu = rest.pop() if activation == "prelu" and rest else None
    if activation == "prelu" and prelu is None:
        raise ValueError(f"{kernel}: activation 'prelu' needs the PReLU weights as the last input")
    bias = rest[0] if rest else None
    alpha = (attrs or {}).get("leakyrelu_alpha", 0.2)
    return main, Epilogue(activation, bias, prelu, 0.2 if alpha is None else alpha, channels_first)


@gpu_kernel(kn._FusedMatMul)
def fused_mat_mul(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """BatchMatMul (batch axes broadcast), then ``+ bias``, then the activation, in the program's store."""
    from .forward import forward
    from .matrix import matmul_program

    (a, b), ep = split_inputs(inputs, attrs, "_FusedMatMul")
    others = [t for _, t in ep.inputs()]
    if (
        a.dtype != b.dtype
        or a.dtype not in ("float32", "int32")
        or any(t.dtype not in ("float32", "int32") for t in others)
    ):
        return forward("_FusedMatMul", backend, inputs, attrs)  # mixed dtypes: the op never passes them
    return matmul_program(backend, a, b, attrs or {}, ep)


_ACTIVATION_KERNELS = {"relu": "Relu", "relu6": "Relu6", "elu": "Elu", "sigmoid": "Sigmoid",
                       "leakyrelu": "LeakyRelu", "prelu": "Prelu"}  # fmt: skip


def _with_residual(kernel: str, backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """A fused convolution with ndflow's residual input (attribute ``residual``; inputs x, filter, [bias],
    residual, [prelu weights]): the convolution with its bias, then ``+ residual`` and the activation, each a
    GPU program."""
    from ....core.kernel_registry import kernel_table

    activation = attrs.get("activation") or "linear"
    rest = list(inputs[2:])
    prelu = rest.pop() if activation == "prelu" and rest else None
    if not rest:
        raise ValueError(f"{kernel}: residual=True needs the residual input")
    residual = rest.pop()
    conv_attrs = {k: v for k, v in attrs.items() if k != "residual"}
    conv_attrs["activation"] = "linear"
    kernels = kernel_table("webgpu")
    y = Ref(*kernels[kernel].kernel_func(backend, (*inputs[:2], *rest), conv_attrs))
    if tuple(residual.shape) != y.shape:
        backend.dispose_data(y.data_id)
        raise ValueError(f"{kernel}: the residual's shape {list(residual.shape)} must be the output's {list(y.shape)}")
    summed = Ref(*kernels["Add"].kernel_func(backend, (y, residual), None))
    backend.dispose_data(y.data_id)
    if activation == "linear":
        return summed
    act_inputs = (summed, prelu) if activation == "prelu" else (summed,)
    alpha = attrs.get("leakyrelu_alpha")
    act_attrs = {"alpha": 0.2 if alpha is None else alpha} if activation == "leakyrelu" else None
    out = kernels[_ACTIVATION_KERNELS[activation]].kernel_func(backend, act_inputs, act_attrs)
    backend.dispose_data(summed.data_id)
    return out


@gpu_kernel(kn.FusedConv2D)
def fused_conv2d(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """Conv2D, then ``+ bias``, then the activation, in the program's store."""
    from .conv import conv2d_program

    if (attrs or {}).get("residual"):
        return _with_residual("FusedConv2D", backend, inputs, attrs)
    channels_first = (attrs or {}).get("data_format") == "NCHW"
    (x, f), ep = split_inputs(inputs, attrs, "FusedConv2D", channels_first)
    return conv2d_program(backend, x, f, attrs, "FusedConv2D", ep)


@gpu_kernel(kn.FusedDepthwiseConv2D)
def fused_depthwise_conv2d(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """DepthwiseConv2dNative, then ``+ bias``, then the activation, in the program's store."""
    from .depthwise import depthwise_program

    if (attrs or {}).get("residual"):
        return _with_residual("FusedDepthwiseConv2D", backend, inputs, attrs)
    channels_first = (attrs or {}).get("data_format") == "NCHW"
    (x, f), ep = split_inputs(inputs, attrs, "FusedDepthwiseConv2D", channels_first)
    return depthwise_program(backend, x, f, attrs, "FusedDepthwiseConv2D", ep)
