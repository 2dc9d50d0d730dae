"""The int32 check that ``test_webgpu_adapters.py`` runs once per wgpu backend type, each in its own process.

wgpu chooses the adapter once per process (``WGPU_BACKEND_TYPE=Vulkan|OpenGL|Metal|D3D12`` forces the backend),
so every adapter the machine has needs a fresh interpreter: ``python webgpu_adapter_check.py <BackendType>``
opens the webgpu backend on that backend type and compares, on it, against the cpu backend:

- Mod and FloorDiv over every pair of int32 special values (negative operands, zero divisors, -2**31 / -1)
  with Python's ``%`` / ``//`` (TF.js's floorMod / floorDiv on ints: the result takes the divisor's sign, the
  quotient floors; 0 where the divisor is 0, as TF.js's cpu kernels store NaN/Infinity in an Int32Array;
  results wrap modulo 2**32);
- a sweep of the int32 kernels (arithmetic, comparisons, bit ops, casts, clamps, scans, reductions,
  gather/scatter indexing, one_hot, range, pooling, ...) on negative values and int32 extremes;
- every oracle fixture case (``tests/fixtures/*.json``) with an int32 input or output.

It prints one JSON line: the adapter, the number of checks, and the problems found (empty when all match).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "ops"))

import ndflow as nf  # noqa: E402

FAMILIES = ["core_ops", "elementwise", "reduction", "selection", "transform", "conv", "pool_norm", "image",
            "linalg", "losses_sparse_string", "ragged_rnn"]  # fmt: skip
I32_SPECIAL = [0, 1, -1, 2, -2, 3, 5, -7, 30, -30, 100, 1000, 2**24 + 1, 2**31 - 1, -(2**31), 46341, -46341, 255, 256]


def wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def py_floordiv(a: int, b: int) -> int:
    return 0 if b == 0 else wrap32(a // b)


def py_mod(a: int, b: int) -> int:
    return 0 if b == 0 else wrap32(a % b)


def _arrays(result: object) -> list[tuple[str, np.ndarray]]:
    outs = result if isinstance(result, (list, tuple)) else [result]
    found = []
    for t in outs:
        if isinstance(t, (list, tuple)):
            found += _arrays(t)
        elif hasattr(t, "data_sync"):
            found.append((t.dtype, np.asarray(t.numpy())))
    return found


def _on(backend: str, fn: Callable[[], object]) -> list[tuple[str, np.ndarray]] | BaseException:
    """``fn``'s outputs (dtype, values) on ``backend``, or the error it raised; leaves no tensor behind."""
    nf.set_backend(backend)
    try:
        return nf.tidy(lambda: _arrays(fn()))
    except Exception as exc:  # noqa: BLE001 - compared with the other backend's outcome
        return exc


def _differs(want: list | BaseException, got: list | BaseException) -> str | None:
    if isinstance(want, BaseException) or isinstance(got, BaseException):
        if isinstance(want, BaseException) and isinstance(got, BaseException):
            return None if type(want) is type(got) else f"cpu raised {want!r}, webgpu {got!r}"
        return f"cpu gave {'an error: ' + repr(want) if isinstance(want, BaseException) else 'values'}, " \
               f"webgpu {'an error: ' + repr(got) if isinstance(got, BaseException) else 'values'}"  # fmt: skip
    if len(want) != len(got):
        return f"{len(want)} outputs on cpu, {len(got)} on webgpu"
    for k, ((wd, w), (gd, g)) in enumerate(zip(want, got, strict=True)):
        if wd != gd or w.shape != g.shape:
            return f"output {k}: cpu {wd}{w.shape}, webgpu {gd}{g.shape}"
        if wd == "float32":
            w64, g64 = w.astype(np.float64), g.astype(np.float64)
            same_nan = np.array_equal(np.isnan(w64), np.isnan(g64))
            fin = np.isfinite(w64)
            inf = ~fin & ~np.isnan(w64)
            close = np.allclose(g64[fin], w64[fin], atol=1e-3, rtol=1e-5) and np.array_equal(g64[inf], w64[inf])
            if not (same_nan and close):
                return f"output {k}: float values differ: cpu {w.ravel()[:8].tolist()}, webgpu {g.ravel()[:8].tolist()}"
        elif wd in ("int32", "bool") and not np.array_equal(w, g):
            bad = np.flatnonzero(w.ravel() != g.ravel())[:6]
            return (f"output {k}: {wd} values differ at {bad.tolist()}: cpu {w.ravel()[bad].tolist()}, "
                    f"webgpu {g.ravel()[bad].tolist()}")  # fmt: skip
    return None


