"""A recurrent layer's whole time loop in one kernel: ``_NdflowRNNSequence`` (LSTM and GRU inference).

Inputs: the input projection ``p`` (``[batch, time, gates * units]``: ``x @ kernel + bias`` for every step), the
recurrent kernel ``rk`` (``[units, gates * units]``), the initial ``h`` (``[batch, units]``), and ``c`` (LSTM) or the
recurrent bias ``rb`` (GRU with ``reset_after``). Attributes: ``kind`` (0 LSTM, 1 GRU as TF.js, 2 GRU with the reset
after the product), ``activation`` and ``recurrent_activation`` (0 linear, 1 tanh, 2 sigmoid, 3 hard sigmoid as
TF.js, 4 relu), ``go_backwards``, ``return_sequences``. Outputs: the outputs (``[batch, time, units]`` with
``return_sequences``, else the last ``[batch, units]``), the final ``h`` and (LSTM) ``c``.

The C module's loop (``native/csrc/rnn_seq.c``: one product per step, the gates in one pass, the batch split over
the cores) where it is built; else the same steps in numpy (``backends/shared/rnn_loop.py``). Both follow the layers'
step functions (``layers/recurrent_cells.py``) operation for operation.
"""

from __future__ import annotations

import numpy as np

from ....core import kernel_names as kn
from ...shared import rnn_train as shared_train
from ...shared.rnn_loop import Elementwise, run_loop
from ..backend import CPUBackend
from ..native import native_split
from ..native import parallel as cpu_parallel
from .common import Output, cpu_kernel, out, values_of

#: Batch rows per thread, at least, before the batch is split (a row's whole sequence is the unit of work).
MIN_ROWS_PER_THREAD = 4


_NUMPY = Elementwise(np.tanh, np.exp, np.clip, lambda v: np.maximum(v, np.float32(0)))


@cpu_kernel(kn._NdflowRNNSequence)
def rnn_sequence(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    kind, act, ract = int(attrs["kind"]), int(attrs["activation"]), int(attrs["recurrent_activation"])
    backwards, return_sequences = bool(attrs["go_backwards"]), bool(attrs["return_sequences"])
    p, rk, h0 = (np.ascontiguousarray(values_of(backend, t), dtype=np.float32) for t in inputs[:3])
    extra = np.ascontiguousarray(values_of(backend, inputs[3]), dtype=np.float32) if len(inputs) > 3 else None
    batch, steps = p.shape[0], p.shape[1]
    units = rk.shape[0]
    h = h0.copy()
    c = extra.copy() if kind == 0 else None
    rb = extra if kind == 2 else None
    seq = np.empty((batch, steps, units), np.float32) if return_sequences else None
    module = native_split.module() if native_split.available() else None
    if module is not None:
        threads = max(1, min(cpu_parallel.threads(), batch // MIN_ROWS_PER_THREAD))
        module.rnn_sequence(kind, batch, steps, units, p, rk, rb, h, c, seq, act, ract, backwards, return_sequences,
                            threads)  # fmt: skip
    else:
        run_loop(kind, p, rk, rb, h, c, seq, act, ract, backwards, _NUMPY)
    first = seq if seq is not None else h.copy()
    outputs = [out(backend, first, "float32"), out(backend, h, "float32")]
    if c is not None:
        outputs.append(out(backend, c, "float32"))
    return outputs


def _f32(backend: CPUBackend, t: object) -> np.ndarray:
    return np.ascontiguousarray(values_of(backend, t), dtype=np.float32)  # type: ignore[arg-type]


def _empty(shape: tuple[int, ...]) -> np.ndarray:
    return np.empty(shape, np.float32)


def _zeros(shape: tuple[int, ...]) -> np.ndarray:
    return np.zeros(shape, np.float32)


def _threads(batch: int) -> int:
    return max(1, min(cpu_parallel.threads(), batch // MIN_ROWS_PER_THREAD))


@cpu_kernel(kn._NdflowLSTMTrain)
def lstm_train(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """An LSTM's loop in training: ``[outputs, h, c]`` and what its gradient needs (``zs``, ``cs``, ``hs``)."""
    p, rk, h0, c0 = (_f32(backend, t) for t in inputs)
    module = native_split.module() if native_split.available() else None
    if module is None:
        values = shared_train.lstm_train(p, rk, h0, c0, attrs, _empty, _NUMPY)
        return [out(backend, v, "float32") for v in values]
    batch, steps, units = p.shape[0], p.shape[1], rk.shape[0]
    h, c = h0.copy(), c0.copy()
    zs, cs, hs = _empty((batch, steps, 4 * units)), _empty((batch, steps, units)), _empty((batch, steps, units))
    module.rnn_sequence(0, batch, steps, units, p, rk, None, h, c, None, int(attrs["activation"]),
                        int(attrs["recurrent_activation"]), bool(attrs["go_backwards"]), False, _threads(batch), zs, cs,
                        hs)  # fmt: skip
    first = hs.copy() if attrs["return_sequences"] else h.copy()
    return [out(backend, v, "float32") for v in (first, h, c, zs, cs, hs)]


@cpu_kernel(kn._NdflowLSTMGrad)
def lstm_grad(backend: CPUBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """``[dp, drk, dh0, dc0]`` of :func:`lstm_train` from its outputs' gradients and saved values: the C module's
    loop through time, then the recurrent kernel's gradient as one product (every step's previous output against its
    gates' gradient)."""
    d_out, dh, dc, rk, h0, c0, zs, cs, hs = (_f32(backend, t) for t in inputs)
    module = native_split.module() if native_split.available() else None
    if module is None:
        values = shared_train.lstm_grad(d_out, dh, dc, rk, h0, c0, zs, cs, hs, attrs, _zeros, _NUMPY)
        return [out(backend, v, "float32") for v in values]
    batch, steps, units = zs.shape[0], zs.shape[1], rk.shape[0]
    backwards = bool(attrs["go_backwards"])
    dh, dc, dp = dh.copy(), dc.copy(), _empty((batch, steps, 4 * units))
    module.lstm_grad(batch, steps, units, d_out, dh, dc, np.ascontiguousarray(rk.T), c0, zs, cs, dp,
                     int(attrs["activation"]), int(attrs["recurrent_activation"]), backwards,
                     bool(attrs["return_sequences"]), _threads(batch))  # fmt: skip
    previous = np.concatenate([h0[:, None], hs[:, :-1]], axis=1).reshape(-1, units)  # processing order
    dz = (dp[:, ::-1] if backwards else dp).reshape(-1, 4 * units)
    drk = cpu_parallel.matmul(np.ascontiguousarray(previous.T), np.ascontiguousarray(dz))
    return [out(backend, v, "float32") for v in (dp, drk, dh, dc)]
