"""``_NdflowRNNSequence`` (a recurrent layer's whole time loop at inference; layers/rnn_fused.py): the shared loop
(``backends/shared/rnn_loop.py``) on torch tensors, on the backend's device."""

from __future__ import annotations

import torch

from ....core import kernel_names as kn
from ...shared import rnn_train as shared_train
from ...shared.rnn_loop import Elementwise, run_loop
from ..backend import TorchBackend
from . import lstm_loops
from .common import Output, out, torch_kernel, values_of

_TORCH = Elementwise(torch.tanh, torch.exp, torch.clamp, torch.relu)


@torch_kernel(kn._NdflowRNNSequence)
def rnn_sequence(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    kind, act, ract = int(attrs["kind"]), int(attrs["activation"]), int(attrs["recurrent_activation"])
    backwards, return_sequences = bool(attrs["go_backwards"]), bool(attrs["return_sequences"])
    p, rk, h0 = (values_of(backend, t).float() for t in inputs[:3])
    extra = values_of(backend, inputs[3]).float() if len(inputs) > 3 else None
    batch, steps, units = p.shape[0], p.shape[1], rk.shape[0]
    h = h0.clone()
    c = extra.clone() if kind == 0 else None
    rb = extra if kind == 2 else None
    seq = torch.empty((batch, steps, units), dtype=torch.float32, device=p.device) if return_sequences else None
    with torch.no_grad():
        run_loop(kind, p, rk, rb, h, c, seq, act, ract, backwards, _TORCH)
    first = seq if seq is not None else h.clone()
    outputs = [out(backend, first, "float32", tuple(first.shape)), out(backend, h, "float32", (batch, units))]
    if c is not None:
        outputs.append(out(backend, c, "float32", (batch, units)))
    return outputs


def _common_activations(attrs: dict) -> bool:
    """An LSTM with ``tanh`` and a ``sigmoid`` recurrent activation (``lstm_loops``' fused steps)."""
    return int(attrs["activation"]) == 1 and int(attrs["recurrent_activation"]) == 2


def _f32(backend: TorchBackend, t: object) -> torch.Tensor:
    return values_of(backend, t).float()  # type: ignore[arg-type]


@torch_kernel(kn._NdflowLSTMTrain)
def lstm_train(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """An LSTM's loop in training: ``[outputs, h, c]`` and what its gradient needs (``zs``, ``cs``, ``hs``)."""
    p, rk, h0, c0 = (_f32(backend, t) for t in inputs)
    if _common_activations(attrs):
        with torch.no_grad():
            h, c, zs, cs, hs = lstm_loops.train_loop(p, rk, h0, c0, bool(attrs["go_backwards"]))
            first = hs.clone() if attrs["return_sequences"] else h.clone()
            values = [first, h.clone(), c.clone(), zs, cs, hs]
        return [out(backend, v, "float32", tuple(v.shape)) for v in values]

    def empty(shape: tuple[int, ...]) -> torch.Tensor:
        return torch.empty(shape, dtype=torch.float32, device=p.device)

    with torch.no_grad():
        values = shared_train.lstm_train(p, rk, h0, c0, attrs, empty, _TORCH)
    return [out(backend, v, "float32", tuple(v.shape)) for v in values]


@torch_kernel(kn._NdflowLSTMGrad)
def lstm_grad(backend: TorchBackend, inputs: tuple, attrs: dict) -> list[Output]:
    """``[dp, drk, dh0, dc0]`` of :func:`lstm_train` from its outputs' gradients and saved values."""
    values = [_f32(backend, t) for t in inputs]
    if _common_activations(attrs):
        with torch.no_grad():
            dp, drk, dh0, dc0 = lstm_loops.grad_loop(
                *values, bool(attrs["go_backwards"]), bool(attrs["return_sequences"])
            )
            grads = [dp, drk, dh0.clone(), dc0.clone()]
        return [out(backend, v, "float32", tuple(v.shape)) for v in grads]

    def zeros(shape: tuple[int, ...]) -> torch.Tensor:
        return torch.zeros(shape, dtype=torch.float32, device=values[0].device)

    with torch.no_grad():
        grads = shared_train.lstm_grad(*values, attrs, zeros, _TORCH)
    return [out(backend, v, "float32", tuple(v.shape)) for v in grads]