def compare(name: str, fn: Callable[[], object], problems: list[str]) -> None:
    reason = _differs(_on("cpu", fn), _on("webgpu", fn))
    if reason:
        problems.append(f"{name}: {reason}")


def check_mod_floordiv(problems: list[str]) -> int:
    """Every pair of special values against Python's ``%`` and ``//`` and against the cpu backend."""
    a = np.repeat(np.array(I32_SPECIAL, np.int32), len(I32_SPECIAL))
    b = np.tile(np.array(I32_SPECIAL, np.int32), len(I32_SPECIAL))
    want = {"mod": [py_mod(int(x), int(y)) for x, y in zip(a, b, strict=True)],
            "floor_div": [py_floordiv(int(x), int(y)) for x, y in zip(a, b, strict=True)]}  # fmt: skip
    nf.set_backend("webgpu")
    for name in ("mod", "floor_div"):
        got = nf.tidy(lambda name=name: getattr(nf, name)(nf.tensor(a), nf.tensor(b)).numpy())
        bad = np.flatnonzero(got.astype(np.int64) != np.array(want[name], np.int64))
        if bad.size:
            pairs = [(int(a[i]), int(b[i]), int(got[i]), want[name][i]) for i in bad[:6]]
            problems.append(f"{name}: {bad.size} of {a.size} pairs differ from Python's (a, b, got, want): {pairs}")
        compare(f"{name}(int32 special values)", lambda name=name: getattr(nf, name)(nf.tensor(a), nf.tensor(b)),
                problems)  # fmt: skip
    return 4


