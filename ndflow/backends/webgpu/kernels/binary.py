"""Element-wise kernels with numpy broadcasting: the generic program (:func:`elementwise`) and the binary
arithmetic kernels Add, Sub, Multiply, RealDiv, FloorDiv, Mod, Pow, Maximum, Minimum, SquaredDifference,
Atan2 and AddN.

One program per (kernel, code variant, input dtypes, broadcasting pattern, output rank): each invocation
computes one output element, reading every input at its broadcast index (strides 0 along broadcast
dimensions; an input of the output's shape is read at the output index, a one-element input at 0). Shapes
and strides are parameters, so one compiled program serves every shape with the same pattern.

Results match the cpu kernels, which compute int32 and bool values in float64 (JS numbers) and store them
as TF.js's typed arrays do: int32 arithmetic wraps modulo 2**32, FloorDiv/Mod floor towards minus infinity
with 0 where the divisor is 0, Pow of int32 is computed exactly by repeated squaring, wrapped (the cpu kernel
agrees while the exact power stays below 2**53; above 2**86 both give 0; in between the cpu kernel wraps the
float64-rounded power, which this program does not reproduce), bool results are non-zero modulo 256.
complex64 and string inputs have no GPU storage: those calls are forwarded to the cpu kernels.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ....core import kernel_names as kn
from ....core.dtypes import upcast_type
from ._wgsl_math import with_math
from .common import (
    GPU_DTYPES,
    Output,
    WebGPUBackend,
    broadcast_index_fn,
    broadcast_strides,
    coords_fn,
    gpu_kernel,
    size_of,
)
from .forward import forward

# WGSL compute type of each GPU dtype
CT = {"float32": "f32", "int32": "i32", "bool": "i32"}


def broadcast_shape(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """The numpy broadcast of ``shapes`` (the ops have validated them)."""
    rank = max((len(s) for s in shapes), default=0)
    out = [1] * rank
    for s in shapes:
        for d, n in enumerate(s, start=rank - len(s)):
            if n != 1:
                out[d] = n
    return tuple(out)


def elementwise(
    backend: WebGPUBackend,
    name: str,
    inputs: Sequence[tuple[str, Any]],
    out_dtype: str,
    body: str,
    *,
    shape: tuple[int, ...] | None = None,
    params: dict[str, Any] | None = None,
    prelude: str = "",
) -> Output:
    """Run ``fn op(<input>: <T>, ...) -> <U> { body }`` for every element of the broadcast output.

    ``inputs`` are (WGSL name, tensor); each input's value has its dtype's compute type (``f32`` for
    float32, ``i32`` for int32 and bool, 0/1); ``U`` is ``out_dtype``'s (a bool output stores ``v != 0``).
    ``params`` are extra parameters the body reads by name; ``prelude`` is module-scope WGSL (functions the
    body calls); both may call the ``m_*`` helpers of ``_wgsl_math``.
    """
    shape = tuple(shape if shape is not None else broadcast_shape(*(t.shape for _, t in inputs)))
    rank = len(shape)
    size = size_of(shape)
    modes = []
    for _, t in inputs:
        n = size_of(t.shape)
        modes.append("same" if n == size else "one" if n == 1 else "bcast")
    any_bcast = "bcast" in modes

    def code() -> str:
        helpers = [coords_fn("out", rank)] if any_bcast else []
        reads = []
        for (arg, t), mode in zip(inputs, modes, strict=True):
            if mode == "bcast":
                helpers.append(broadcast_index_fn(arg, len(t.shape), rank))
                reads.append(f"load_{arg}({arg}_bindex(c))")
            else:
                reads.append(f"load_{arg}({'index' if mode == 'same' else '0'})")
        args = ", ".join(f"{arg}: {CT[t.dtype]}" for arg, t in inputs)
        coords = "let c = out_coords(index); " if any_bcast else ""
        return with_math(
            "\n".join(helpers)
            + f"\n{prelude}\nfn op({args}) -> {CT[out_dtype]} {{\n{body}\n}}\n"
            + f"fn compute(index: i32) {{ {coords}store_out(index, op({', '.join(reads)})); }}"
        )

    all_params = dict(params or {})
    if any_bcast:
        all_params["out_shape"] = list(shape) or [1]
        for (arg, t), mode in zip(inputs, modes, strict=True):
            if mode == "bcast":
                all_params[f"{arg}_bstrides"] = broadcast_strides(t.shape)
    key = ("ew", name, prelude, body, tuple(modes), rank, tuple(len(t.shape) for _, t in inputs))
    return backend.run(key, code, list(inputs), [("out", shape, out_dtype)], all_params)[0]


def unsupported(*tensors: Any) -> bool:
    """Whether some input has a dtype without GPU storage (complex64, string): forward those calls."""
    return any(t.dtype not in GPU_DTYPES for t in tensors)


def binary_kernel(name: str, bodies: dict[str, str], out_dtypes: dict[str, str] | None = None) -> None:
    """Register kernel ``name`` over two inputs of one dtype: ``bodies[dtype]`` is ``op(a, b)``'s WGSL body,
    ``out_dtypes[dtype]`` the output dtype (default: the input dtype)."""

    @gpu_kernel(name)
    def kernel(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
        a, b = inputs
        dtype = a.dtype if a.dtype == b.dtype else upcast_type(a.dtype, b.dtype)
        if unsupported(a, b) or dtype not in bodies:
            return forward(name, backend, inputs, attrs)
        out_dtype = (out_dtypes or {}).get(dtype, dtype)
        return elementwise(backend, name, [("a", a), ("b", b)], out_dtype, bodies[dtype])

    kernel.__name__ = name


def _float_int_bool(f: str, i: str, b: str | None = None) -> dict[str, str]:
    return {"float32": f, "int32": i, "bool": i if b is None else b}


binary_kernel(kn.Add, _float_int_bool("return a + b;", "return a + b;", "return a | b;"))
binary_kernel(kn.Sub, _float_int_bool("return a - b;", "return a - b;", "return select(0i, 1i, a != b);"))
binary_kernel(kn.Multiply, _float_int_bool("return a * b;", "return a * b;", "return a & b;"))
binary_kernel(
    kn.RealDiv,
    _float_int_bool("return m_div(a, b);", "return m_div(f32(a), f32(b));"),
    {"int32": "float32", "bool": "float32"},
)
binary_kernel(
    kn.FloorDiv,
    _float_int_bool("return m_to_i32(m_floordiv(a, b));", "return m_ifloordiv(a, b);"),
    {"float32": "int32", "bool": "int32"},
)
binary_kernel(
    kn.Mod,
    _float_int_bool(
        "let r = m_fmod(a, b);\nif (r != 0.0 && ((r < 0.0) != (b < 0.0))) { return r + b; }\nreturn r;",
        "return m_imod(a, b);",
    ),
)
_INT_POW = """if (b < 0i) {
  if (a == 1i) { return 1i; }
  if (a == -1i) { return select(1i, -1i, (b & 1i) != 0i); }
  return 0i;
}
if (f32(b) * log2(abs(f32(a))) > 86.0) { return 0i; }  // a float64 multiple of 2**34 (or inf): 0 mod 2**32
var r = 1i;
var base = a;
var e = b;
loop {
  if ((e & 1i) != 0i) { r = r * base; }
  e = e >> 1u;
  if (e == 0i) { break; }
  base = base * base;
}
return r;"""
binary_kernel(kn.Pow, _float_int_bool("return m_pow(a, b);", _INT_POW))
binary_kernel(
    kn.Maximum,
    _float_int_bool(
        "if (m_isnan(a) || m_isnan(b)) { return m_nan(); }\nreturn select(b, a, a > b);", "return max(a, b);"
    ),
    {"bool": "int32"},
)
binary_kernel(
    kn.Minimum,
    _float_int_bool(
        "if (m_isnan(a) || m_isnan(b)) { return m_nan(); }\nreturn select(b, a, a < b);", "return min(a, b);"
    ),
    {"bool": "int32"},
)
binary_kernel(
    kn.SquaredDifference,
    _float_int_bool("let d = a - b; return d * d;", "let d = a - b; return d * d;", "return select(0i, 1i, a != b);"),
)
binary_kernel(
    kn.Atan2,
    _float_int_bool("return m_atan2(a, b);", "return m_to_i32(m_atan2(f32(a), f32(b)));",
                    "return m_to_bool(m_atan2(f32(a), f32(b)));"),
)  # fmt: skip


@gpu_kernel(kn.AddN)
def add_n(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    """The sum of same-shaped tensors, added in order, in programs of as many inputs as the GPU binds at once
    (each program after the first adds its inputs to the previous partial sum). Bools are counted in int32
    and the total stored as a bool (non-zero modulo 256), as the cpu kernel does."""
    if unsupported(*inputs) or len({t.dtype for t in inputs}) != 1:
        return forward("AddN", backend, inputs, attrs)
    dtype = inputs[0].dtype
    shape = tuple(inputs[0].shape)
    limit = int(backend.gpu.limits.get("max-storage-buffers-per-shader-stage", 8))
    chunk = max(2, limit - 2)  # leave room for the output and the parameter buffer
    acc_dtype = "int32" if dtype == "bool" else dtype
    pending = list(inputs)
    partial = None
    try:
        while pending:
            take = chunk - (partial is not None)
            group = ([partial] if partial is not None else []) + pending[:take]
            pending = pending[take:]
            out_dtype = dtype if not pending else acc_dtype
            names = [f"x{k}" for k in range(len(group))]
            total = " + ".join(names)
            body = f"return select(0i, 1i, (({total}) & 255i) != 0i);" if out_dtype == "bool" else f"return {total};"
            result = elementwise(backend, "AddN", list(zip(names, group, strict=True)), out_dtype, body, shape=shape)
            if partial is not None:
                backend.dispose_data(partial.data_id)
            partial = _Partial(result) if pending else None
            if not pending:
                return result
    except BaseException:
        if partial is not None:
            backend.dispose_data(partial.data_id)
        raise
    raise AssertionError("AddN: no inputs")  # pragma: no cover - the op refuses an empty list


class _Partial:
    """A partial sum between AddN programs: an output read as the next program's first input."""

    __slots__ = ("data_id", "shape", "dtype")

    def __init__(self, output: Output) -> None:
        self.data_id, self.shape, self.dtype = output
