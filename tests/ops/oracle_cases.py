"""Checking ndflow against TF.js-oracle fixtures (``tests/fixtures/<family>.json``).

``load_cases("core_ops", beyond)`` reads a fixture, leaving out the case ids in ``beyond`` (places
where ndflow deliberately differs from TF.js, tested on their own); ``run_case(case)`` builds the
arguments, calls the ndflow op and compares each output within TF.js's tolerances (or expects an
error that names the op), disposing every tensor it made.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"


def tolerance() -> tuple[float, float]:
    """(atol, rtol) for float outputs: TF.js's 1e-3 for float32 backends, 1e-1 (and 1e-2 relative: f16 has
    11 significant bits) when the active backend stores floats in 16 bits, as TF.js's testEpsilon."""
    return (1e-1, 1e-2) if nf.backend().float_precision() == 16 else (ATOL, RTOL)


def load_cases(name: str, beyond: dict[str, str] | None = None) -> list[dict]:
    cases = json.loads((FIXTURES / f"{name}.json").read_text())["cases"]
    return [c for c in cases if c["id"] not in (beyond or {})]


def case_ids(cases: list[dict]) -> list[str]:
    return [c["id"] for c in cases]


def resolve_op(case: dict):
    """The ndflow function for a case: ``<snake op>`` from the id, under the TF.js namespace
    (``image.resizeBilinear`` -> ``nf.image.resize_bilinear``)."""
    op_name = case["id"].split("__")[0]
    owner = nf
    for part in case["op"].split(".")[:-1]:
        owner = getattr(owner, part, None)
        assert owner is not None, f"nf.{case['op'].rsplit('.', 1)[0]} namespace is missing"
    op = getattr(owner, op_name, None)
    assert callable(op), f"nf.{op_name} is missing (TF.js tf.{case['op']})"
    return op_name, op


ATOL = 1e-3  # TF.js float32 test tolerance
RTOL = 1e-5
NONFINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
OP_ERRORS = (ValueError, TypeError, IndexError)


def _num(v):
    return NONFINITE[v] if isinstance(v, str) else v


def _make_tensor(spec: dict, created: list):
    shape, dtype, values = spec["shape"], spec["dtype"], spec["values"]
    if dtype == "complex64":
        re = [float(_num(v)) for v in values[0::2]]
        im = [float(_num(v)) for v in values[1::2]]
        if hasattr(nf, "complex"):  # as TF.js builds complex tensors: tf.complex(real, imag)
            real = nf.tensor(re, shape, "float32")
            imag = nf.tensor(im, shape, "float32")
            created += [real, imag]
            t = nf.complex(real, imag)
        else:
            t = nf.tensor([complex(r, i) for r, i in zip(re, im, strict=True)], shape, "complex64")
    else:
        if dtype == "float32":
            flat = [float(_num(v)) for v in values]
        elif dtype == "int32":
            flat = [int(v) for v in values]
        elif dtype == "bool":
            flat = [bool(v) for v in values]
        else:  # string
            flat = list(values)
        # Built as a reshape of a flat tensor, so every case also runs kernels on inputs that share
        # a buffer stored in another shape (what reshape, expand_dims and clone produce).
        t = nf.tensor(flat, [len(flat)], dtype)
        if len(shape) != 1:
            created.append(t)
            t = nf.reshape(t, shape)
    created.append(t)
    return t


def _build(arg, created: list):
    """Fixture ARG -> Python value: tensors -> nf tensors, lists recursively, literals unchanged."""
    if isinstance(arg, list):
        return [_build(a, created) for a in arg]
    if isinstance(arg, dict):
        if "tensor" in arg:
            return _make_tensor(arg["tensor"], created)
        if set(arg) == {"number"}:
            return float(_num(arg["number"]))
    return arg


def _tensors_in(x):
    if isinstance(x, (list, tuple)):
        return [t for item in x for t in _tensors_in(item)]
    if isinstance(x, dict):
        return [t for item in x.values() for t in _tensors_in(item)]
    return [x] if hasattr(x, "data_sync") else []


