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
            for j in range(cols):
                pads[j] = max(len(_value(v, dtype)) for v in flat[:, j])
        body = _lines(values, dtype, pads)
    return "\n".join(header + ["    " + line for line in body])
