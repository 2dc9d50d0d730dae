"""Ordering and searching on the GPU: TopK, SearchSorted, LowerBound, UpperBound (per-row programs).

TopK ranks every element of a row against the others (the order of the cpu kernel: descending values,
NaN above every number, ties to the lower index), one invocation per element, and the elements ranked
below ``k`` write themselves to their place. ``sorted=False`` keeps the chosen elements in their input
order: a first pass stores the ranks, a second counts the chosen elements before each chosen one. The
cost is n comparisons per element (n = row length), which suits the short rows of top-k over classes.

SearchSorted (and LowerBound/UpperBound) runs the cpu kernel's binary search, one invocation per value.
Mixed int32/float32 operands are compared exactly (as numpy compares them), without rounding the int32.
"""

from __future__ import annotations

import math

from ....core import kernel_names as kn
from .common import Output, Ref, WebGPUBackend, gpu_kernel, on_gpu_dtypes
from .forward import forward
from .reduction import FLOAT_HELPERS

BEFORE = {
    "f32": FLOAT_HELPERS
    + """
fn before(vj: f32, j: i32, vi: f32, i: i32) -> bool {
  let nj = is_nan(vj);
  let ni = is_nan(vi);
  if (nj != ni) { return nj; }
  if (!nj && vj != vi) { return vj > vi; }
  return j < i;
}""",
    "i32": """
fn before(vj: i32, j: i32, vi: i32, i: i32) -> bool {
  if (vj != vi) { return vj > vi; }
  return j < i;
}""",
}

RANK = """
fn rank_of(index: i32) -> i32 {
  let first = (index / n) * n;
  let i = index - first;
  let vi = load_x(index);
  var rank = 0;
  for (var j = 0; j < n; j++) { if (before(load_x(first + j), j, vi, i)) { rank++; } }
  return rank;
}
"""

SORTED = """
fn compute(index: i32) {
  let rank = rank_of(index);
  if (rank < k) {
    let o = (index / n) * k + rank;
    store_values(o, load_x(index));
    store_indices(o, index % n);
  }
}
"""

RANKS = "fn compute(index: i32) { store_ranks(index, rank_of(index)); }"

PLACE = """
fn compute(index: i32) {
  if (load_ranks(index) >= k) { return; }
  let first = (index / n) * n;
  var pos = 0;
  for (var j = first; j < index; j++) { if (load_ranks(j) < k) { pos++; } }
  store_values((index / n) * k + pos, load_x(index));
  store_indices((index / n) * k + pos, index - first);
}
"""


@gpu_kernel(kn.TopK)
def top_k(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    (x,) = inputs
    if not on_gpu_dtypes(x):
        return forward("TopK", backend, inputs, attrs)
    k, keep_sorted = attrs["k"], attrs["sorted"]
    n = x.shape[-1]
    out_shape = tuple(x.shape[:-1]) + (k,)
    total = x.size if math.prod(out_shape) else 0
    t = "f32" if x.dtype == "float32" else "i32"
    outputs = [("values", out_shape, x.dtype), ("indices", out_shape, "int32")]
    params = {"n": n, "k": k}
    if keep_sorted:
        code = BEFORE[t] + RANK + SORTED
        return backend.run(("topk", t, "sorted"), lambda: code, [("x", x)], outputs, params, invocations=total)
    ranks_code = BEFORE[t] + RANK + RANKS
    (ranks,) = backend.run(("topk", t, "ranks"), lambda: ranks_code, [("x", x)], [("ranks", (total,), "int32")], params)
    try:
        ref = Ref(ranks[0], ranks[1], ranks[2])
        return backend.run(
            ("topk", "place"), lambda: PLACE, [("x", x), ("ranks", ref)], outputs, params, invocations=total
        )
    finally:
        backend.dispose_data(ranks[0])


# Exact comparisons of an int32 with a float32 (the float may be NaN: every comparison is then false).
MIXED = (
    FLOAT_HELPERS
    + """
fn lt_if(a: i32, b: f32) -> bool {
  if (is_nan(b)) { return false; }
  let fa = f32(a);
  if (fa != b) { return fa < b; }
  if (b >= 2147483648.0) { return true; }
  return a < i32(b);
}
fn le_if(a: i32, b: f32) -> bool {
  if (is_nan(b)) { return false; }
  let fa = f32(a);
  if (fa != b) { return fa < b; }
  if (b >= 2147483648.0) { return true; }
  return a <= i32(b);
}
fn lt_fi(a: f32, b: i32) -> bool { return !is_nan(a) && !le_if(b, a); }
fn le_fi(a: f32, b: i32) -> bool { return !is_nan(a) && !lt_if(b, a); }
"""
)

SEARCH = """
fn compute(index: i32) {
  let first = (index / m) * n;
  let v = load_vals(index);
  var lo = 0;
  var hi = n;
  while (lo < hi) {
    let mid = (lo + hi) / 2;
    let probe = load_seq(first + min(mid, n - 1));
    var go_right: bool;
    if (right != 0) { go_right = LE(probe, v); } else { go_right = LT(probe, v); }
    if (go_right) { lo = mid + 1; } else { hi = mid; }
  }
  store_out(index, hi);
}
"""


def _compare(seq_t: str, val_t: str) -> tuple[str, str, str]:
    """Helpers and the ``<=``/``<`` expressions of (probe, v) for the operand types."""
    if seq_t == val_t:
        return "", "(probe <= v)", "(probe < v)"
    tag = "if" if seq_t == "i32" else "fi"
    return MIXED, f"le_{tag}(probe, v)", f"lt_{tag}(probe, v)"


def _search(name: str, backend: WebGPUBackend, inputs: tuple, right: bool, attrs: dict | None) -> Output:
    sequence, values = inputs
    if not on_gpu_dtypes(sequence, values):
        return forward(name, backend, inputs, attrs)
    seq_t = "f32" if sequence.dtype == "float32" else "i32"
    val_t = "f32" if values.dtype == "float32" else "i32"
    helpers, le, lt = _compare(seq_t, val_t)
    code = helpers + SEARCH.replace("LE(probe, v)", le).replace("LT(probe, v)", lt)
    params = {"n": sequence.shape[-1], "m": values.shape[-1] if values.shape else 1, "right": int(right)}
    inputs_ = [("seq", sequence), ("vals", values)]
    return backend.run(
        ("search", seq_t, val_t), lambda: code, inputs_, [("out", tuple(values.shape), "int32")], params
    )[0]


@gpu_kernel(kn.SearchSorted)
def search_sorted(backend: WebGPUBackend, inputs: tuple, attrs: dict) -> Output:
    return _search("SearchSorted", backend, inputs, attrs["side"] == "right", attrs)


@gpu_kernel(kn.LowerBound)
def lower_bound(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _search("LowerBound", backend, inputs, False, attrs)


@gpu_kernel(kn.UpperBound)
def upper_bound(backend: WebGPUBackend, inputs: tuple, attrs: dict | None) -> Output:
    return _search("UpperBound", backend, inputs, True, attrs)
