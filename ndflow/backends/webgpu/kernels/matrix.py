"""Matrix products on the GPU: a tiled GEMM program template, and BatchMatMul on top of it.

:func:`gemm` runs one tiled matrix-product program ``out[z, m, n] = sum_k A(z, m, k) * B(z, k, n)``
whose operands are read by WGSL functions the caller writes (``fn mm_a(z, m, k) -> T``,
``fn mm_b(z, k, n) -> T``) and whose results go through the caller's ``fn mm_out(z, m, n, acc: T)``;
``fn mm_setup(z)`` runs once per batch entry (for batch offsets). Matrix products, convolutions
(implicit GEMM: the im2col matrix is never written to memory) and their gradients share it.

The program: a workgroup of 16 x 16 invocations computes a 64 x 64 tile of the output (each
invocation a 4 x 4 block, rows ``ty + 16 i``, columns ``tx + 16 j``, so that stores are coalesced),
stepping through K in slices of 16 staged in workgroup memory. Tiles and batch entries beyond
65535 workgroups per dimension are covered by grid-stride loops. Products with fewer than 32 rows or
columns (matrix-vector products, small layers, tiny fixtures) would leave most of a tile idle: they run one
invocation per output element instead (the same ``mm_*`` functions, a plain loop over K). Accumulation is in
the compute type: f32, or i32 for int32 and bool (wrapping modulo 2**32 like the cpu kernel's int32 numpy
product; bool outputs store ``!= 0``, numpy's or-of-ands).

Not yet: vec4 loads (the core binds every tensor as ``array<T>`` of scalars; a ``vec4<f32>`` view of
4-aligned operands would need a second binding type in ``program.py``), and smaller tile shapes for
medium sizes.
"""

from __future__ import annotations

from collections.abc import Sequence

from ....core import kernel_names as kn
from .common import Output, WebGPUBackend, gpu_kernel, on_gpu_dtypes, size_of, strides_of
from .forward import forward
from .fused import PLAIN, Epilogue

TILE_M = 64
TILE_N = 64
TILE_K = 16
WORKGROUP = (16, 16, 1)

GEMM_MAIN = """
const TM: i32 = 64; const TN: i32 = 64; const TK: i32 = 16;
var<workgroup> mm_as: array<{T}, 1024>;  // [k][m] of the current K slice
var<workgroup> mm_bs: array<{T}, 1024>;  // [k][n]

@compute @workgroup_size(16, 16, 1)
fn main(@builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>,
        @builtin(num_workgroups) nwg: vec3<u32>) {{
  load_params();
  let tx = i32(lid.x);
  let ty = i32(lid.y);
  let li = ty * 16 + tx;
  let tiles_m = (mm_m + TM - 1) / TM;
  let tiles_n = (mm_n + TN - 1) / TN;
  for (var z = i32(wid.z); z < mm_batch; z += i32(nwg.z)) {{
    mm_setup(z);
    for (var tm = i32(wid.y); tm < tiles_m; tm += i32(nwg.y)) {{
      for (var tn = i32(wid.x); tn < tiles_n; tn += i32(nwg.x)) {{
        let row0 = tm * TM;
        let col0 = tn * TN;
        var acc: array<array<{T}, 4>, 4>;
        for (var i = 0; i < 4; i++) {{
          for (var j = 0; j < 4; j++) {{ acc[i][j] = {T}(0); }}  // naga does not re-zero loop-local vars
        }}
        for (var k0 = 0; k0 < mm_k; k0 += TK) {{
          for (var i = 0; i < 4; i++) {{
            let e = li + i * 256;
            {A_COORDS}
            let r = row0 + am;
            let k = k0 + ak;
            var va: {T};
            if (r < mm_m && k < mm_k) {{ va = mm_a(z, r, k); }} else {{ va = {T}(0); }}
            mm_as[ak * TM + am] = va;
            {B_COORDS}
            let c = col0 + bn;
            let kb = k0 + bk;
            var vb: {T};
            if (c < mm_n && kb < mm_k) {{ vb = mm_b(z, kb, c); }} else {{ vb = {T}(0); }}
            mm_bs[bk * TN + bn] = vb;
          }}
          workgroupBarrier();
          for (var kk = 0; kk < TK; kk++) {{
            var ra: array<{T}, 4>;
            var rb: array<{T}, 4>;
            for (var i = 0; i < 4; i++) {{
              ra[i] = mm_as[kk * TM + ty + 16 * i];
              rb[i] = mm_bs[kk * TN + tx + 16 * i];
            }}
            for (var i = 0; i < 4; i++) {{
              for (var j = 0; j < 4; j++) {{
                acc[i][j] = acc[i][j] + ra[i] * rb[j];
              }}
            }}
          }}
          workgroupBarrier();
        }}
        for (var i = 0; i < 4; i++) {{
          let r = row0 + ty + 16 * i;
          if (r >= mm_m) {{ continue; }}
          for (var j = 0; j < 4; j++) {{
            let c = col0 + tx + 16 * j;
            if (c < mm_n) {{ mm_out(z, r, c, acc[i][j]); }}
          }}
        }}
      }}
    }}
  }}
}}
"""

