"""Element-wise unary math on the GPU: Abs, Neg, Square, Sign, Reciprocal; Exp, Expm1, Log, Log1p, Sqrt,
Rsqrt, Erf; trigonometric and hyperbolic functions and their inverses; Ceil, Floor, Round; IsNan, IsInf,
IsFinite; Step and ClipByValue.

Each kernel is a WGSL function ``fx(v: f32) -> f32`` with the cpu kernel's special cases (NaN, infinities,
out-of-domain arguments, signed zeros) written out. Kernels whose cpu version keeps the input dtype compute
int32 and bool inputs as TF.js does (in floating point, stored back truncated and wrapped): exactly in
integer arithmetic where the result is an integer function of the input (Abs, Ceil, Floor, Round, Sign,
Neg, Square, Reciprocal, Erf, Step, ClipByValue and the activations), from exact tables of the cpu kernel's
results (Expm1, Sinh, Cosh: every finite value; Log1p, Asinh, Acosh: where each truncated result starts),
otherwise through ``fx`` in f32 (Acos, Asin, Atan, Atanh, Sin, Cos, Tan: agree with the cpu kernel's float64
values while |x| <= 1e5). Exp, Log, Sqrt, Rsqrt and Tanh
return float32 whatever the input. complex64 and string inputs are forwarded to the cpu kernels.

Erf is TF.js's Abramowitz-Stegun approximation for |x| >= 1 and the Taylor series below (closer to erf than
the approximation's 1.5e-7, which f32 cancellation would double). Sin, Cos and Tan reduce their argument
exactly enough for |x| <= 1e5; beyond, the GPU's builtins reduce it (Mesa's lavapipe does not: cos(1e10)
comes out 1).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from ....core import kernel_names as kn
from ...shared.numbers import erf, store
from .binary import elementwise, unsupported
from .common import Output, WebGPUBackend, gpu_kernel
from .forward import forward

ParamsFn = Callable[[dict | None, str], dict]

INT_MIN, INT_MAX = -(2**31), 2**31 - 1


def stored(value: float, dtype: str) -> int:
    """The int32/bool value TF.js's typed array of ``dtype`` holds for the number ``value``."""
    return int(store(np.array([value], dtype=np.float64), dtype)[0])