def _sweep() -> dict[str, Callable[[], object]]:
    """The int32 kernels on negative values and extremes (each builds its inputs: run once per backend)."""
    rng = np.random.default_rng(7)
    special = np.array(I32_SPECIAL, np.int32)
    m = rng.integers(-60, 60, (4, 6)).astype(np.int32)
    small = rng.integers(-3, 4, (3, 5)).astype(np.int32)
    s, t, sm = (lambda: nf.tensor(special)), (lambda: nf.tensor(m)), (lambda: nf.tensor(small))
    i32 = "int32"
    long_rows = rng.integers(-1000, 1000, (3, 5000)).astype(np.int32)
    picks = rng.integers(0, 5000, 300).astype(np.int32)
    big, huge = (lambda: nf.tensor(long_rows)), (lambda: nf.tensor(np.full((300,), 2**30 + 7, np.int32)))
    a, b = np.repeat(special, special.size), np.tile(special, special.size)
    pair = (lambda: nf.tensor(a)), (lambda: nf.tensor(b))
    ops: dict[str, Callable[[], object]] = {}
    for name in ("abs", "neg", "sign", "square", "relu", "relu6", "zeros_like", "ones_like"):
        ops[name] = lambda name=name: getattr(nf, name)(s())
    for name in ("add", "sub", "mul", "div", "floor_div", "mod", "minimum", "maximum", "squared_difference", "equal",
                 "not_equal", "less", "less_equal", "greater", "greater_equal", "bitwise_and"):  # fmt: skip
        ops[name] = lambda name=name: getattr(nf, name)(pair[0](), pair[1]())
    ops.update({
        "mod broadcast scalar -7": lambda: nf.mod(t(), nf.scalar(-7, i32)),
        "floor_div broadcast row": lambda: nf.floor_div(t(), nf.tensor([3, -4, 5, -6, 7, -1], dtype=i32)),
        "mod broadcast column": lambda: nf.mod(nf.tensor([[-5], [5], [-13], [0]], dtype=i32), t()),
        "pow small": lambda: nf.pow(sm(), nf.abs(nf.tensor(small.T[:1].repeat(5, 0)[:3], dtype=i32))),
        "cast float32": lambda: nf.cast(s(), "float32"),
        "cast bool": lambda: nf.cast(s(), "bool"),
        "cast from float": lambda: nf.cast(nf.tensor([-2.7, -0.5, 0.5, 2.7, 3e9, -3e9, -1e20]), i32),
        "clip_by_value": lambda: nf.clip_by_value(s(), -5, 7),
        "step": lambda: nf.step(s(), 0.5),
        "leaky_relu": lambda: nf.leaky_relu(t(), 0.2),
        "prelu": lambda: nf.prelu(t(), nf.tensor([2] * 6, dtype=i32)),
        "cumsum": lambda: nf.cumsum(t(), 1),
        "cumsum exclusive reverse": lambda: nf.cumsum(t(), 0, True, True),
        "cumprod": lambda: nf.cumprod(sm(), 1),
        "sum": lambda: [nf.sum(t()), nf.sum(t(), 0), nf.sum(t(), 1), nf.sum(s())],
        "prod": lambda: [nf.prod(sm(), 1), nf.prod(sm())],
        "max min": lambda: [nf.max(t(), 1), nf.min(t(), 0), nf.max(s()), nf.min(s())],
        "arg_max arg_min": lambda: [nf.arg_max(t(), 1), nf.arg_min(t(), 0), nf.arg_max(s()), nf.arg_min(s())],
        "mean": lambda: [nf.mean(t(), 1), nf.mean(t())],
        "all any": lambda: [nf.all(nf.cast(sm(), "bool"), 1), nf.any(nf.cast(sm(), "bool"), 0)],
        "gather": lambda: [nf.gather(t(), nf.tensor([3, 0, 2, 0], dtype=i32)),
                           nf.gather(t(), nf.tensor([5, 1], dtype=i32), 1)],
        "gather_nd": lambda: nf.gather_nd(t(), nf.tensor([[3, 5], [0, 0], [2, 1]], dtype=i32)),
        "scatter_nd": lambda: nf.scatter_nd(nf.tensor([[1], [3], [1]], dtype=i32),
                                            nf.tensor([[-5, 6], [7, -8], [-9, 10]], dtype=i32), [4, 2]),
        "tensor_scatter_update": lambda: nf.tensor_scatter_update(t(), nf.tensor([[2], [0]], dtype=i32),
                                                                  nf.tensor(-m[:2], dtype=i32)),
        "one_hot": lambda: [nf.one_hot(nf.tensor([0, 2, -1, 5, 3], dtype=i32), 4),
                            nf.one_hot(nf.tensor([1, -2], dtype=i32), 3, -7, 9, i32)],
        "range": lambda: [nf.range(-7, 20, 3, i32), nf.range(10, -10, -3, i32), nf.range(-(2**31), 8 - 2**31, 3, i32),
                          nf.range(0, 100, 0.7, i32)],
        "fill": lambda: nf.fill([2, 3], -(2**31), i32),
        "topk": lambda: list(nf.topk(t(), 3)),
        "unsorted_segment_sum": lambda: nf.unsorted_segment_sum(t(), nf.tensor([2, 0, 2, 1], dtype=i32), 3),
        "tile reverse transpose": lambda: [nf.tile(sm(), [2, 1]), nf.reverse(t(), 1), nf.transpose(t())],
        "pad mirror_pad": lambda: [nf.pad(t(), [[1, 0], [0, 2]], -3), nf.mirror_pad(t(), [[1, 1], [2, 0]], "reflect")],
        "concat stack split": lambda: [nf.concat([t(), -t()], 1), nf.stack([sm(), sm()], 0), *nf.split(t(), 3, 1)],
        "slice strided_slice": lambda: [nf.slice(t(), [1, 2], [2, 3]), nf.strided_slice(t(), [3, 5], [0, 0], [-1, -2])],
        "where": lambda: nf.where(nf.greater(t(), nf.scalar(0, i32)), t(), nf.neg(t())),
        "broadcast_to add_n": lambda: [nf.broadcast_to(nf.tensor([[-3], [4]], dtype=i32), [2, 5]),
                                       nf.add_n([t(), t(), nf.neg(t())])],
        "search_sorted": lambda: nf.search_sorted(nf.tensor([[-9, -3, 0, 4, 4, 8]], dtype=i32),
                                                  nf.tensor([[-10, -3, 4, 5, 100]], dtype=i32)),
        "mat_mul": lambda: nf.mat_mul(sm(), nf.transpose(sm())),
        "max_pool avg_pool": lambda: [nf.max_pool(nf.reshape(t(), [1, 4, 6, 1]), 2, 1, "same"),
                                      nf.avg_pool(nf.reshape(t(), [1, 4, 6, 1]), 2, 1, "valid")],
        "bincount": lambda: nf.dense_bincount(nf.tensor([0, 3, 3, 1, 7], dtype=i32), 5, nf.tensor([], dtype=i32)),
        "long reductions and scans": lambda: [nf.sum(big(), 1), nf.max(big(), 1), nf.min(big()), nf.arg_max(big(), 1),
                                              nf.arg_min(big(), 1), nf.cumsum(big(), 1), nf.prod(nf.sign(big()), 1)],
        "wrapping sums": lambda: [nf.sum(huge()), nf.sum(huge(), 0), nf.cumsum(huge(), 0), nf.add_n([huge()] * 3)],
        "segment and gather on long rows": lambda: [
            nf.unsorted_segment_sum(big(), nf.tensor([1, 0, 1], dtype=i32), 2),
            nf.gather(big(), nf.tensor(picks), 1)],
    })  # fmt: skip
    return ops


