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


def activation_grad(pre: Any, post: Any, code: int, fns: Elementwise) -> Any:
    """d activation / d pre-activation, from the pre-activation ``pre`` and the activation ``post``, as the ops'
    gradients give it (tanh 1 - y**2, sigmoid y * (1 - y), hard sigmoid 0.2 where 0 <= 0.2 x + 0.5 <= 1 (clip's
    bounds included, as TF.js), relu 1 where x > 0, linear 1)."""
    if code == 1:
        return 1.0 - post * post
    if code == 2:
        return post * (1.0 - post)
    if code == 3:
        s = 0.5 + 0.2 * pre
        return 0.2 * ((s >= 0.0) & (s <= 1.0))
    if code == 4:
        return 1.0 * (pre > 0.0)
    return 1.0 + 0.0 * pre


def run_lstm_train(p: Any, rk: Any, h: Any, c: Any, zs: Any, cs: Any, hs: Any, act: int, ract: int,
                   backwards: bool, fns: Elementwise) -> None:  # fmt: skip
    """The LSTM loop of :func:`run_loop` (kind 0) keeping what its gradient needs: each step's gate
    pre-activations in ``zs`` (``[batch, time, 4 * units]``), cell states in ``cs`` and outputs in ``hs``
    (``[batch, time, units]``), all in processing order; ``h`` and ``c`` end as the final states."""
    steps, units = p.shape[1], rk.shape[0]
    for t in range(steps):
        z = p[:, steps - 1 - t if backwards else t] + h @ rk
        zs[:, t] = z
        i, f = activate(z[:, :units], ract, fns), activate(z[:, units : 2 * units], ract, fns)
        c[...] = f * c + i * activate(z[:, 2 * units : 3 * units], act, fns)
        h[...] = activate(z[:, 3 * units :], ract, fns) * activate(c, act, fns)
        cs[:, t] = c
        hs[:, t] = h


def lstm_grad_step_inputs(
    d_out: Any, dh: Any, zs: Any, cs: Any, hs: Any, h0: Any, c0: Any, t: int, sequences: bool
) -> tuple[Any, Any, Any, Any, Any]:
    """What the backward pass through an LSTM's loop reads at processing step ``t``: the output's gradient (with
    the sequence's step ``t`` added when ``sequences``), the step's gate pre-activations and cell state, and the
    previous step's cell state and output (the initial states at ``t`` 0)."""
    if sequences:
        dh = dh + d_out[:, t]
    c_prev = cs[:, t - 1] if t > 0 else c0
    h_prev = hs[:, t - 1] if t > 0 else h0
    return dh, zs[:, t], cs[:, t], c_prev, h_prev


def run_lstm_grad(d_out: Any, dh: Any, dc: Any, rk: Any, h0: Any, c0: Any, zs: Any, cs: Any, hs: Any, dp: Any,
                  drk: Any, act: int, ract: int, backwards: bool, sequences: bool,
                  fns: Elementwise) -> tuple[Any, Any]:  # fmt: skip
    """Back-propagation through the LSTM loop of :func:`run_lstm_train`: ``d_out`` the outputs' gradient (the
    sequence's with ``sequences``, else the last output's), ``dh``/``dc`` the final states' (updated in place);
    fills ``dp`` (the input projection's gradient, in time order) and adds the recurrent kernel's into ``drk``.
    Returns the initial states' gradients ``(dh0, dc0)``."""
    steps, units = zs.shape[1], rk.shape[0]
    if not sequences:
        dh = dh + d_out
    rk_t = rk.T
    for t in range(steps - 1, -1, -1):
        dh, z, c, c_prev, h_prev = lstm_grad_step_inputs(d_out, dh, zs, cs, hs, h0, c0, t, sequences)
        zi, zf, zg, zo = z[:, :units], z[:, units : 2 * units], z[:, 2 * units : 3 * units], z[:, 3 * units :]
        i, f, g, o = activate(zi, ract, fns), activate(zf, ract, fns), activate(zg, act, fns), activate(zo, ract, fns)
        ac = activate(c, act, fns)
        dc = dc + dh * o * activation_grad(c, ac, act, fns)
        tt = steps - 1 - t if backwards else t
        dz = dp[:, tt]
        dz[:, :units] = dc * g * activation_grad(zi, i, ract, fns)
        dz[:, units : 2 * units] = dc * c_prev * activation_grad(zf, f, ract, fns)
        dz[:, 2 * units : 3 * units] = dc * i * activation_grad(zg, g, act, fns)
        dz[:, 3 * units :] = dh * ac * activation_grad(zo, o, ract, fns)
        drk += h_prev.T @ dz
        dh = dz @ rk_t
        dc = dc * f
    return dh, dc
