"""The training forms of ``_NdflowLSTMTrain`` and ``_NdflowLSTMGrad`` on any backend with the loops of
:mod:`.rnn_loop`: given the backend's array constructors, the kernels' bodies (the backends register them)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .rnn_loop import Elementwise, run_lstm_grad, run_lstm_train


def lstm_train(p: Any, rk: Any, h0: Any, c0: Any, attrs: dict, empty: Callable[[tuple[int, ...]], Any],
               fns: Elementwise) -> list[Any]:  # fmt: skip
    """``[outputs, h, c, zs, cs, hs]`` of an LSTM's loop in training (``attrs``: activation,
    recurrent_activation, go_backwards, return_sequences), ``empty(shape)`` making float32 arrays."""
    batch, steps, units = p.shape[0], p.shape[1], rk.shape[0]
    h, c = h0 + 0.0, c0 + 0.0  # new arrays (the states are updated in place)
    zs, cs, hs = empty((batch, steps, 4 * units)), empty((batch, steps, units)), empty((batch, steps, units))
    run_lstm_train(p, rk, h, c, zs, cs, hs, int(attrs["activation"]), int(attrs["recurrent_activation"]),
                   bool(attrs["go_backwards"]), fns)  # fmt: skip
    first = hs if attrs["return_sequences"] else h
    return [first + 0.0, h, c, zs, cs, hs]


def lstm_grad(d_out: Any, dh: Any, dc: Any, rk: Any, h0: Any, c0: Any, zs: Any, cs: Any, hs: Any, attrs: dict,
              zeros: Callable[[tuple[int, ...]], Any], fns: Elementwise) -> list[Any]:  # fmt: skip
    """``[dp, drk, dh0, dc0]`` of :func:`lstm_train`'s loop from its outputs' gradients."""
    batch, steps, units = zs.shape[0], zs.shape[1], rk.shape[0]
    dp, drk = zeros((batch, steps, 4 * units)), zeros((units, 4 * units))
    dh0, dc0 = run_lstm_grad(d_out, dh, dc, rk, h0, c0, zs, cs, hs, dp, drk, int(attrs["activation"]),
                             int(attrs["recurrent_activation"]), bool(attrs["go_backwards"]),
                             bool(attrs["return_sequences"]), fns)  # fmt: skip
    return [dp, drk, dh0 + 0.0, dc0 + 0.0]