def check_sweep(problems: list[str]) -> int:
    ops = _sweep()
    for name, fn in ops.items():
        compare(name, fn, problems)
    return len(ops)


def _has_int32(x: object) -> bool:
    return '"int32"' in json.dumps(x)


def check_fixtures(problems: list[str]) -> int:
    """Every fixture case with an int32 tensor in its arguments or outputs, webgpu against cpu."""
    from oracle_cases import _build, load_cases, resolve_op

    count = 0
    for family in FAMILIES:
        for case in load_cases(family):
            if not (_has_int32(case.get("args")) or _has_int32(case.get("outputs"))):
                continue
            try:
                _, op = resolve_op(case)
            except AssertionError:
                continue  # an op this build does not have: the op tests report it

            def run(case: dict = case, op: Callable = op) -> object:
                result = op(*_build(case["args"], []))
                return asyncio.run(result) if asyncio.iscoroutine(result) else result

            compare(f"{family}:{case['id']}", run, problems)
            count += 1
    return count


def main(backend_type: str) -> int:
    start = time.perf_counter()
    os.environ.pop("NDFLOW_WEBGPU_ADAPTER", None)  # the adapter comes from WGPU_BACKEND_TYPE alone
    os.environ["WGPU_BACKEND_TYPE"] = backend_type
    if not nf.set_backend("webgpu"):
        print(json.dumps({"error": f"the webgpu backend does not open with WGPU_BACKEND_TYPE={backend_type}"}))
        return 0
    gpu = nf.backend().gpu
    opened = gpu.adapter.info.get("backend_type", "")
    report: dict[str, object] = {"adapter": gpu.name, "backend_type": opened}
    if opened.lower() != backend_type.lower():
        report["error"] = f"asked for {backend_type}, wgpu opened {opened}"
        print(json.dumps(report))
        return 0
    problems: list[str] = []
    checks = check_mod_floordiv(problems) + check_sweep(problems) + check_fixtures(problems)
    nf.set_backend("cpu")
    report.update(checks=checks, problems=problems, seconds=round(time.perf_counter() - start, 2),
                  leaked=nf.memory().num_tensors)  # fmt: skip
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "Vulkan"))
