"""WGSL helper functions for the element-wise kernels, with the cpu kernels' IEEE semantics.

GPU builtins leave NaN, infinities, division by zero and out-of-domain arguments implementation-defined, and
some drivers do not preserve NaN through comparisons; these helpers test the bits instead and handle every
special case explicitly. :func:`with_math` prepends to a program the helpers its code calls (names ``m_*``).

Integer division and remainder never use ``/`` or ``%`` on negative ``i32`` operands: WGSL defines them, but
the GLSL that wgpu's OpenGL/GLES backend generates leaves a remainder with a negative operand undefined (Mesa's
llvmpipe computes it as unsigned) and division of negatives loosely specified, so ``m_idiv``, ``m_ifloordiv``
and ``m_imod`` divide the magnitudes as ``u32`` (defined everywhere for a non-zero divisor) and set the sign
explicitly; every int32 result then wraps modulo 2**32 as on Vulkan/Metal/D3D12.

Conversions follow TF.js's typed arrays (see the cpu kernels' ``store``): ``m_to_i32`` truncates, gives 0 for
NaN and infinities and wraps modulo 2**32; ``m_to_bool`` is true where that int32 is non-zero modulo 256.
"""

from __future__ import annotations

import re

HELPERS: dict[str, str] = {
    "m_isnan": "fn m_isnan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }",
    "m_isinf": "fn m_isinf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }",
    "m_isfinite": "fn m_isfinite(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) < 0x7f800000u; }",
    "m_signbit": "fn m_signbit(x: f32) -> bool { return (bitcast<u32>(x) & 0x80000000u) != 0u; }",
    "m_nan": "fn m_nan() -> f32 { return bitcast<f32>(0x7fc00000u); }",
    # an infinity with the sign of s
    "m_inf": "fn m_inf(s: f32) -> f32 { return bitcast<f32>((bitcast<u32>(s) & 0x80000000u) | 0x7f800000u); }",
    "m_copysign": """fn m_copysign(x: f32, s: f32) -> f32 {
  return bitcast<f32>((bitcast<u32>(x) & 0x7fffffffu) | (bitcast<u32>(s) & 0x80000000u));
}""",
    "m_to_i32": """fn m_to_i32(v: f32) -> i32 {
  if (!m_isfinite(v)) { return 0i; }
  let t = trunc(v);
  if (abs(t) < 2147483648.0) { return i32(t); }
  let hi = trunc(t / 4294967296.0);
  var lo = t - hi * 4294967296.0;
  if (lo >= 2147483648.0) { lo = lo - 4294967296.0; } else if (lo < -2147483648.0) { lo = lo + 4294967296.0; }
  return i32(lo);
}""",
    # |x| as a u32 (exact for -2**31)
    "m_uabs": "fn m_uabs(x: i32) -> u32 { return select(bitcast<u32>(x), 0u - bitcast<u32>(x), x < 0i); }",
    # a / b truncated towards 0, wrapped (-2**31 / -1 = -2**31); 0 where b is 0
    "m_idiv": """fn m_idiv(a: i32, b: i32) -> i32 {
  if (b == 0i) { return 0i; }
  let q = m_uabs(a) / m_uabs(b);
  return bitcast<i32>(select(q, 0u - q, (a < 0i) != (b < 0i)));
}""",
    # floor(a / b), wrapped; 0 where b is 0 (NaN or an infinity stored in an Int32Array)
    "m_ifloordiv": """fn m_ifloordiv(a: i32, b: i32) -> i32 {
  if (b == 0i) { return 0i; }
  let ua = m_uabs(a);
  let ub = m_uabs(b);
  let q = ua / ub;
  if ((a < 0i) == (b < 0i)) { return bitcast<i32>(q); }
  return bitcast<i32>(0u - select(q, q + 1u, ua - q * ub != 0u));
}""",
    # a - floor(a / b) * b: the sign of b; 0 where b is 0
    "m_imod": """fn m_imod(a: i32, b: i32) -> i32 {
  if (b == 0i) { return 0i; }
  let ub = m_uabs(b);
  var r = m_uabs(a) % ub;
  if (r != 0u && ((a < 0i) != (b < 0i))) { r = ub - r; }
  return bitcast<i32>(select(r, 0u - r, b < 0i));
}""",
    "m_to_bool": "fn m_to_bool(v: f32) -> i32 { return select(0i, 1i, (m_to_i32(v) & 255i) != 0i); }",
    "m_truthy": "fn m_truthy(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) != 0u; }",
    "m_div": """fn m_div(a: f32, b: f32) -> f32 {
  if ((bitcast<u32>(b) & 0x7fffffffu) == 0u) {
    if ((bitcast<u32>(a) & 0x7fffffffu) == 0u || m_isnan(a)) { return m_nan(); }
    return m_inf(bitcast<f32>(bitcast<u32>(a) ^ bitcast<u32>(b)));
  }
  return a / b;
}""",
    # floor(a / b) as with a correctly rounded division: an exact integer quotient is never floored below
    "m_floordiv": """fn m_floordiv(a: f32, b: f32) -> f32 {
  let q = m_div(a, b);
  if (!m_isfinite(q)) { return q; }
  let r = round(q);
  if (r * b == a) { return r; }
  return floor(q);
}""",
    # C's fmod, exactly: subtract b scaled by powers of two (each subtraction is exact)
    "m_fmod": """fn m_fmod(x: f32, y: f32) -> f32 {
  let ax = abs(x);
  let ay = abs(y);
  if (!m_isfinite(x) || m_isnan(y) || ay == 0.0) { return m_nan(); }
  if (m_isinf(y) || ax < ay) { return x; }
  var r = ax;
  let ey = frexp(ay).exp;
  for (var k = 0; k < 320 && r >= ay; k++) {
    var d = ldexp(frexp(ay).fract, frexp(r).exp);
    if (d > r) { d = d * 0.5; }
    r = r - d;
  }
  return m_copysign(r, x);
}""",
    "m_expm1": """fn m_expm1(x: f32) -> f32 {
  if (m_isnan(x)) { return x; }
  if (x > 88.72284) { return m_inf(1.0); }
  if (x < -18.0) { return -1.0; }
  let u = exp(x);
  if (u == 1.0) { return x; }
  let um1 = u - 1.0;
  if (um1 == -1.0) { return -1.0; }
  if (abs(x) > 0.5) { return um1; }
  return um1 * x / log(u);
}""",
    "m_log1p": """fn m_log1p(x: f32) -> f32 {
  if (m_isnan(x) || x < -1.0) { return m_nan(); }
  if (x == -1.0) { return m_inf(-1.0); }
  if (m_isinf(x)) { return x; }
  let u = 1.0 + x;
  if (u == 1.0) { return x; }
  if (x > 0.5) { return log(u); }
  return log(u) * x / (u - 1.0);
}""",
    "m_exp": """fn m_exp(x: f32) -> f32 {
  if (m_isnan(x)) { return x; }
  if (x > 88.72284) { return m_inf(1.0); }
  if (x < -103.98) { return 0.0; }
  return exp(x);
}""",
    "m_log": """fn m_log(x: f32) -> f32 {
  if (m_isnan(x) || x < 0.0) { return m_nan(); }
  if (x == 0.0) { return m_inf(-1.0); }
  if (m_isinf(x)) { return x; }
  return log(x);
}""",
    # x ** n for an integer n >= 0 by repeated squaring
    "m_powi": """fn m_powi(x: f32, n: i32) -> f32 {
  var r = 1.0;
  var base = x;
  var e = n;
  loop {
    if ((e & 1i) != 0i) { r = r * base; }
    e = e >> 1u;
    if (e == 0i) { break; }
    base = base * base;
  }
  return r;
}""",
    # numpy's float32 power (C powf), except 1 ** NaN, which is NaN (JS)
    "m_pow": """fn m_pow(a: f32, b: f32) -> f32 {
  if (b == 0.0) { return 1.0; }
  if (m_isnan(a) || m_isnan(b)) { return m_nan(); }
  if (a == 1.0) { return 1.0; }
  let ab = abs(b);
  let is_int = m_isfinite(b) && trunc(b) == b;
  let odd = is_int && ab < 16777216.0 && (i32(ab) & 1i) == 1i;
  if (m_isinf(b)) {
    if (abs(a) == 1.0) { return 1.0; }
    if ((abs(a) < 1.0) == (b > 0.0)) { return 0.0; }
    return m_inf(1.0);
  }
  if (a == 0.0 || m_isinf(a)) {
    let big = (a == 0.0) == (b < 0.0);
    let mag = select(0.0, m_inf(1.0), big);
    return select(mag, m_copysign(mag, a), odd);
  }
  if (a < 0.0 && !is_int) { return m_nan(); }
  var m: f32;
  if (is_int && ab < 16777216.0) {
    let p = m_powi(abs(a), i32(ab));
    if (b > 0.0) { m = p; }
    else if (m_isinf(p)) { m = m_powi(1.0 / abs(a), i32(ab)); }
    else { m = 1.0 / p; }
  } else {
    m = exp2(b * log2(abs(a)));
  }
  return select(m, -m, a < 0.0 && odd);
}""",
    # x - k * pi / 2 (Cody-Waite, three parts of pi / 2: exact products for |k| < 2**16) and k mod 4
    "m_reduce": """fn m_reduce(x: f32) -> vec2<f32> {
  let k = round(x * 0.6366197723675814);
  let r = ((x - k * 1.5703125) - k * 4.837512969970703125e-4) - k * 7.549789948768648e-8;
  return vec2<f32>(r, f32(i32(k) & 3i));
}""",
    # sin, cos and tan reduced to [-pi/4, pi/4] first (the builtins lose accuracy on large arguments);
    # beyond |x| = 1e5 the builtins' own reduction is used
    "m_sin": """fn m_sin(x: f32) -> f32 {
  if (abs(x) > 1e5) { return sin(x); }
  let rq = m_reduce(x);
  let v = select(sin(rq.x), cos(rq.x), rq.y == 1.0 || rq.y == 3.0);
  return select(v, -v, rq.y >= 2.0);
}""",
    "m_cos": """fn m_cos(x: f32) -> f32 {
  if (abs(x) > 1e5) { return cos(x); }
  let rq = m_reduce(x);
  let v = select(cos(rq.x), sin(rq.x), rq.y == 1.0 || rq.y == 3.0);
  return select(v, -v, rq.y == 1.0 || rq.y == 2.0);
}""",
    "m_tan": """fn m_tan(x: f32) -> f32 {
  if (abs(x) > 1e5) { return tan(x); }
  let rq = m_reduce(x);
  let t = tan(rq.x);
  return select(t, -1.0 / t, rq.y == 1.0 || rq.y == 3.0);
}""",
    # numpy's arctan2, with every special case of C's atan2f
    "m_atan2": """fn m_atan2(y: f32, x: f32) -> f32 {
  let pi = 3.14159265358979;
  if (m_isnan(x) || m_isnan(y)) { return m_nan(); }
  if (y == 0.0) {
    if (m_signbit(x)) { return m_copysign(pi, y); }
    return y;
  }
  if (m_isinf(y)) {
    if (m_isinf(x)) { return m_copysign(select(0.75 * pi, 0.25 * pi, x > 0.0), y); }
    return m_copysign(0.5 * pi, y);
  }
  if (x == 0.0) { return m_copysign(0.5 * pi, y); }
  if (m_isinf(x)) { return select(m_copysign(pi, y), m_copysign(0.0, y), x > 0.0); }
  return atan2(y, x);
}""",
}

_CALL = re.compile(r"\b(m_[a-z0-9_]+)\(")


def with_math(code: str) -> str:
    """``code`` preceded by every helper it calls, directly or through other helpers."""
    needed: list[str] = []
    pending = [code]
    while pending:
        for name in _CALL.findall(pending.pop()):
            if name in HELPERS and name not in needed:
                needed.append(name)
                pending.append(HELPERS[name])
    return "\n".join(HELPERS[n] for n in sorted(needed)) + "\n" + code
