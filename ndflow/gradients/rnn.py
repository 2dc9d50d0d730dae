"""The gradient of an LSTM's whole loop in training (``_NdflowLSTMTrain``, layers/rnn_fused.py): one backward kernel
(``_NdflowLSTMGrad``) gives the gradients of the input projection, the recurrent kernel and the initial states."""

from __future__ import annotations

from typing import Any

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.globals import keep
from ..core.kernel_registry import register_gradient
from ..core.tensor import Tensor
from ..ops.creation import clone


def _lstm_train(dys: list[Tensor], saved: list[Tensor], attrs: dict[str, Any]) -> list:
    """One ``_NdflowLSTMGrad`` call, made by the first input gradient asked for. Its four outputs are kept and added to
    the node's saved tensors, so the tape frees them with the rest once the backward pass is done; each gradient is a
    clone (the same data) that outlives it."""
    rk, h0, c0, zs, cs, hs = saved[:6]
    made: list[Tensor] = []

    def results() -> list[Tensor]:
        if not made:
            outs = ENGINE.run_kernel(kn._NdflowLSTMGrad, (dys[0], dys[1], dys[2], rk, h0, c0, zs, cs, hs), attrs)
            for t in outs:
                keep(t)
            saved.extend(outs)
            made.extend(outs)
        return made

    return [lambda i=i: clone(results()[i]) for i in range(4)]


# inputs (p, rk, h0, c0); outputs (out, h, c, zs, cs, hs)
register_gradient(kn._NdflowLSTMTrain, _lstm_train, inputs_to_save=[1, 2, 3], outputs_to_save=[False, False, False,
                  True, True, True])  # fmt: skip
