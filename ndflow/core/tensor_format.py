"""Tensor printing in TF.js's layout (``Tensor`` header, padded columns, ``...`` elision)."""

from __future__ import annotations

import math

import numpy as np

_LIMIT = 20  # more values than this along an axis are elided
_EDGE = 3  # values shown at each end of an elided axis
_DIGITS = 7  # decimals kept before trimming


def js_number(x: float) -> str:
    """A number as JavaScript's ``Number.prototype.toString`` writes it."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Infinity" if x > 0 else "-Infinity"
    if x == int(x) and abs(x) < 1e21:
        return str(int(x))
    text = repr(float(x))
    if "e" in text:
        mantissa, exponent = text.split("e")
        sign = "-" if exponent.startswith("-") else "+"
        return f"{mantissa.removesuffix('.0')}e{sign}{int(exponent.lstrip('+-'))}"
    return text


def _value(x: object, dtype: str) -> str:
    if dtype == "bool":
        return "true" if x else "false"
    if dtype == "string":
        return f"'{x}'"
    if dtype == "complex64":
        return f"{js_number(round(float(x.real), _DIGITS))} + {js_number(round(float(x.imag), _DIGITS))}j"
    return js_number(round(float(x), _DIGITS))


def _scalar(x: object, dtype: str) -> str:
    if dtype == "string":
        return str(x)  # TF.js quotes strings inside arrays, not a lone scalar
    if dtype in ("bool", "complex64"):
        return _value(x, dtype)
    return js_number(float(x))


def _column_width(column: np.ndarray, dtype: str) -> int:
    """The longest text of a column's values (TF.js sizes each column over all its values, shown or not).

    Numbers are written only where a cheap bound says they could be the longest: a float32 value after
    rounding to 7 decimals is at most sign + integer digits + 8 characters (the exponent forms are
    shorter), so a column of a million values formats a handful of them."""
    if dtype not in ("float32", "int32") or column.size <= 64:
        return max(len(_value(v, dtype)) for v in column)
    with np.errstate(all="ignore"):
        a = np.abs(column.astype(np.float64))
        finite = np.isfinite(a)
        a = np.where(finite, a, 0.0)
        # integer digits of anything the value can round to, plus sign, "." and up to 7 decimals;
        # integral values print without the fraction, and more than 8 integer digits leave room
        # for the shortest round-trip text to need more decimals
        digits = np.floor(np.log10(np.maximum(a + 1.0, 1.0))).astype(np.int64) + 1
        integral = a == np.floor(a)
        fraction = np.where(integral, 0, np.where(digits > 8, 18, 8))
        bound = (column < 0) + digits + fraction
        bound = np.where(finite, bound, 9)  # -Infinity
    order = np.argsort(-bound, kind="stable")
    best = 0
    for i in order:
        if bound[i] <= best:
            break
        best = max(best, len(_value(column[i], dtype)))
    return best


def _row(values: np.ndarray, dtype: str, pads: list[int]) -> str:
    n = values.shape[0]
    if n > _LIMIT:
        head = [_value(v, dtype).ljust(pads[i]) for i, v in enumerate(values[:_EDGE])]
        tail = [_value(v, dtype).ljust(pads[n - _EDGE + i]) for i, v in enumerate(values[n - _EDGE :])]
        return "[" + ", ".join(head) + ", ..., " + ", ".join(tail) + "]"
    return "[" + ", ".join(_value(v, dtype).ljust(pads[i]) for i, v in enumerate(values)) + "]"


def _lines(values: np.ndarray, dtype: str, pads: list[int], last: bool = True) -> list[str]:
    rank = values.ndim
    if rank == 1:
        return [_row(values, dtype, pads)]
    n = values.shape[0]
    rows = list(range(n)) if n <= _LIMIT else [*range(_EDGE), None, *range(n - _EDGE, n)]
    lines: list[str] = []
    for i in rows:
        if i is None:
            lines.append("...")
        else:
            lines.extend(_lines(values[i], dtype, pads, last=i == n - 1))
    # TF.js's bracket placement, quirks included: an empty axis prints " []" and a
    # one-row axis prints its separator before the closing bracket.
    sep = "," if rank == 2 else ""
    if not lines:
        lines.append("")
    lines[0] = "[" + (lines[0] + sep if n > 0 else "")
    for k in range(1, len(lines) - 1):
        lines[k] = " " + lines[k] + sep
    lines[-1] = " " + lines[-1] + "]" + ("" if last else ",\n" + "\n" * (rank - 2))
    return lines


def tensor_to_string(values: np.ndarray, shape: tuple[int, ...], dtype: str, verbose: bool = False) -> str:
    """``values`` is the tensor's array (any layout); the text matches TF.js's ``toString``."""
    values = np.asarray(values).reshape(shape)
    header = ["Tensor"]
    if verbose:
        header += [f"  dtype: {dtype}", f"  rank: {len(shape)}", f"  shape: [{','.join(map(str, shape))}]", "  values:"]
    if len(shape) == 0:
        body = [_scalar(values.item(), dtype)]
    else:
        cols = shape[-1]
        pads = [0] * cols
        if len(shape) > 1 and values.size:
            flat = values.reshape(-1, cols)
            shown = range(cols) if cols <= _LIMIT else [*range(_EDGE), *range(cols - _EDGE, cols)]
            for j in shown:  # an elided column's width is never used
                pads[j] = _column_width(flat[:, j], dtype)
        body = _lines(values, dtype, pads)
    return "\n".join(header + ["    " + line for line in body])
