"""``nf.linalg``: TF.js's ``tf.linalg`` namespace: qr, gram_schmidt, band_part."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted, converted_list, dispose_temps


def _k(kernel: str, *inputs: Tensor, **attrs: Any) -> Tensor:
    return ENGINE.run_kernel(kernel, inputs, attrs or None)


def _const(values: Any, dtype: str = "float32") -> Tensor:
    array = np.asarray(values, dtype=np.int32 if dtype == "int32" else np.float32)
    return ENGINE.make_tensor(array, array.shape, dtype)


def _require_float(t: Tensor, arg: str, op: str) -> None:
    if t.dtype != "float32":  # TF.js fails in its sqrt, which takes float32 only
        raise TypeError(f"{op}: argument '{arg}' must be a float32 tensor, got {t.dtype}")


# ----------------------------------------------------------------------------- band_part


def _band_bound(value: Any, arg: str, full: int, what: str, temps: list[Tensor]) -> Tensor:
    """A band bound as an int32 scalar tensor (negative: the whole triangle)."""
    if isinstance(value, Tensor):
        if value.dtype != "int32":
            raise TypeError(f"band_part: argument '{arg}' must be an int32 tensor, got {value.dtype}")
        if value.size != 1:
            raise ValueError(f"band_part: argument '{arg}' must be a scalar tensor, got shape {list(value.shape)}")
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | np.integer | np.floating):
        raise TypeError(f"band_part: argument '{arg}' must be an int or an int32 tensor, got {type(value).__name__}")
    if value % 1 != 0:
        raise ValueError(f"band_part: argument '{arg}' must be an integer, got {value}")
    if value > full:
        raise ValueError(
            f"band_part: argument '{arg}' ({value}) must not be greater than the number of {what} ({full})"
        )
    bound = _const(int(value), "int32")
    temps.append(bound)
    return bound


def band_part(a: TensorLike, num_lower: int | Tensor, num_upper: int | Tensor) -> Tensor:
    """Keep ``num_lower`` sub-diagonals and ``num_upper`` super-diagonals of each innermost matrix
    (negative: all of them) and zero the rest."""
    with converted(a, "a", "band_part") as t:
        if t.dtype == "string":
            raise TypeError("band_part: argument 'a' must be numeric, got a string tensor")
        if t.rank < 2:
            raise ValueError(f"band_part: argument 'a' must have rank >= 2, got rank {t.rank}")
        m, n = t.shape[-2:]
        temps: list[Tensor] = []
        try:
            lower = _band_bound(num_lower, "num_lower", m, "rows", temps)
            upper = _band_bound(num_upper, "num_upper", n, "columns", temps)
            return _k(kn.MatrixBandPart, t, lower, upper)
        finally:
            dispose_temps(temps)


# ----------------------------------------------------------------------------- gram_schmidt


def _orthonormalize(rows: list[Tensor]) -> list[Tensor]:
    """Modified Gram-Schmidt, as TF.js: subtract each earlier unit vector's projection in turn.
    Each row is one vector, whatever its shape (TF.js flattens the slices of a rank > 2 tensor)."""
    axes = tuple(range(rows[0].rank))
    ys: list[Tensor] = []
    for x in rows:
        for y in ys:
            coefficient = _k(kn.Sum, _k(kn.Multiply, y, x), axis=axes, keep_dims=False)
            x = _k(kn.Sub, x, _k(kn.Multiply, coefficient, y))
        length = _k(kn.Sqrt, _k(kn.Sum, _k(kn.Square, x), axis=axes, keep_dims=False))
        ys.append(_k(kn.RealDiv, x, length))
    return ys


def gram_schmidt(xs: TensorLike) -> Tensor | tuple[Tensor, ...]:
    """Orthonormalize the rows of a 2-D tensor (or a list of 1-D tensors), in order; returns the
    same kind of input (a tuple for a list)."""
    if isinstance(xs, list | tuple):
        if not xs:
            raise ValueError("gram_schmidt: argument 'xs' must not be empty")
        with converted_list(xs, "xs", "gram_schmidt") as ts:
            dim = ts[0].shape[0] if ts[0].rank == 1 else None
            for i, t in enumerate(ts):
                if t.rank != 1:
                    raise ValueError(f"gram_schmidt: xs[{i}] must be a 1-D tensor, got shape {list(t.shape)}")
                if t.shape[0] != dim:
                    raise ValueError(
                        f"gram_schmidt: the vectors differ in length: xs[{i}] has {t.shape[0]}, xs[0] {dim}"
                    )
            _require_float(ts[0], "xs", "gram_schmidt")
            if len(ts) > dim:
                raise ValueError(f"gram_schmidt: the number of vectors ({len(ts)}) exceeds their length ({dim})")
            return tuple(ENGINE.tidy(None, _orthonormalize, (ts,), {}))
    with converted(xs, "xs", "gram_schmidt") as t:
        if t.rank < 2:
            raise ValueError(
                f"gram_schmidt: argument 'xs' must be a 2-D tensor or a list of 1-D tensors, got rank {t.rank}"
            )
        _require_float(t, "xs", "gram_schmidt")
        count, dim = t.shape[0], t.shape[1]
        if count > dim:
            raise ValueError(f"gram_schmidt: the number of vectors ({count}) exceeds the number of dimensions ({dim})")
        if count == 0:
            return _k(kn.Identity, t)

        def run() -> Tensor:
            rest = (0,) * (t.rank - 1)
            rows = [_k(kn.Slice, t, begin=(i, *rest), size=(1, *t.shape[1:])) for i in range(count)]
            ys = _orthonormalize(rows)
            return ys[0] if count == 1 else _k(kn.Concat, *ys, axis=0)

        return ENGINE.tidy(None, run, (), {})


# ----------------------------------------------------------------------------- qr


def _householder_step(r: Tensor, q: Tensor, j: int, consts: dict[str, Tensor]) -> tuple[Tensor, Tensor]:
    """Zero column ``j`` of ``r`` below the diagonal with a Householder reflection ``H``:
    ``r := H r`` and ``q := q H``, for every matrix of the batch at once (TF.js's signs)."""
    *outer, m, n = r.shape
    outer, zeros = tuple(outer), (0,) * len(outer)
    matrix_axes = (len(outer), len(outer) + 1)
    one, minus_one, zero = consts["one"], consts["minus_one"], consts["zero"]
    column = _k(kn.Slice, r, begin=zeros + (j, j), size=outer + (m - j, 1))
    norm = _k(kn.Sqrt, _k(kn.Sum, _k(kn.Square, column), axis=matrix_axes, keep_dims=True))
    pivot = _k(kn.Slice, r, begin=zeros + (j, j), size=outer + (1, 1))
    sign = _k(kn.Select, _k(kn.Greater, pivot, zero), minus_one, one)
    u1 = _k(kn.Sub, pivot, _k(kn.Multiply, sign, norm))
    # A column that is already zero needs no reflection (TF.js divides by zero and returns NaN).
    flat = _k(kn.Equal, norm, zero)
    w = _k(kn.RealDiv, column, _k(kn.Select, flat, one, u1))
    if m - j > 1:
        w = _k(kn.Concat, one, _k(kn.Slice, w, begin=zeros + (1, 0), size=outer + (m - j - 1, 1)), axis=len(outer))
    else:
        w = one
    tau = _k(kn.Neg, _k(kn.RealDiv, _k(kn.Multiply, sign, u1), _k(kn.Select, flat, one, norm)))
    tau_w = _k(kn.Multiply, _k(kn.Select, flat, zero, tau), w)
    plain = {"transpose_a": False, "transpose_b": False}
    r_tail = _k(kn.Slice, r, begin=zeros + (j, 0), size=outer + (m - j, n))
    w_r = _k(kn.BatchMatMul, w, r_tail, transpose_a=True, transpose_b=False)
    r_tail = _k(kn.Sub, r_tail, _k(kn.BatchMatMul, tau_w, w_r, **plain))
    q_tail = _k(kn.Slice, q, begin=zeros + (0, j), size=outer + (m, m - j))
    q_w = _k(kn.BatchMatMul, q_tail, w, **plain)
    q_tail = _k(kn.Sub, q_tail, _k(kn.BatchMatMul, q_w, tau_w, transpose_a=False, transpose_b=True))
    if j == 0:
        return r_tail, q_tail
    r = _k(kn.Concat, _k(kn.Slice, r, begin=zeros + (0, 0), size=outer + (j, n)), r_tail, axis=len(outer))
    q = _k(kn.Concat, _k(kn.Slice, q, begin=zeros + (0, 0), size=outer + (m, j)), q_tail, axis=len(outer) + 1)
    return r, q


def _qr(t: Tensor, full_matrices: bool) -> tuple[Tensor, Tensor]:
    """Householder QR of every innermost matrix at once (TF.js loops over them)."""
    outer, (m, n) = t.shape[:-2], t.shape[-2:]
    zeros = (0,) * t.rank
    r = t
    q = _const(np.broadcast_to(np.eye(m), outer + (m, m)))
    consts = {name: _const(np.full(outer + (1, 1), v)) for name, v in (("one", 1), ("minus_one", -1), ("zero", 0))}
    for j in range(min(m, n)):
        previous = [x for x in (r, q) if x is not t]
        r, q = ENGINE.tidy(None, _householder_step, (r, q, j, consts), {})
        dispose_temps(previous)
    if r is t:
        r = _k(kn.Identity, t)
    if not full_matrices and m > n:
        q = _k(kn.Slice, q, begin=zeros, size=outer + (m, n))
        r = _k(kn.Slice, r, begin=zeros, size=outer + (n, n))
    return q, r


def qr(x: TensorLike, full_matrices: bool = False) -> tuple[Tensor, Tensor]:
    """QR decomposition of each innermost matrix by Householder reflections: ``(q, r)`` with ``q``
    orthogonal and ``r`` upper triangular; ``full_matrices`` keeps ``q`` square when rows > columns."""
    with converted(x, "x", "qr") as t:
        if t.rank < 2:
            raise ValueError(f"qr: argument 'x' must have rank >= 2, got rank {t.rank}")
        _require_float(t, "x", "qr")
        return ENGINE.tidy(None, _qr, (t, bool(full_matrices)), {})


__all__ = ["qr", "gram_schmidt", "band_part"]