# How the 1024 staged elements of a slice map to invocations: the index that runs fastest in memory
# should vary fastest across invocations (coalesced loads).
_A_K_FAST = "let am = e / TK; let ak = e % TK;"
_A_M_FAST = "let ak = e / TM; let am = e % TM;"
_B_N_FAST = "let bk = e / TN; let bn = e % TN;"
_B_K_FAST = "let bn = e / TK; let bk = e % TK;"


def gemm_main(compute_type: str, a_k_fast: bool = True, b_n_fast: bool = True) -> str:
    """The ``main`` of a tiled GEMM program in compute type ``compute_type`` (``f32``/``i32``)."""
    return GEMM_MAIN.format(
        T=compute_type, A_COORDS=_A_K_FAST if a_k_fast else _A_M_FAST, B_COORDS=_B_N_FAST if b_n_fast else _B_K_FAST
    )


NAIVE_MAIN = """
fn compute(index: i32) {{
  let c = index % mm_n;
  let rest = index / mm_n;
  let r = rest % mm_m;
  let z = rest / mm_m;
  mm_setup(z);
  var acc = {T}(0);
  for (var k = 0; k < mm_k; k++) {{ acc = acc + mm_a(z, r, k) * mm_b(z, k, c); }}
  mm_out(z, r, c, acc);
}}
"""

MIN_TILED = 32  # below this many rows or columns, a tile would be mostly idle: one invocation per output


def use_tiles(m: int, n: int) -> bool:
    """Whether a product of ``m`` x ``n`` outputs (per batch entry) runs tiled, or one invocation per output."""
    return m >= MIN_TILED and n >= MIN_TILED