def unary_kernel(
    name: str,
    fx: str,
    *,
    out: str = "same",
    int_body: str | None = None,
    bool_body: str | None = None,
    nan_through: bool = True,
    params: ParamsFn | None = None,
    exact_int: Callable[[str], tuple[str, str]] | None = None,
) -> None:
    """Register the GPU kernel ``name`` of one input ``x``.

    ``fx`` is the body of ``fn fx(v: f32) -> f32`` (NaN returned unchanged first when ``nan_through``).
    ``out``: ``"same"`` (the input's dtype: float32 gives ``fx(x)``, int32 ``int_body`` or ``fx`` truncated,
    bool ``bool_body``, ``int_body`` or ``fx`` as a bool), ``"float32"`` (``fx`` of the value as f32).
    ``params(attrs, dtype)`` gives the parameters the bodies read; ``exact_int(dtype)`` gives (body, prelude)
    for int32 and bool inputs instead (a table of results, see :func:`int_table` and :func:`int_steps`).
    """
    prelude = "fn fx(v: f32) -> f32 {\n" + ("if (m_isnan(v)) { return v; }\n" if nan_through else "") + fx + "\n}"

    @gpu_kernel(name)
    def kernel(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        if unsupported(x):
            return forward(name, backend, inputs, attrs)
        dtype = x.dtype
        extra_prelude = ""
        if out == "float32" or dtype == "float32":
            body, out_dtype = ("return fx(f32(x));", "float32")
        elif exact_int is not None:
            (body, extra_prelude), out_dtype = exact_int(dtype), dtype
        elif dtype == "int32":
            body, out_dtype = (int_body or "return m_to_i32(fx(f32(x)));", "int32")
        else:
            body, out_dtype = (bool_body or int_body or "return m_to_bool(fx(f32(x)));", "bool")
        code = (prelude if "fx(" in body else "") + extra_prelude
        extra = params(attrs, dtype) if params else None
        return elementwise(backend, name, [("x", x)], out_dtype, body, params=extra, prelude=code)

    kernel.__name__ = name


def _nan_if(cond: str, rest: str) -> str:
    return f"if ({cond}) {{ return m_nan(); }}\n{rest}"


LN2 = "0.6931471805599453"
IDENTITY = "return x;"

unary_kernel(kn.Abs, "return abs(v);", int_body="return select(x, 0i - x, x < 0i);", bool_body=IDENTITY)
unary_kernel(kn.Neg, "return -v;", int_body="return 0i - x;", bool_body=IDENTITY)
unary_kernel(kn.Square, "return v * v;", int_body="return x * x;", bool_body=IDENTITY)
unary_kernel(
    kn.Sign,
    "if (m_isnan(v)) { return 0.0; }\nreturn select(select(0.0, -1.0, v < 0.0), 1.0, v > 0.0);",
    int_body="return select(select(0i, -1i, x < 0i), 1i, x > 0i);",
    bool_body=IDENTITY,
    nan_through=False,
)
unary_kernel(kn.Reciprocal, "return m_div(1.0, v);", int_body="return select(0i, x, x == 1i || x == -1i);")
unary_kernel(kn.Ceil, "return ceil(v);", int_body=IDENTITY)
unary_kernel(kn.Floor, "return floor(v);", int_body=IDENTITY)
unary_kernel(kn.Round, "return round(v);", int_body=IDENTITY)  # WGSL round: half to even, as np.rint

unary_kernel(kn.Exp, "return m_exp(v);", out="float32")


def _stored_array(fn: Callable[[np.ndarray], np.ndarray], n: np.ndarray, dtype: str) -> list[int]:
    with np.errstate(all="ignore"):
        return [int(v) for v in store(fn(n.astype(np.float64)), dtype)]


def int_table(fn: Callable[[np.ndarray], np.ndarray], lo: int, hi: int) -> Callable[[str], tuple[str, str]]:
    """Exact int32/bool results of the cpu kernel ``fn`` (float64 values, stored as TF.js does) as a table of
    the inputs ``lo..hi``; the results below ``lo`` and above ``hi`` must be constant (checked here)."""
    ends = _stored_array(fn, np.array([lo - 1000, lo - 1, hi + 1, hi + 1000]), "int32")
    assert ends[0] == ends[1] and ends[2] == ends[3], "int_table: results outside lo..hi are not constant"

    def make(dtype: str) -> tuple[str, str]:
        below, *table, above = _stored_array(fn, np.arange(lo - 1, hi + 2), dtype)
        items = ", ".join(str(v) for v in table)  # abstract ints: -2147483648i would not parse
        prelude = f"const int_table = array<i32, {len(table)}>({items});"
        body = f"if (x < {lo}i) {{ return {below}i; }}\nif (x > {hi}i) {{ return {above}i; }}\n"
        body += f"return int_table[x - {lo}i];"
        return body, prelude

    return make


def int_steps(fn: Callable[[np.ndarray], np.ndarray], odd: bool) -> Callable[[str], tuple[str, str]]:
    """Exact int32/bool results of an increasing cpu kernel ``fn`` whose truncated results are small: the
    least n > 0 where each result k >= 1 is reached (odd functions mirror them for n < 0; other inputs give
    0)."""
    steps = []
    for k in range(1, 64):
        if _stored_array(fn, np.array([INT_MAX]), "int32")[0] < k:
            break
        first, last = 1, INT_MAX  # bisection for the least n with result >= k
        while first < last:
            mid = (first + last) // 2
            first, last = (first, mid) if _stored_array(fn, np.array([mid]), "int32")[0] >= k else (mid + 1, last)
        steps.append(first)

    def make(dtype: str) -> tuple[str, str]:
        lines = ["var r = 0i;"]
        for k, n in enumerate(steps, start=1):
            lines.append(f"if (x >= {n}i) {{ r = {k}i; }}")
            if odd:
                lines.append(f"if (x <= -{n}i) {{ r = -{k}i; }}")
        return "\n".join(lines) + "\nreturn r;", ""

    return make


unary_kernel(kn.Expm1, "return m_expm1(v);", exact_int=int_table(np.expm1, -40, 709))
unary_kernel(kn.Log, "return m_log(v);", out="float32")
unary_kernel(kn.Log1p, "return m_log1p(v);", exact_int=int_steps(np.log1p, odd=False))
unary_kernel(kn.Sqrt, _nan_if("v < 0.0", "if (m_isinf(v)) { return v; }\nreturn sqrt(v);"), out="float32")
unary_kernel(
    kn.Rsqrt,
    _nan_if("v < 0.0", "if (v == 0.0) { return m_inf(v); }\nif (m_isinf(v)) { return 0.0; }\nreturn 1.0 / sqrt(v);"),
    out="float32",
)
unary_kernel(
    kn.Tanh,
    "let a = abs(v);\nif (a > 15.0) { return m_copysign(1.0, v); }\n"
    "let e = m_expm1(2.0 * a);\nreturn m_copysign(e / (e + 2.0), v);",
    out="float32",
)

# trigonometry
unary_kernel(kn.Sin, _nan_if("m_isinf(v)", "return m_sin(v);"))
unary_kernel(kn.Cos, _nan_if("m_isinf(v)", "return m_cos(v);"))
unary_kernel(kn.Tan, _nan_if("m_isinf(v)", "return m_tan(v);"))
unary_kernel(kn.Asin, _nan_if("abs(v) > 1.0", "return asin(v);"))
unary_kernel(kn.Acos, _nan_if("abs(v) > 1.0", "return acos(v);"))
unary_kernel(kn.Atan, "if (m_isinf(v)) { return m_copysign(1.5707963267948966, v); }\nreturn atan(v);")
unary_kernel(
    kn.Sinh,
    "let a = abs(v);\nvar r: f32;\n"
    "if (a > 10.0) { let h = m_exp(0.5 * a); r = (0.5 * h) * h; }\n"
    "else { let e = m_expm1(a); r = 0.5 * (e + e / (e + 1.0)); }\nreturn m_copysign(r, v);",
    exact_int=int_table(np.sinh, -711, 711),
)
unary_kernel(
    kn.Cosh,
    "let a = abs(v);\nif (a > 10.0) { let h = m_exp(0.5 * a); return (0.5 * h) * h; }\n"
    "let e = exp(a);\nreturn 0.5 * (e + 1.0 / e);",
    exact_int=int_table(np.cosh, -711, 711),
)
unary_kernel(
    kn.Asinh,
    "let a = abs(v);\nif (m_isinf(a)) { return v; }\nvar r: f32;\n"
    f"if (a > 1e10) {{ r = log(a) + {LN2}; }}\n"
    "else { r = m_log1p(a + a * a / (1.0 + sqrt(a * a + 1.0))); }\nreturn m_copysign(r, v);",
    exact_int=int_steps(np.arcsinh, odd=True),
)
unary_kernel(
    kn.Acosh,
    _nan_if(
        "v < 1.0",
        f"if (m_isinf(v)) {{ return v; }}\nif (v > 1e10) {{ return log(v) + {LN2}; }}\n"
        "return log(v + sqrt((v - 1.0) * (v + 1.0)));",
    ),
    exact_int=int_steps(np.arccosh, odd=False),
)
unary_kernel(
    kn.Atanh,
    _nan_if(
        "abs(v) > 1.0",
        "let a = abs(v);\nif (a == 1.0) { return m_inf(v); }\n"
        "return m_copysign(0.5 * m_log1p(2.0 * a / (1.0 - a)), v);",
    ),
)


def _first_integer_where(fn: Callable[[float], float], value: int) -> int:
    """The least n > 0 whose TF.js int32 result ``trunc(fn(n))`` is ``value`` (for n up to 1000)."""
    for n in range(1, 1000):
        if stored(fn(float(n)), "int32") == value:
            return n
    raise AssertionError("no threshold below 1000")  # pragma: no cover


def _cpu_erf(v: float) -> float:
    return float(erf(np.array([v]), None)[0])


# Abramowitz & Stegun 7.1.26, as the cpu kernel (TF.js's approximation)
def _erf_series() -> str:
    """The Taylor series of erf(a) / (2 a / sqrt(pi)) in z = a * a, in Horner form (13 terms: 1e-9 at a = 1)."""
    expr = f"1.0 / {math.factorial(12) * 25}.0"
    for n in range(11, -1, -1):
        expr = f"1.0 / {math.factorial(n) * (2 * n + 1)}.0 - z * ({expr})"
    return expr


_ERF = """if (v == 0.0) { return v; }
let a = abs(v);
if (a < 1.0) {  // Taylor series: closer to erf than the approximation, without its cancellation
  let z = a * a;
  let s = {_ERF_SERIES};
  return 1.1283791670955126 * s * v;
}
let t = 1.0 / (1.0 + 0.3275911 * a);
let poly = ((((1.061405429 * t - 1.453152027) * t + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t;
return m_copysign(1.0 - poly * m_exp(-a * a), v);""".replace("{_ERF_SERIES}", _erf_series())
# erf of an integer, truncated, is 0 up to the n where the cpu kernel's float64 result rounds to 1
_ERF_ONE = _first_integer_where(_cpu_erf, 1)
unary_kernel(
    kn.Erf, _ERF, int_body=f"return select(0i, select(-1i, 1i, x > 0i), x >= {_ERF_ONE}i || x <= -{_ERF_ONE}i);"
)


def _bool_unary(name: str, float_body: str, int_value: bool) -> None:
    """A predicate with a bool output; int32 and bool values are all finite numbers."""
    constant = f"return {int(int_value)}i;"

    @gpu_kernel(name)
    def kernel(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        (x,) = inputs
        if unsupported(x):
            return forward(name, backend, inputs, attrs)
        body = float_body if x.dtype == "float32" else constant
        return elementwise(backend, name, [("x", x)], "bool", body)

    kernel.__name__ = name


_bool_unary("IsNan", "return select(0i, 1i, m_isnan(x));", False)
_bool_unary("IsInf", "return select(0i, 1i, m_isinf(x));", False)
_bool_unary("IsFinite", "return select(0i, 1i, m_isfinite(x));", True)


def _step_params(attrs: dict | None, dtype: str) -> dict:
    alpha = float(attrs["alpha"])
    return {"alpha": alpha} if dtype == "float32" else {"alpha_s": stored(alpha, dtype)}


unary_kernel(
    kn.Step,
    "if (v > 0.0) { return 1.0; }\nreturn alpha;",
    int_body="return select(alpha_s, 1i, x > 0i);",
    params=_step_params,
)


def _bound(value: float, below: bool) -> tuple[int, int]:
    """(threshold, always) for the int32 test ``x < value`` (``below``) or ``x > value``: the test is
    ``x < threshold || always`` (``x > threshold || always``) in int32 arithmetic."""
    if below:
        if value == math.inf:
            return INT_MAX, 1
        t = INT_MIN if value == -math.inf else math.ceil(value)
        return (INT_MAX, 1) if t > INT_MAX else (max(t, INT_MIN), 0)
    if value == -math.inf:
        return INT_MIN, 1
    t = INT_MAX if value == math.inf else math.floor(value)
    return (INT_MIN, 1) if t < INT_MIN else (min(t, INT_MAX), 0)


def _clip_params(attrs: dict | None, dtype: str) -> dict:
    lo, hi = float(attrs["clip_value_min"]), float(attrs["clip_value_max"])
    if dtype == "float32":
        return {"lo": lo, "hi": hi}
    # the cpu kernel clips the float64 value of x, then stores it: x < lo gives lo, x > hi gives hi
    if math.isnan(lo) or math.isnan(hi):
        lo = hi = math.nan
    if lo > hi:
        lo = hi
    lo_t, lo_all = _bound(lo, below=True) if not math.isnan(lo) else (INT_MAX, 1)
    hi_t, hi_all = _bound(hi, below=False) if not math.isnan(hi) else (INT_MIN, 1)
    return {
        "lo_t": lo_t, "lo_all": lo_all, "lo_s": stored(lo, dtype),
        "hi_t": hi_t, "hi_all": hi_all, "hi_s": stored(hi, dtype),
    }  # fmt: skip


unary_kernel(
    kn.ClipByValue,
    "if (m_isnan(lo) || m_isnan(hi)) { return m_nan(); }\n"
    "let r = select(v, lo, v < lo);\nreturn select(r, hi, r > hi);",
    int_body="if (x < lo_t || lo_all != 0i) { return lo_s; }\n"
    "if (x > hi_t || hi_all != 0i) { return hi_s; }\nreturn x;",
    params=_clip_params,
)
