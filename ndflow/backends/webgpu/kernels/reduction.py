"""Reductions on the GPU: Sum, Mean, Max, Min, Prod, All, Any, ArgMax and ArgMin, by one program generator.

An operation is a :class:`Reducer`: an accumulator struct ``Acc`` (its fields), an identity, ``lift`` (one
input value at reduced position ``r`` to an ``Acc``), an associative ``merge`` and ``finish`` (an ``Acc`` to
the output value). Reductions never transpose: the input's dimensions are merged into alternating runs of
kept and reduced dimensions (size-1 dimensions dropped), and a program reads the input at ``base(o) +
offset(r)`` where ``o`` is the output index and ``r`` the flat index among the reduced elements; the
shapes and strides of both runs are parameters.

Two program forms:

- ``loop``: one invocation per output element folds its ``R`` inputs in order (short reductions, and
  reductions over outer dimensions where neighbouring invocations read neighbouring addresses);
- ``tree``: one workgroup of 256 invocations per (output element, chunk of its inputs): each invocation folds
  a strided share, then a tree reduction in workgroup memory combines them. When there are few outputs and
  many inputs, the inputs are split in chunks; the chunks' accumulators go to int32 buffers (floats as their
  bits, so that float16 mode does not round partial results) and a second pass reduces them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from ....core import kernel_names as kn
from ...shared.reduction import check_arg_axis
from .common import Output, Ref, WebGPUBackend, gpu_kernel, on_gpu_dtypes, strides_of
from .forward import forward

TREE_WG = 256  # workgroup size of the tree form for long reductions (64 below TREE_WG_SMALL_MAX elements)
TREE_WG_SMALL_MAX = 4096
LOOP_MAX = 64  # reductions of at most this many elements always use the loop form

NAN = "bitcast<f32>(0x7fc00000u)"
INF = "bitcast<f32>(0x7f800000u)"
NEG_INF = "bitcast<f32>(0xff800000u)"
I32_MIN = "i32(-2147483647 - 1)"
I32_MAX = "2147483647i"

FLOAT_HELPERS = """
fn is_nan(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u; }
fn is_inf(x: f32) -> bool { return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u; }
"""


@dataclass(frozen=True)
class Reducer:
    """One reduction operation in WGSL (see the module docstring).

    ``fields``: the accumulator's (name, type) pairs; ``identity``: a WGSL ``Acc`` expression; ``lift``,
    ``merge``, ``finish``: function bodies over ``x: IN`` and ``r: i32``, over ``a, b: Acc``, and over
    ``a: Acc`` returning ``out_type``; ``empty``: the output value of a reduction over no elements.
    """

    name: str
    fields: tuple[tuple[str, str], ...]
    identity: str
    lift: str
    merge: str
    finish: str
    out_type: str
    empty: str
    helpers: str = ""
    final_params: dict = field(default_factory=dict)

    def code(self, in_type: str) -> str:
        members = ", ".join(f"{n}: {t}" for n, t in self.fields)
        return "\n".join(
            [
                FLOAT_HELPERS,
                self.helpers,
                f"struct Acc {{ {members} }}",
                f"fn r_identity() -> Acc {{ return {self.identity}; }}",
                f"fn r_lift(x: {in_type}, r: i32) -> Acc {{ {self.lift} }}",
                f"fn r_merge(a: Acc, b: Acc) -> Acc {{ {self.merge} }}",
                f"fn r_finish(a: Acc) -> {self.out_type} {{ {self.finish} }}",
            ]
        )


@dataclass(frozen=True)
class Geometry:
    """Where a reduction reads: kept run (``kshape``/``kstr``) and reduced run (``rshape``/``rstr``)."""

    kshape: tuple[int, ...]
    kstr: tuple[int, ...]
    rshape: tuple[int, ...]
    rstr: tuple[int, ...]

    @property
    def outputs(self) -> int:
        return math.prod(self.kshape)

    @property
    def reduced(self) -> int:
        return math.prod(self.rshape)

    def params(self) -> dict:
        return {
            "kshape": list(self.kshape) or [1],
            "kstr": list(self.kstr) or [0],
            "rshape": list(self.rshape) or [1],
            "rstr": list(self.rstr) or [0],
            "rsize": self.reduced,
        }


def geometry(shape: Sequence[int], axes: Sequence[int]) -> Geometry:
    """The kept and reduced runs of ``shape`` reduced over ``axes`` (sizes > 0)."""
    runs: list[list] = []
    for d, n in enumerate(shape):
        if n == 1:
            continue
        reduced = d in axes
        if runs and runs[-1][1] == reduced:
            runs[-1][0] *= n
        else:
            runs.append([n, reduced])
    sizes = [n for n, _ in runs]
    strides = strides_of(sizes)
    kept = [(n, s) for (n, red), s in zip(runs, strides, strict=False) if not red]
    red = [(n, s) for (n, r), s in zip(runs, strides, strict=False) if r]
    return Geometry(
        tuple(n for n, _ in kept), tuple(s for _, s in kept), tuple(n for n, _ in red), tuple(s for _, s in red)
    )


def _offset_fn(name: str, shape_param: str, stride_param: str, rank: int) -> str:
    """``fn <name>(i: i32) -> i32``: the input offset of flat index ``i`` of a run of dimensions."""
    if rank == 0:
        return f"fn {name}(i: i32) -> i32 {{ return 0; }}"
    if rank == 1:
        return f"fn {name}(i: i32) -> i32 {{ return i * {stride_param}[0]; }}"
    lines = [f"fn {name}(i: i32) -> i32 {{", "  var rest = i;", "  var off = 0;"]
    for d in range(rank - 1, 0, -1):
        lines.append(f"  off += (rest % {shape_param}[{d}]) * {stride_param}[{d}]; rest = rest / {shape_param}[{d}];")
    lines.append(f"  off += rest * {stride_param}[0];")
    lines.append("  return off;\n}")
    return "\n".join(lines)


def _use_loop(g: Geometry) -> bool:
    """Loop form for short reductions, or for reductions over outer dimensions with many outputs."""
    if g.reduced <= LOOP_MAX:
        return True
    inner_kept = bool(g.kstr) and g.kstr[-1] == 1
    return inner_kept and g.outputs >= 2048


def _chunks(g: Geometry) -> int:
    """How many workgroups share one output's inputs in the tree form (1: a single pass)."""
    if g.outputs >= 512:
        return 1
    return max(1, min(-(-g.reduced // 4096), -(-2048 // g.outputs)))


class _Source:
    """What a pass reads: the input tensor (lifted) or the previous pass's partial accumulators."""

    def __init__(self, inputs: list[tuple[str, object]], get: str, tag: str):
        self.inputs = inputs
        self.get = get
        self.tag = tag


def _tensor_source(x: object) -> _Source:
    return _Source([("x", x)], "fn r_get(i: i32, r: i32) -> Acc { return r_lift(load_x(i), r); }", "x")


def _partial_source(red: Reducer, refs: list[Ref]) -> _Source:
    items = []
    for k, (_, wtype) in enumerate(red.fields):
        items.append(f"bitcast<f32>(load_p{k}(i))" if wtype == "f32" else f"load_p{k}(i)")
    get = f"fn r_get(i: i32, r: i32) -> Acc {{ return Acc({', '.join(items)}); }}"
    return _Source([(f"p{k}", ref) for k, ref in enumerate(refs)], get, "partial")


def _writer(red: Reducer, final: bool) -> str:
    if final:
        return "fn r_put(o: i32, a: Acc) { store_out(o, r_finish(a)); }"
    stores = []
    for k, (name, wtype) in enumerate(red.fields):
        value = f"bitcast<i32>(a.{name})" if wtype == "f32" else f"a.{name}"
        stores.append(f"store_q{k}(o, {value});")
    return f"fn r_put(o: i32, a: Acc) {{ {' '.join(stores)} }}"


LOOP_BODY = """
fn compute(index: i32) {
  let base = base_of(index);
  var acc = r_identity();
  for (var r = 0; r < rsize; r++) { acc = r_merge(acc, r_get(base + offset_of(r), r)); }
  r_put(index, acc);
}
"""

TREE_MAIN = """
var<workgroup> shared_acc: array<Acc, WG_X>;
@compute @workgroup_size(WG_X, 1, 1)
fn main(@builtin(local_invocation_id) lid3: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {
  load_params();
  let lid = i32(lid3.x);
  let g = i32(wid.x) + i32(wid.y) * i32(nwg.x);
  var acc = r_identity();
  if (g < groups) {
    let o = g / chunks;
    let start = (g % chunks) * per_chunk;
    let stop = min(start + per_chunk, rsize);
    let base = base_of(o);
    for (var r = start + lid; r < stop; r += WG_X) { acc = r_merge(acc, r_get(base + offset_of(r), r)); }
  }
  shared_acc[lid] = acc;
  workgroupBarrier();
  for (var s = WG_X / 2; s > 0; s = s / 2) {
    if (lid < s) { shared_acc[lid] = r_merge(shared_acc[lid], shared_acc[lid + s]); }
    workgroupBarrier();
  }
  if (lid == 0 && g < groups) { r_put(g, shared_acc[0]); }
}
"""


def tree_workgroup(n: int) -> int:
    """The tree form's workgroup size for ``n`` elements per workgroup."""
    return 64 if n <= TREE_WG_SMALL_MAX else TREE_WG


def _grid(groups: int, backend: WebGPUBackend) -> tuple[int, int, int]:
    return backend.fold(groups)


def _pass(
    backend: WebGPUBackend,
    red: Reducer,
    in_type: str,
    source: _Source,
    g: Geometry,
    out: tuple[tuple[int, ...], str] | None,
) -> list[Output]:
    """One program run: the final output (``out``: shape and dtype) or, with ``out`` None, partials."""
    loop = _use_loop(g)
    chunks = 1 if loop else _chunks(g)
    final = out is not None and chunks == 1
    if final:
        outputs = [("out", out[0], out[1])]
    else:
        outputs = [(f"q{k}", (g.outputs * chunks,), "int32") for k in range(len(red.fields))]
    params = g.params()
    params.update(red.final_params)
    if not loop:
        per_chunk = -(-g.reduced // chunks)
        params.update(groups=g.outputs * chunks, chunks=chunks, per_chunk=per_chunk)
    key = ("reduce", red.name, in_type, source.tag, "loop" if loop else "tree", final, len(g.kshape), len(g.rshape))

    def code() -> str:
        parts = [
            red.code(in_type),
            source.get,
            _writer(red, final),
            _offset_fn("base_of", "kshape", "kstr", len(g.kshape)),
            _offset_fn("offset_of", "rshape", "rstr", len(g.rshape)),
            LOOP_BODY if loop else TREE_MAIN,
        ]
        return "\n".join(parts)

    if loop:
        results = backend.run(key, code, source.inputs, outputs, params)
    else:
        grid = _grid(g.outputs * chunks, backend)
        workgroup = (tree_workgroup(per_chunk), 1, 1)
        results = backend.run(key, code, source.inputs, outputs, params, workgroup=workgroup, grid=grid)
    if final:
        return results
    refs = [Ref(data_id, shape, dtype) for data_id, shape, dtype in results]
    try:
        g2 = Geometry((g.outputs,), (chunks,), (chunks,), (1,)) if g.outputs > 1 else Geometry((), (), (chunks,), (1,))
        return _pass(backend, red, in_type, _partial_source(red, refs), g2, out)
    finally:
        for ref in refs:
            backend.dispose_data(ref.data_id)


def reduce(
    backend: WebGPUBackend,
    red: Reducer,
    x: object,
    axes: Sequence[int],
    out_shape: tuple[int, ...],
    out_dtype: str,
) -> Output:
    """Reduce ``x`` over ``axes`` with ``red`` into a tensor of ``out_shape`` and ``out_dtype``."""
    in_type = "f32" if x.dtype == "float32" else "i32"
    shape = tuple(x.shape)
    kept = math.prod(n for d, n in enumerate(shape) if d not in axes)
    count = math.prod(shape[d] for d in axes)
    if kept == 0 or count == 0:
        return fill(backend, red, out_shape, out_dtype)
    g = geometry(shape, axes)
    return _pass(backend, red, in_type, _tensor_source(x), g, (out_shape, out_dtype))[0]


def fill(backend: WebGPUBackend, red: Reducer, out_shape: tuple[int, ...], out_dtype: str) -> Output:
    """The output of a reduction over no elements (or an empty output)."""
    key = ("reduce_fill", red.name, red.empty)

    def code() -> str:
        return f"{FLOAT_HELPERS}\nfn compute(index: i32) {{ store_out(index, {red.empty}); }}"

    return backend.run(key, code, [], [("out", out_shape, out_dtype)])[0]


# -- the operations ----------------------------------------------------------------------------------------


def _simple(name: str, t: str, identity: str, merge: str, empty: str, out_type: str | None = None) -> Reducer:
    """A reducer whose accumulator is one value ``v`` of type ``t``."""
    return Reducer(
        name=name,
        fields=(("v", t),),
        identity=f"Acc({identity})",
        lift=f"return Acc({t}(x));",
        merge=merge,
        finish="return a.v;",
        out_type=out_type or t,
        empty=empty,
    )


_MAX_F = "if (is_nan(a.v)) { return a; } if (is_nan(b.v)) { return b; } if (a.v >= b.v) { return a; } return b;"
_MIN_F = "if (is_nan(a.v)) { return a; } if (is_nan(b.v)) { return b; } if (a.v <= b.v) { return a; } return b;"

# Dekker's exact product error needs no fma (WGSL's fma may round twice, as it does on lavapipe).
SPLIT = "fn split(a: f32) -> vec2<f32> { let t = 4097.0 * a; let hi = t - (t - a); return vec2<f32>(hi, a - hi); }"

# Float32 products as the cpu kernel computes them (in doubles, rounded once): the accumulator is a
# float-float mantissa (h + l, |h| in [0.5, 1)), a separate exponent e, and flags for NaN (1), infinity
# (2) and zero (4) factors (h then carries the sign).
_PROD_F = Reducer(
    name="prod_f32",
    fields=(("h", "f32"), ("l", "f32"), ("e", "i32"), ("f", "i32")),
    identity="Acc(1.0, 0.0, 0, 0)",
    lift="""
  if (is_nan(x)) { return Acc(1.0, 0.0, 0, 1); }
  let s = select(1.0, -1.0, (bitcast<u32>(x) & 0x80000000u) != 0u);
  if (is_inf(x)) { return Acc(s, 0.0, 0, 2); }
  if (x == 0.0) { return Acc(s, 0.0, 0, 4); }
  let m = frexp(x);
  return Acc(m.fract, 0.0, m.exp, 0);""",
    merge="""
  let p = a.h * b.h;
  let x = split(a.h);
  let y = split(b.h);
  let err = (((x.x * y.x - p) + x.x * y.y + x.y * y.x) + x.y * y.y) + (a.h * b.l + a.l * b.h);
  let m = frexp(p);
  return Acc(m.fract, ldexp(err, -m.exp), a.e + b.e + m.exp, a.f | b.f);""",
    finish=f"""
  if ((a.f & 1) != 0 || (a.f & 6) == 6) {{ return {NAN}; }}
  if ((a.f & 2) != 0) {{ return a.h * {INF}; }}
  if ((a.f & 4) != 0 || a.e < -160) {{ return a.h * 0.0; }}
  if (a.e > 160) {{ return a.h * {INF}; }}
  let half = a.e / 2;
  return ldexp(ldexp(a.h + a.l, half), a.e - half);""",
    out_type="f32",
    empty="1.0",
    helpers=SPLIT,
)


def _arg_reducer(name: str, t: str, better: str, worst: str) -> Reducer:
    """ArgMax/ArgMin: the best value and its index, ties to the lower index. As the cpu kernel (and TF.js),
    NaN never wins, except a NaN at index 0, which nothing beats (it is lifted to the unbeatable value)."""
    if t == "f32":
        best = INF if better == ">" else NEG_INF
        lift = f"if (is_nan(x)) {{ return Acc(select({worst}, {best}, r == 0), r); }} return Acc(x, r);"
    else:
        lift = "return Acc(x, r);"
    return Reducer(
        name=name,
        fields=(("v", t), ("i", "i32")),
        identity=f"Acc({worst}, {I32_MAX})",
        lift=lift,
        merge=f"if (b.v {better} a.v || (b.v == a.v && b.i < a.i)) {{ return b; }} return a;",
        finish="return a.i;",
        out_type="i32",
        empty="0",
    )


def _reducer(kernel: str, in_dtype: str, count: int = 0) -> Reducer:
    t = "f32" if in_dtype == "float32" else "i32"
    if kernel == "Sum":
        return _simple(f"sum_{t}", t, f"{t}(0)", "return Acc(a.v + b.v);", f"{t}(0)")
    if kernel == "Mean":
        red = _simple("mean", "f32", "0.0", "return Acc(a.v + b.v);", NAN)
        return replace(red, finish="return a.v / count_f;", final_params={"count_f": float(count)})
    if kernel in ("Max", "Min"):
        if t == "f32":
            return _simple(kernel.lower(), t, NEG_INF if kernel == "Max" else INF,
                           _MAX_F if kernel == "Max" else _MIN_F, NAN)  # fmt: skip
        merge = "return Acc(max(a.v, b.v));" if kernel == "Max" else "return Acc(min(a.v, b.v));"
        return _simple(f"{kernel.lower()}_i32", t, I32_MIN if kernel == "Max" else I32_MAX, merge, "0")
    if kernel == "Prod":
        return _PROD_F if t == "f32" else _simple("prod_i32", t, "1", "return Acc(a.v * b.v);", "1")
    if kernel == "All":
        return _simple("all", "i32", "1", "return Acc(a.v & b.v);", "1")
    if kernel == "Any":
        return _simple("any", "i32", "0", "return Acc(a.v | b.v);", "0")
    if kernel == "ArgMax":
        return _arg_reducer(f"argmax_{t}", t, ">", NEG_INF if t == "f32" else I32_MIN)
    return _arg_reducer(f"argmin_{t}", t, "<", INF if t == "f32" else I32_MAX)


_OUT_DTYPE = {"Mean": "float32", "All": "bool", "Any": "bool", "ArgMax": "int32", "ArgMin": "int32"}


def _axes_kernel(kernel: str) -> None:
    @gpu_kernel(kernel)
    def run(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
        (x,) = inputs
        if not on_gpu_dtypes(x):
            return forward(kernel, backend, inputs, attrs)
        axes = tuple(sorted({a % max(x.rank, 1) for a in attrs["axis"]})) if x.rank else ()
        keep = attrs["keep_dims"]
        shape = tuple(x.shape)
        out_shape = tuple(1 if d in axes else n for d, n in enumerate(shape)) if keep else tuple(
            n for d, n in enumerate(shape) if d not in axes
        )  # fmt: skip
        dtype = _OUT_DTYPE.get(kernel) or ("int32" if x.dtype == "bool" and kernel in ("Sum", "Prod") else x.dtype)
        count = math.prod(shape[d] for d in axes)
        return reduce(backend, _reducer(kernel, x.dtype, count), x, axes, out_shape, dtype)

    run.__name__ = f"webgpu_{kernel.lower()}"


for _kernel in ("Sum", "Mean", "Max", "Min", "Prod", "All", "Any"):
    _axes_kernel(_kernel)


def _arg_kernel(kernel: str, op: str) -> None:
    @gpu_kernel(kernel)
    def run(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
        (x,) = inputs
        if not on_gpu_dtypes(x):
            return forward(kernel, backend, inputs, attrs)
        axis = attrs["axis"]
        check_arg_axis(op, x.shape, axis)
        out_shape = tuple(n for d, n in enumerate(x.shape) if d != axis)
        return reduce(backend, _reducer(kernel, x.dtype), x, (axis,), out_shape, "int32")

    run.__name__ = f"webgpu_{kernel.lower()}"


_arg_kernel(kn.ArgMax, "arg_max")
_arg_kernel(kn.ArgMin, "arg_min")