def _check_output(cid: str, k: int, got, exp: dict):
    where = f"{cid} output {k}"
    assert tuple(got.shape) == tuple(exp["shape"]), f"{where}: shape {tuple(got.shape)} != TF.js {tuple(exp['shape'])}"
    assert got.dtype == exp["dtype"], f"{where}: dtype {got.dtype!r} != TF.js {exp['dtype']!r}"
    vals = np.asarray(got.data_sync())
    dtype = exp["dtype"]
    if dtype == "string":
        got_list = [v.decode() if isinstance(v, bytes) else str(v) for v in vals.reshape(-1).tolist()]
        assert got_list == exp["values"], f"{where}: values {got_list} != TF.js {exp['values']}"
        return
    if dtype == "complex64" and np.iscomplexobj(vals):
        vals = np.ascontiguousarray(vals, dtype=np.complex64).reshape(-1).view(np.float32)
    vals = vals.reshape(-1)
    if dtype == "bool":
        want = np.array(exp["values"], dtype=bool)
        assert vals.size == want.size, f"{where}: {vals.size} values != TF.js {want.size}"
        assert np.array_equal(vals.astype(bool), want), (
            f"{where}: values differ\ngot {vals.astype(bool).tolist()}\nTF.js {want.tolist()}"
        )
        return
    if dtype == "int32":
        want = np.array(exp["values"], dtype=np.int64)
        assert vals.size == want.size, f"{where}: {vals.size} values != TF.js {want.size}"
        assert np.array_equal(vals.astype(np.int64), want), (
            f"{where}: values differ\ngot {vals.astype(np.int64).tolist()}\nTF.js {want.tolist()}"
        )
        return
    # float32 / complex64 (interleaved re, im)
    want = np.array([_num(v) for v in exp["values"]], dtype=np.float64)
    g = vals.astype(np.float64)
    assert g.size == want.size, f"{where}: {g.size} values != TF.js {want.size}"
    nan_g, nan_w = np.isnan(g), np.isnan(want)
    assert np.array_equal(nan_g, nan_w), (
        f"{where}: NaN at {np.flatnonzero(nan_g).tolist()}, TF.js at {np.flatnonzero(nan_w).tolist()}\n"
        f"got {g.tolist()}\nTF.js {want.tolist()}"
    )
    inf_g, inf_w = np.isinf(g), np.isinf(want)
    assert np.array_equal(inf_g, inf_w) and np.array_equal(g[inf_w], want[inf_w]), (
        f"{where}: infinities differ\ngot {g.tolist()}\nTF.js {want.tolist()}"
    )
    fin = ~(nan_w | inf_w)
    err = np.abs(g[fin] - want[fin])
    atol, rtol = tolerance()
    bad = err > atol + rtol * np.abs(want[fin])
    assert not bad.any(), (
        f"{where}: {int(bad.sum())} values differ beyond atol={atol}, rtol={rtol} "
        f"(max abs err {err.max():.3g})\ngot {g.tolist()}\nTF.js {want.tolist()}"
    )


def _describe(result) -> str:
    parts = []
    for t in _tensors_in(result):
        v = np.asarray(t.data_sync()).reshape(-1)
        parts.append(f"shape={tuple(t.shape)} dtype={t.dtype} values={v[:12].tolist()}")
    return "; ".join(parts) or repr(result)


def run_case(case: dict) -> None:
    cid = case["id"]
    op_name, op = resolve_op(case)

    created: list = []
    result = None
    try:
        args = _build(case["args"], created)
        if "error" in case:
            try:
                result = op(*args)
            except OP_ERRORS as exc:
                msg = str(exc)
                assert op_name in msg.lower(), (
                    f"{cid}: error message should name the op {op_name!r}: {msg!r} (TF.js: {case['error']!r})"
                )
                return
            pytest.fail(f"{cid}: TF.js raises {case['error']!r}, ndflow returned {_describe(result)}")
        result = op(*args)
        outs = result if isinstance(result, (list, tuple)) else [result]
        expected = case["outputs"]
        assert len(outs) == len(expected), f"{cid}: {len(outs)} outputs != TF.js {len(expected)}"
        for k, (got, exp) in enumerate(zip(outs, expected, strict=True)):
            _check_output(cid, k, got, exp)
    finally:
        outs = [t for t in _tensors_in(result) if all(t is not c for c in created)]
        nf.dispose(created + outs)