def gemm(
    backend: WebGPUBackend,
    key: tuple,
    code: str,
    inputs: Sequence[tuple[str, object]],
    outputs: Sequence[tuple[str, tuple[int, ...], str]],
    params: dict,
    sizes: tuple[int, int, int, int],
    compute_type: str = "f32",
    a_k_fast: bool = True,
    b_n_fast: bool = True,
) -> list[Output]:
    """Run a GEMM program of ``sizes`` = (batch, m, n, k). ``code`` defines ``mm_setup``, ``mm_a``, ``mm_b`` and
    ``mm_out`` (``key`` must determine it); the entry point is appended here: tiled (:func:`gemm_main`, with
    the load orders ``a_k_fast``/``b_n_fast``), or one invocation per output when the product has fewer than
    32 rows or columns."""
    batch, m, n, k = sizes
    params = {**params, "mm_batch": batch, "mm_m": m, "mm_n": n, "mm_k": k}
    if not use_tiles(m, n):
        source = code + NAIVE_MAIN.format(T=compute_type)
        return backend.run(("gemm_naive", compute_type, *key), lambda: source, inputs, outputs, params)
    grid = (
        min(-(-n // TILE_N), backend.max_groups),
        min(-(-m // TILE_M), backend.max_groups),
        min(batch, backend.max_groups),
    )
    source = code + gemm_main(compute_type, a_k_fast, b_n_fast)
    full_key = ("gemm", compute_type, a_k_fast, b_n_fast, *key)
    return backend.run(full_key, lambda: source, inputs, outputs, params, workgroup=WORKGROUP, grid=grid)


# ----------------------------------------------------------------------------- batch matmul


def batch_coords_fn(rank: int) -> str:
    """WGSL ``fn batch_offset(z, bstrides) -> i32``: the offset of batch entry ``z`` of the output batch
    shape (parameter ``mm_bshape``) in an operand with broadcast batch strides ``bstrides``."""
    r = max(rank, 1)
    lines = [f"fn batch_offset(z: i32, bstr: array<i32, {r}>) -> i32 {{", "  var rest = z;", "  var off = 0;"]
    for d in range(rank - 1, 0, -1):
        lines.append(f"  off += (rest % mm_bshape[{d}]) * bstr[{d}]; rest = rest / mm_bshape[{d}];")
    if rank:
        lines.append("  off += rest * bstr[0];")
    lines.append("  return off;\n}")
    return "\n".join(lines)


def matmul_shapes(a_shape: tuple[int, ...], b_shape: tuple[int, ...], ta: bool, tb: bool):
    """``(batch shape, m, n, k)`` of a batch matrix product with broadcast batch axes."""
    m = a_shape[-1] if ta else a_shape[-2]
    k = a_shape[-2] if ta else a_shape[-1]
    n = b_shape[-2] if tb else b_shape[-1]
    ba, bb = a_shape[:-2], b_shape[:-2]
    rank = max(len(ba), len(bb))
    ba = (1,) * (rank - len(ba)) + tuple(ba)
    bb = (1,) * (rank - len(bb)) + tuple(bb)
    batch = tuple(x if y == 1 else y for x, y in zip(ba, bb, strict=True))
    return batch, m, n, k


def _batch_strides(shape: tuple[int, ...], rank: int) -> list[int]:
    """Element strides of an operand's batch axes (aligned right to ``rank``; 0 where broadcast)."""
    batch = (1,) * (rank - (len(shape) - 2)) + tuple(shape[:-2])
    mat = shape[-1] * shape[-2]
    strides = [s * mat for s in strides_of(batch)] if batch else []
    return [0 if d == 1 else s for d, s in zip(batch, strides, strict=False)] or [0]


def _out_coords_fn(rank: int) -> str:
    """WGSL ``fn mm_coords(z, r, c)``: the output coordinates of batch entry ``z``, row ``r``, column ``c``."""
    lines = [f"fn mm_coords(z: i32, r: i32, c: i32) -> array<i32, {rank + 2}> {{", f"  var o: array<i32, {rank + 2}>;"]
    lines.append("  var rest = z;")
    for d in range(rank - 1, -1, -1):
        lines.append(f"  o[{d}] = rest % mm_bshape[{d}]; rest = rest / mm_bshape[{d}];")
    lines.append(f"  o[{rank}] = r; o[{rank + 1}] = c;")
    lines.append("  return o;\n}")
    return "\n".join(lines)


def matmul_program(backend: WebGPUBackend, a, b, attrs: dict, ep: Epilogue = PLAIN) -> Output:
    """``a @ b`` (transposes from ``attrs``) as a GEMM program, each result through the epilogue ``ep``."""
    ta, tb = bool(attrs.get("transpose_a")), bool(attrs.get("transpose_b"))
    batch_shape, m, n, k = matmul_shapes(a.shape, b.shape, ta, tb)
    rank = len(batch_shape)
    out_shape = (*batch_shape, m, n)
    t = "f32" if a.dtype == "float32" else "i32"
    a_index = "z_off_a + k * mm_m + r" if ta else "z_off_a + r * mm_k + k"
    b_index = "z_off_b + c * mm_k + k" if tb else "z_off_b + k * mm_n + c"
    if ep is PLAIN:
        store = f"fn mm_out(z: i32, r: i32, c: i32, acc: {t}) {{ store_out((z * mm_m + r) * mm_n + c, acc); }}"
    else:
        store = "\n".join(
            [
                _out_coords_fn(rank),
                ep.code(t, rank + 2),
                f"fn mm_out(z: i32, r: i32, c: i32, acc: {t}) {{"
                " store_out((z * mm_m + r) * mm_n + c, ep_apply(acc, mm_coords(z, r, c))); }",
            ]
        )
    code = "\n".join(
        [
            batch_coords_fn(rank),
            "var<private> z_off_a: i32; var<private> z_off_b: i32;",
            "fn mm_setup(z: i32) { z_off_a = batch_offset(z, a_bstr); z_off_b = batch_offset(z, b_bstr); }",
            f"fn mm_a(z: i32, r: i32, k: i32) -> {t} {{ return load_a({a_index}); }}",
            f"fn mm_b(z: i32, k: i32, c: i32) -> {t} {{ return load_b({b_index}); }}",
            store,
        ]
    )
    params = {
        "mm_bshape": list(batch_shape) or [1],
        "a_bstr": _batch_strides(a.shape, rank),
        "b_bstr": _batch_strides(b.shape, rank),
        **ep.params(rank + 2),
    }
    inputs = [("a", a), ("b", b), *ep.inputs()]
    outputs = [("out", out_shape, ep.out_dtype(a.dtype))]
    key = ("matmul", ta, tb, rank, t, ep is PLAIN, ep.key())
    sizes = (size_of(batch_shape), m, n, k)
    return gemm(backend, key, code, inputs, outputs, params, sizes, t, not ta, not tb)[0]


@gpu_kernel(kn.BatchMatMul)
def batch_mat_mul(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    """``a @ b`` over the last two axes; batch axes broadcast; int32 wraps modulo 2**32; bool is the
    or-of-ands as numpy's. Mixed dtypes (which ``mat_mul`` never passes: it upcasts) run on the cpu kernel."""
    a, b = inputs
    if a.dtype != b.dtype or not on_gpu_dtypes(a, b):
        return forward("BatchMatMul", backend, inputs, attrs)
    return matmul_program(backend, a, b, attrs or {})
