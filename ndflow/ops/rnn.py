"""RNN cells: ``basic_lstm_cell`` and ``multi_rnn_cell``, composites of other ops as in TF.js."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .activation import sigmoid
from .arithmetic import add, mul
from .matrix import mat_mul
from .slicing import concat, slice
from .sparse_dense import _Args
from .unary import tanh

_OP_ERRORS = (ValueError, TypeError, IndexError)


def _reraise(op: str, where: str, exc: Exception) -> Exception:
    """``exc`` with its message prefixed by ``op`` (for errors raised by the ops a composite calls)."""
    if type(exc) not in _OP_ERRORS:
        return exc
    return type(exc)(f"{op}: {where}{exc}")


def basic_lstm_cell(
    forget_bias: TensorLike,
    lstm_kernel: TensorLike,
    lstm_bias: TensorLike,
    data: TensorLike,
    c: TensorLike,
    h: TensorLike,
) -> tuple[Tensor, Tensor]:
    """One step of a basic LSTM cell; returns ``(new_c, new_h)``.

    ``[data, h] @ lstm_kernel + lstm_bias`` is split into the input gate ``i``, the new input
    ``j``, the forget gate ``f`` and the output gate ``o``; then
    ``new_c = sigmoid(i) * tanh(j) + c * sigmoid(forget_bias + f)`` and
    ``new_h = tanh(new_c) * sigmoid(o)``.
    """
    op = "basic_lstm_cell"
    with _Args(op) as arg:
        fb = arg(forget_bias, "forget_bias")
        kernel = arg(lstm_kernel, "lstm_kernel")
        bias = arg(lstm_bias, "lstm_bias")
        x = arg(data, "data")
        c_t = arg(c, "c")
        h_t = arg(h, "h")
        for name, t in (("lstm_kernel", kernel), ("data", x), ("h", h_t)):
            if t.rank != 2:
                raise ValueError(f"{op}: argument '{name}' must be a matrix (rank 2), got shape {list(t.shape)}")
        if kernel.shape[1] % 4:
            raise ValueError(
                f"{op}: lstm_kernel must have 4 * units columns (gates i, j, f, o), got shape {list(kernel.shape)}"
            )

        def step() -> tuple[Tensor, Tensor]:
            res = add(mat_mul(concat([x, h_t], 1), kernel), bias)
            if res.rank != 2 or res.shape[1] != kernel.shape[1]:
                raise ValueError(
                    f"lstm_bias of shape {list(bias.shape)} must broadcast to the gates' shape "
                    f"{[res.shape[0], kernel.shape[1]]}"
                )
            batch, units = res.shape[0], res.shape[1] // 4
            i, j, f, o = (slice(res, [0, k * units], [batch, units]) for k in range(4))
            new_c = add(mul(sigmoid(i), tanh(j)), mul(c_t, sigmoid(add(fb, f))))
            new_h = mul(tanh(new_c), sigmoid(o))
            return new_c, new_h

        try:
            return ENGINE.tidy(None, step, (), {})
        except _OP_ERRORS as exc:
            raise _reraise(op, "", exc) from None


LSTMCell = Callable[[Tensor, Tensor, Tensor], Sequence[Tensor]]


def multi_rnn_cell(
    lstm_cells: Sequence[LSTMCell], data: TensorLike, c: Sequence[TensorLike], h: Sequence[TensorLike]
) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
    """One step of a stack of cells, each ``cell(input, c[i], h[i]) -> (new_c, new_h)`` fed the
    ``new_h`` of the one before; returns ``(new_cs, new_hs)``."""
    op = "multi_rnn_cell"
    if isinstance(lstm_cells, Tensor) or not isinstance(lstm_cells, list | tuple):
        raise TypeError(f"{op}: argument 'lstm_cells' must be a list of functions, got {type(lstm_cells).__name__}")
    for i, cell in enumerate(lstm_cells):
        if not callable(cell):
            raise TypeError(f"{op}: lstm_cells[{i}] must be a function, got {type(cell).__name__}")
    for name, states in (("c", c), ("h", h)):
        if isinstance(states, Tensor) or not isinstance(states, list | tuple):
            raise TypeError(f"{op}: argument '{name}' must be a list of tensors, got {type(states).__name__}")
        if len(states) < len(lstm_cells):
            raise ValueError(f"{op}: argument '{name}' has {len(states)} states for {len(lstm_cells)} cells")
    with _Args(op) as arg:
        x = arg(data, "data")
        cs = [arg(t, f"c[{i}]") for i, t in enumerate(c)]
        hs = [arg(t, f"h[{i}]") for i, t in enumerate(h)]

        def run() -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
            new_c, new_h = [], []
            current = x
            for i, cell in enumerate(lstm_cells):
                try:
                    output = cell(current, cs[i], hs[i])
                except _OP_ERRORS as exc:
                    raise _reraise(op, f"lstm_cells[{i}]: ", exc) from None
                if (
                    not isinstance(output, list | tuple)
                    or len(output) != 2
                    or not all(isinstance(t, Tensor) for t in output)
                ):
                    raise TypeError(f"{op}: lstm_cells[{i}] must return a pair of tensors (c, h), got {output!r}")
                new_c.append(output[0])
                new_h.append(output[1])
                current = output[1]
            return tuple(new_c), tuple(new_h)

        result = ENGINE.tidy(None, run, (), {})
        # A cell may hand back one of the converted states: it is a result now, not a temporary.
        returned = {id(t) for group in result for t in group}
        arg.temps = [t for t in arg.temps if id(t) not in returned]
        return result


__all__ = ["basic_lstm_cell", "multi_rnn_cell"]
