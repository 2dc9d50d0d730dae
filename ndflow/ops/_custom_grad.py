"""``custom_grad``: a function with its own gradient (TF.js's ``tf.customGrad``).

It lives with the ops, not in ``gradients/``, because ops use it too (softmax cross-entropy's gradient is
TF.js's custom one): recording the node on the tape is the engine's work, and converting the inputs is the
ops' (``to_tensor``). ``ndflow.gradients`` and ``nf.custom_grad`` export it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..core.engine import ENGINE
from ..core.tensor import Tensor
from .convert import to_tensor


def _input(x: Any, i: int) -> Tensor:
    if isinstance(x, Tensor):
        x.throw_if_disposed()
        return x
    if isinstance(x, float | int | list | tuple) and not isinstance(x, bool):
        return to_tensor(x, f"inputs[{i}]", "custom_grad")
    raise TypeError(f"custom_grad: argument 'inputs[{i}]' must be a Tensor or numbers, got {type(x).__name__}")


def custom_grad(f: Callable[..., Any]) -> Callable[..., Tensor]:
    """Give ``f`` its own gradient. ``f(*inputs, save)`` returns ``{"value": y, "grad_func": g}``
    (or a ``(y, g)`` tuple); ``g(dy, saved)`` returns one gradient per input. ``save(tensors)``
    keeps tensors for ``g``, as in TF.js."""

    def run(*inputs: Any) -> Tensor:
        xs = [_input(x, i) for i, x in enumerate(inputs)]
        saved: list[Tensor] = []

        def save(tensors: Sequence[Tensor]) -> None:
            saved.extend(tensors)

        ENGINE.kernel_depth += 1  # the ops inside f are not recorded: the custom gradient replaces them
        try:
            result = f(*xs, save)
        finally:
            ENGINE.kernel_depth -= 1
        if isinstance(result, dict):
            value, grad_func = result.get("value"), result.get("grad_func")
        elif isinstance(result, tuple) and len(result) == 2:
            value, grad_func = result
        else:
            value, grad_func = None, None
        if not isinstance(value, Tensor) or not callable(grad_func):
            if isinstance(value, Tensor) and all(value is not x for x in xs):
                value.dispose()
            raise TypeError("custom_grad: f must return {'value': tensor, 'grad_func': fn} or (value, fn)")
        if ENGINE.gradient_depth > 0 and ENGINE.kernel_depth == 0:

            def node_grad(dy: Tensor, kept: list[Tensor], attrs: dict) -> list[Any]:
                dxs = grad_func(dy, kept)
                dxs = list(dxs) if isinstance(dxs, list | tuple) else [dxs]
                if len(dxs) != len(xs):
                    raise ValueError(f"custom_grad: grad_func returned {len(dxs)} gradients for {len(xs)} inputs")
                return [(lambda g=g: g) for g in dxs]

            ENGINE.record("CustomGradient", tuple(xs), [value], None, node_grad, saved)
        return value

    return run
