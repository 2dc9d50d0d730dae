"""Activations on the GPU: Relu, Relu6, Elu, Selu, Softplus, Sigmoid, LeakyRelu (one input), Prelu and
EluGrad (two inputs, broadcast).

Relu, Relu6, Elu, Selu and Softplus keep the input dtype: int32 and bool inputs are computed in integer
arithmetic with the cpu kernel's float64-then-truncate results (Selu of int32 scales in f32, exact below
2**20). Sigmoid, LeakyRelu, Prelu and EluGrad return float32. complex64/string inputs are forwarded.
"""

from __future__ import annotations

import math

import numpy as np

from ....core import kernel_names as kn
from ...shared.numbers import SELU_SCALE, SELU_SCALEALPHA, SOFTPLUS_THRESHOLD
from .binary import elementwise, unsupported
from .common import Output, WebGPUBackend, gpu_kernel, wgsl_float
from .forward import forward
from .unary import IDENTITY, unary_kernel


def _f32(value: float) -> str:
    """A WGSL f32 literal of ``value`` rounded to float32 (as the cpu kernel's ``dtype.type(c)``)."""
    return wgsl_float(float(np.float32(value)))


unary_kernel(kn.Relu, "return select(v, 0.0, v < 0.0);", int_body="return max(x, 0i);", bool_body=IDENTITY)
unary_kernel(
    kn.Relu6,
    "return select(select(v, 0.0, v < 0.0), 6.0, v > 6.0);",
    int_body="return clamp(x, 0i, 6i);",
    bool_body=IDENTITY,
)

# elu of a negative integer, truncated, is 0 until expm1 rounds to -1 in float64
_ELU_MINUS_ONE = next(n for n in range(1, 1000) if math.expm1(-n) == -1.0)
unary_kernel(
    kn.Elu,
    "if (v >= 0.0) { return v; }\nreturn m_expm1(v);",
    int_body=f"if (x >= 0i) {{ return x; }}\nreturn select(0i, -1i, x <= -{_ELU_MINUS_ONE}i);",
    bool_body=IDENTITY,
)
unary_kernel(
    kn.Selu,
    f"if (v >= 0.0) {{ return v * {_f32(SELU_SCALE)}; }}\nreturn m_expm1(v) * {_f32(SELU_SCALEALPHA)};",
    # scale * alpha * expm1(x) lies in (-1.76, -1.1] for every integer x <= -1: truncated, -1
    int_body=f"if (x >= 0i) {{ return m_to_i32(f32(x) * {wgsl_float(SELU_SCALE)}); }}\nreturn -1i;",
)
unary_kernel(
    kn.Softplus,
    f"if (v < {_f32(SOFTPLUS_THRESHOLD)}) {{ return m_exp(v); }}\n"
    f"if (v > {_f32(-SOFTPLUS_THRESHOLD)}) {{ return v; }}\nreturn m_log1p(exp(v));",
    # log(1 + e ** n), truncated, is n for n >= 1 and 0 below
    int_body="return max(x, 0i);",
    bool_body=IDENTITY,
)
unary_kernel(
    kn.Sigmoid,
    "let e = m_exp(-v);\nif (m_isinf(e)) { return 0.0; }\nreturn 1.0 / (1.0 + e);",
    out="float32",
)
unary_kernel(
    kn.LeakyRelu,
    "return select(v, v * alpha, v < 0.0);",
    out="float32",
    params=lambda attrs, dtype: {"alpha": float(attrs["alpha"])},
)


def _float_binary(name: str, body: str) -> None:
    """A float32-valued kernel of two broadcast inputs ``a`` and ``b`` (converted to f32 first)."""
    wrapped = f"let v = f32(a);\nlet w = f32(b);\n{body}"

    @gpu_kernel(name)
    def kernel(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        a, b = inputs
        if unsupported(a, b):
            return forward(name, backend, inputs, attrs)
        return elementwise(backend, name, [("a", a), ("b", b)], "float32", wrapped)

    kernel.__name__ = name


_float_binary("Prelu", "return select(v, w * v, v < 0.0);")  # a: x, b: alpha
_float_binary("EluGrad", "return select(v * (w + 1.0), v, w >= 0.0);")  # a: dy, b: y
