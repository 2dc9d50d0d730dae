"""A recurrent layer's time loop as one kernel at inference (``_NdflowRNNSequence``), where it gives what the
step-by-step loop (``rnn_steps.run_steps``) gives.

The step-by-step loop makes about fifteen kernel calls per step (the recurrent product, the gates' splits,
activations, products and sums, each step in its own ``tidy``): for an LSTM(128) over 50 steps at batch 1, 130 us
a step. The fused kernel runs the loop in the backend (on ``cpu``: the C module's loop, one product and one pass
over the gates per step). It applies to an ``LSTM`` or ``GRU`` layer (``LSTMCell``, ``GRUCell``) when nothing needs
the steps one by one: no mask, no dropout at work, float32 inputs, activations the kernel has (linear, tanh, sigmoid,
hardSigmoid, relu), and an active backend that registers the kernel. While a gradient is recorded (``fit``,
``nf.grads``), an LSTM runs ``_NdflowLSTMTrain`` instead, which keeps each step's gate pre-activations, cell states
and outputs, and whose gradient is one backward kernel through time (``gradients/rnn.py``); a GRU then takes the
step-by-step loop. Everything else takes the step-by-step loop, as before.
"""

from __future__ import annotations

from typing import Any

from .. import ops
from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.kernel_registry import get_kernel
from ..core.tensor import Tensor
from .activations import serialize_activation
from .recurrent_cells import GRUCell, LSTMCell

#: The activations the kernel computes (its codes, by serialized name).
ACTIVATION_CODES = {"linear": 0, "tanh": 1, "sigmoid": 2, "hard_sigmoid": 3, "hardSigmoid": 3, "relu": 4}


def _code(activation: Any) -> int | None:
    try:
        return ACTIVATION_CODES.get(serialize_activation(activation))
    except Exception:  # noqa: BLE001 - a custom activation the kernel does not know
        return None


def fused_run(
    layer: Any, inputs: Tensor, states: list[Tensor], mask: Tensor | None, training: bool
) -> tuple[Tensor, list[Tensor]] | None:
    """``(output, new_states)`` of ``layer`` (an ``RNN``) over ``inputs`` from ``states`` by the fused kernel, as
    the step-by-step loop would give them; None where the kernel does not apply (see the module's docstring)."""
    cell = layer.cell
    kind_of = type(cell)
    if kind_of is not LSTMCell and kind_of is not GRUCell:
        return None
    recording = ENGINE.gradient_depth > 0
    if mask is not None or inputs.dtype != "float32" or inputs.rank != 3 or (recording and kind_of is not LSTMCell):
        return None
    if training and (cell.dropout > 0 or cell.recurrent_dropout > 0):
        return None
    act, ract = _code(cell.activation), _code(cell.recurrent_activation)
    if act is None or ract is None or any(s.dtype != "float32" for s in states):
        return None
    kernel = kn._NdflowLSTMTrain if recording else kn._NdflowRNNSequence
    if get_kernel(kernel, ENGINE.backend_name) is None:
        return None
    batch = inputs.shape[0]
    fns = cell.make_step((batch, *inputs.shape[2:]), training)
    projected = fns.project(inputs)
    rk = cell.recurrent_kernel.read()
    if kind_of is LSTMCell:
        kind, extra = 0, [states[1]]
    elif not cell.reset_after:
        kind, extra = 1, []
    else:
        units = cell.units
        bias = cell.bias.read() if cell.bias is not None else None
        rb = ops.reshape(ops.split(bias, 2, 0)[1], [3 * units]) if bias is not None else ops.zeros([3 * units])
        kind, extra = 2, [rb]
    attrs = {
        "kind": kind,
        "activation": act,
        "recurrent_activation": ract,
        "go_backwards": bool(layer.go_backwards),
        "return_sequences": bool(layer.return_sequences),
    }
    if recording:  # an LSTM whose gradient is asked for: the loop keeps what its gradient needs (gradients/rnn.py)
        del attrs["kind"]
        results = ENGINE.run_kernel(kernel, (projected, rk, states[0], states[1]), attrs)
        return results[0], [results[1], results[2]]
    results = ENGINE.run_kernel(kernel, (projected, rk, states[0], *extra), attrs)
    return results[0], list(results[1:])
