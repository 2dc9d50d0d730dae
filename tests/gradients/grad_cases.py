"""Checking gradients two ways: against TF.js's own gradients (fixture cases with ``grads``) and
against central finite differences computed in float64 on the cpu backend.

- ``check_grad_case(case)``: a fixture case made with ``case(..., grad={"wrt": [...], "dy": ...})``
  (tests/fixtures/oracle_gen.py). The op is differentiated with ``nf.grads`` with respect to the
  arguments named by ``wrt`` (``i`` or ``[i, j]`` into a list argument) and compared with TF.js.
- ``check_finite_differences(fn, arrays, dy)``: ``fn`` takes tensors and returns a tensor; its
  gradient from ``nf.grads`` is compared with a central difference along a random direction per
  input, with the cpu backend computing in float64 (``float64_cpu``) so the difference is exact
  enough to compare within 1e-3.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pytest
from oracle_cases import _build, _check_output, resolve_op

import ndflow as nf
from ndflow.core import dtypes

# Backends whose float32 tensors cannot hold float64 values: their finite differences run on the cpu backend.
FLOAT32_ONLY = {"webgpu"}


@contextlib.contextmanager
def on_backend(name: str) -> Iterator[None]:
    """Within the block, ``name`` is the active backend."""
    previous = nf.get_backend()
    nf.set_backend(name)
    try:
        yield
    finally:
        nf.set_backend(previous)


@contextlib.contextmanager
def float64_cpu() -> Iterator[None]:
    """Within the block, cpu tensors of dtype float32 hold float64 arrays (for finite differences)."""
    previous = dtypes.NUMPY_DTYPE["float32"]
    dtypes.NUMPY_DTYPE["float32"] = np.dtype(np.float64)
    try:
        yield
    finally:
        dtypes.NUMPY_DTYPE["float32"] = previous


def _first(result):
    return result[0] if isinstance(result, list | tuple) else result


def _wrt_paths(wrt: Sequence) -> list[tuple[int, ...]]:
    return [tuple(w) if isinstance(w, list) else (w,) for w in wrt]


def _substitute(args: list, path: tuple[int, ...], value) -> None:
    target = args
    for i in path[:-1]:
        target = target[i]
    target[path[-1]] = value


def _get(args: list, path: tuple[int, ...]):
    target = args
    for i in path:
        target = target[i]
    return target


def check_grad_case(case: dict) -> None:
    """Compare ndflow's gradient of a fixture case with TF.js's (or expect TF.js's error)."""
    op_name, op = resolve_op(case)
    created: list = []
    grads: list = []
    try:
        args = _build(case["args"], created)
        paths = _wrt_paths(case["grad"]["wrt"])
        xs = [_get(args, p) for p in paths]
        dy_spec = case["grad"].get("dy")
        dy = _build(dy_spec, created) if dy_spec is not None else None

        def f(*values):
            call_args = [list(a) if isinstance(a, list) else a for a in args]
            for p, v in zip(paths, values, strict=True):
                _substitute(call_args, p, v)
            return _first(op(*call_args))

        if "grad_error" in case:
            with pytest.raises((ValueError, TypeError, NotImplementedError)):
                grads = nf.grads(f)(xs, dy)
            return
        grads = nf.grads(f)(xs, dy)
        assert len(grads) == len(case["grads"])
        for k, (got, exp) in enumerate(zip(grads, case["grads"], strict=True)):
            _check_output(f"{case['id']} gradient", k, got, exp)
    finally:
        nf.dispose(created + list(grads))


def check_finite_differences(
    fn: Callable[..., nf.Tensor],
    arrays: Sequence[np.ndarray],
    dy: np.ndarray | None = None,
    eps: float = 1e-5,
    rtol: float = 1e-3,
    atol: float = 1e-5,
    seed: int = 0,
) -> None:
    """``nf.grads(fn)`` against central differences of ``sum(fn(x) * dy)`` along random directions."""
    rng = np.random.default_rng(seed)
    with float64_cpu():
        xs = [nf.tensor(np.asarray(a, np.float64), list(np.shape(a)), "float32") for a in arrays]
        out = nf.tidy(lambda: fn(*xs))
        dy_arr = rng.standard_normal(out.shape) if dy is None else np.asarray(dy, np.float64)
        out.dispose()
        dy_t = nf.tensor(dy_arr, list(np.shape(dy_arr)), "float32")
        grads: list = []
        try:
            grads = nf.grads(fn)(xs, dy_t)
            for i, (x, g) in enumerate(zip(arrays, grads, strict=True)):
                v = rng.standard_normal(np.shape(x))
                numeric_backend = "cpu" if nf.get_backend() in FLOAT32_ONLY else nf.get_backend()
                with on_backend(numeric_backend):
                    numeric = _difference(fn, arrays, i, eps * v, dy_arr, eps)
                analytic = float(np.sum(g.numpy() * v))
                assert abs(numeric - analytic) <= atol + rtol * max(abs(numeric), abs(analytic)), (
                    f"input {i}: analytic directional derivative {analytic!r} != finite difference {numeric!r}"
                )
        finally:
            nf.dispose(xs + [dy_t] + list(grads))


def _difference(fn: Callable, arrays: Sequence[np.ndarray], i: int, step: np.ndarray, dy_arr, eps: float) -> float:
    """The central difference of ``sum(fn(x) * dy)`` along ``step`` of input ``i``, on the active backend."""
    shifted = [
        [nf.tensor(np.asarray(a, np.float64) + (sign * step if j == i else 0), list(np.shape(a)), "float32")
         for j, a in enumerate(arrays)]
        for sign in (1, -1)
    ]  # fmt: skip
    f_plus = nf.tidy(lambda: fn(*shifted[0]))
    f_minus = nf.tidy(lambda: fn(*shifted[1]))
    numeric = float(np.sum((f_plus.numpy() - f_minus.numpy()) * dy_arr) / (2 * eps))
    nf.dispose(shifted[0] + shifted[1] + [f_plus, f_minus])
    return numeric
