"""The time loop of ``_NdflowRNNSequence`` (a recurrent layer's whole loop at inference) on arrays of any backend
with ``@``, slicing and in-place assignment (numpy arrays, torch tensors), given the backend's element-wise
functions. The cpu backend runs it where its C module's loop (``cpu/native/csrc/rnn_seq.c``) is not built; the torch
backend always. It follows the layers' step functions (``layers/recurrent_cells.py``) operation for operation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple


class Elementwise(NamedTuple):
    """The backend's element-wise functions the loop needs."""

    tanh: Callable[[Any], Any]
    exp: Callable[[Any], Any]
    clip: Callable[[Any, float, float], Any]
    relu: Callable[[Any], Any]


def activate(v: Any, code: int, fns: Elementwise) -> Any:
    """Activation ``code`` (0 linear, 1 tanh, 2 sigmoid, 3 hard sigmoid as TF.js, 4 relu) of ``v``."""
    if code == 1:
        return fns.tanh(v)
    if code == 2:
        return 1.0 / (1.0 + fns.exp(-v))
    if code == 3:
        return fns.clip(0.5 + 0.2 * v, 0.0, 1.0)
    if code == 4:
        return fns.relu(v)
    return v


def run_loop(
    kind: int, p: Any, rk: Any, rb: Any, h: Any, c: Any, seq: Any, act: int, ract: int, backwards: bool,
    fns: Elementwise,
) -> None:  # fmt: skip
    """The loop over ``p``'s time axis (``[batch, time, gates * units]``), updating ``h`` (and ``c``, LSTM) in place
    and writing each step's output to ``seq`` (``[batch, time, units]``, or None). ``kind``: 0 LSTM, 1 GRU (TF.js's),
    2 GRU with the reset after the product (``rb``: its recurrent bias)."""
    steps, units = p.shape[1], rk.shape[0]
    for t in range(steps):
        pt = p[:, steps - 1 - t if backwards else t]
        if kind == 0:
            z = pt + h @ rk
            i, f = activate(z[:, :units], ract, fns), activate(z[:, units : 2 * units], ract, fns)
            c[...] = f * c + i * activate(z[:, 2 * units : 3 * units], act, fns)
            h[...] = activate(z[:, 3 * units :], ract, fns) * activate(c, act, fns)
        elif kind == 1:
            zr = activate(pt[:, : 2 * units] + h @ rk[:, : 2 * units], ract, fns)
            zz, r = zr[:, :units], zr[:, units:]
            hh = activate(pt[:, 2 * units :] + (r * h) @ rk[:, 2 * units :], act, fns)
            h[...] = zz * h + (1.0 + -zz) * hh
        else:
            inner = h @ rk + rb
            zz = activate(pt[:, :units] + inner[:, :units], ract, fns)
            r = activate(pt[:, units : 2 * units] + inner[:, units : 2 * units], ract, fns)
            hh = activate(pt[:, 2 * units :] + r * inner[:, 2 * units :], act, fns)
            h[...] = zz * h + (1.0 + -zz) * hh
        if seq is not None:
            seq[:, t] = h
