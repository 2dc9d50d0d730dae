"""Comparisons, logic and selection on the GPU: Equal, NotEqual, Less, LessEqual, Greater, GreaterEqual,
LogicalAnd, LogicalOr, LogicalXor, LogicalNot, BitwiseAnd and Select, all with broadcasting.

Float comparisons test NaN by its bits (false for every comparison but NotEqual), so drivers that assume
no NaN cannot change the answer; the logical kernels take any value as true when it is non-zero (NaN
included), as numpy's. complex64 and string inputs are forwarded to the cpu kernels (which refuse complex
comparisons with the op's error).
"""

from __future__ import annotations

from ....core import kernel_names as kn
from .binary import elementwise, unsupported
from .common import Output, WebGPUBackend, gpu_kernel
from .forward import forward

_ORDERED = "m_isnan(a) || m_isnan(b)"


def _compare(name: str, op: str) -> None:
    negated = op == "!="
    test = "==" if negated else op

    @gpu_kernel(name)
    def kernel(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        a, b = inputs
        if unsupported(a, b) or a.dtype != b.dtype:
            return forward(name, backend, inputs, attrs)
        if a.dtype == "float32":
            holds = f"!({_ORDERED}) && a {test} b"
        else:
            holds = f"a {test} b"
        body = f"return select(0i, 1i, {'!' if negated else ''}({holds}));"
        return elementwise(backend, name, [("a", a), ("b", b)], "bool", body)

    kernel.__name__ = name


_compare("Equal", "==")
_compare("NotEqual", "!=")
_compare("Less", "<")
_compare("LessEqual", "<=")
_compare("Greater", ">")
_compare("GreaterEqual", ">=")


def _truth(name: str, dtype: str) -> str:
    return f"m_truthy({name})" if dtype == "float32" else f"({name} != 0i)"


def _logical(name: str, op: str) -> None:
    @gpu_kernel(name)
    def kernel(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        a, b = inputs
        if unsupported(a, b):
            return forward(name, backend, inputs, attrs)
        body = f"return select(0i, 1i, {_truth('a', a.dtype)} {op} {_truth('b', b.dtype)});"
        return elementwise(backend, name, [("a", a), ("b", b)], "bool", body)

    kernel.__name__ = name


_logical("LogicalAnd", "&&")
_logical("LogicalOr", "||")
_logical("LogicalXor", "!=")


@gpu_kernel(kn.LogicalNot)
def logical_not(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    (x,) = inputs
    if unsupported(x):
        return forward("LogicalNot", backend, inputs, attrs)
    return elementwise(backend, "LogicalNot", [("x", x)], "bool", f"return select(1i, 0i, {_truth('x', x.dtype)});")


@gpu_kernel(kn.BitwiseAnd)
def bitwise_and(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The bits of int32 (or bool) values anded; other dtypes go to the cpu kernel (which refuses floats)."""
    a, b = inputs
    if a.dtype != b.dtype or a.dtype not in ("int32", "bool"):
        return forward("BitwiseAnd", backend, inputs, attrs)
    return elementwise(backend, "BitwiseAnd", [("a", a), ("b", b)], a.dtype, "return a & b;")


@gpu_kernel(kn.Select)
def select_(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """``a`` where ``condition`` is true, else ``b``, all three broadcast together; the dtype of ``a``."""
    condition, a, b = inputs
    if unsupported(condition, a, b) or a.dtype != b.dtype:
        return forward("Select", backend, inputs, attrs)
    body = f"return select(b, a, {_truth('cond', condition.dtype)});"
    return elementwise(backend, "Select", [("cond", condition), ("a", a), ("b", b)], a.dtype, body)
