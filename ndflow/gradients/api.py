"""Autodiff API with TF.js's calling conventions: ``grad``, ``grads``, ``value_and_grad(s)``,
``variable_grads``, ``custom_grad``.

``nf.grads(f)([x, y], dy=None)`` returns a list; ``nf.grad(f)(x, dy=None)`` returns one tensor.
Without ``dy`` the result is seeded with ones, as in TF.js (so ``grad(lambda x: x.square())`` is
``2x`` element-wise, and ``grad(grad(f))`` works); ``variable_grads`` requires a scalar.
While ``f`` runs, the engine records every kernel on its tape; the backward pass then runs each
kernel's registered gradient (``ndflow/gradients/<family>.py``) in reverse. Everything the tape
saved is freed when the outermost gradient call returns.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tape import backpropagate, filter_tape
from ..core.tensor import Tensor, Variable
from ..ops._custom_grad import custom_grad  # noqa: F401  (part of the gradient API)
from ..ops.convert import to_tensor


class ValueAndGrad(NamedTuple):
    value: Tensor
    grad: Tensor


class ValueAndGrads(NamedTuple):
    value: Tensor
    grads: list[Tensor]


class VariableGrads(NamedTuple):
    value: Tensor
    grads: dict[str, Tensor]


def _zeros(shape: tuple[int, ...], dtype: str) -> Tensor:
    from ..ops import zeros

    return zeros(shape, dtype)


def _add(a: Tensor, b: Tensor) -> Tensor:
    return ENGINE.run_kernel(kn.Add, (a, b), None)


def gradients(
    f: Callable[[], Tensor],
    xs: Sequence[Tensor],
    dy: Tensor | None = None,
    allow_no_gradients: bool = False,
    op: str = "grads",
) -> tuple[Tensor, list[Tensor | None]]:
    """``y = f()`` and dy/dx for each x in ``xs`` (None where y does not depend on x, if allowed)."""
    if not xs:
        raise ValueError(f"{op}: the list of tensors to differentiate with respect to is empty")
    if dy is not None and dy.dtype != "float32":
        raise TypeError(f"{op}: dy must be float32, got {dy.dtype}")

    def run() -> tuple[Tensor, list[Tensor | None]]:
        ENGINE.start_tape()
        try:
            y = ENGINE.tidy("forward", f, (), {})
        finally:
            ENGINE.end_tape()
        if not isinstance(y, Tensor):
            raise TypeError(f"{op}: f must return a Tensor, got {type(y).__name__}")
        tape = filter_tape(ENGINE.tape or [], xs, y)
        if not tape and not allow_no_gradients:
            raise ValueError(
                f"{op}: cannot compute the gradient of y=f(x) with respect to x: y does not depend on x "
                "(make sure f runs every op that leads from x to y)"
            )

        def backward() -> tuple[Tensor, list[Tensor | None]]:
            if dy is None:
                from ..ops import ones_like

                seed = ones_like(y)
            else:
                if dy.shape != y.shape:
                    raise ValueError(f"{op}: dy has shape {list(dy.shape)} but y=f(x) has shape {list(y.shape)}")
                seed = dy
            accumulated = {y.id: seed}
            scope = ENGINE.active_scope.id
            backpropagate(accumulated, tape, lambda fn: ENGINE.tidy(None, fn, (), {}), _add, _zeros, scope)
            return y, [accumulated.get(x.id) for x in xs]

        try:
            return ENGINE.tidy("backward", backward, (), {})
        finally:
            ENGINE.dispose_tape()

    try:
        return ENGINE.tidy("gradients", run, (), {})
    finally:
        ENGINE.dispose_tape()


def _check_grads(grads: list[Tensor | None], op: str) -> list[Tensor]:
    if any(g is None for g in grads):
        raise ValueError(
            f"{op}: one of the x's is not connected to y=f(x); make sure f uses every argument it is given"
        )
    return grads  # type: ignore[return-value]


def _args_list(args: Any, op: str) -> list[Any]:
    if isinstance(args, Tensor) or not isinstance(args, list | tuple):
        raise TypeError(f"{op}: the arguments must be a list of tensors, got {type(args).__name__}")
    return list(args)


def _arg(x: Any, name: str, op: str) -> Tensor:
    if isinstance(x, Tensor):
        x.throw_if_disposed()
        return x
    if isinstance(x, float | int | list | tuple) and not isinstance(x, bool):
        return to_tensor(x, name, op)
    raise TypeError(f"{op}: argument '{name}' must be a Tensor or numbers, got {type(x).__name__}")


def _dy(dy: Any, op: str) -> Tensor | None:
    return None if dy is None else _arg(dy, "dy", op)


def _differentiate(
    f: Callable[..., Tensor], args: list[Any], dy: Any, op: str, single: bool = False
) -> tuple[Tensor, list[Tensor]]:
    """``f(*args)`` and its gradients; numbers given as arguments become tensors freed afterwards."""
    xs = [_arg(a, "x" if single else f"args[{i}]", op) for i, a in enumerate(args)]
    temps = [x for x, a in zip(xs, args, strict=True) if x is not a]
    try:
        d = _dy(dy, op)
        if d is not None and d is not dy:
            temps.append(d)
        value, gs = gradients(lambda: f(*xs), xs, d, op=op)
        try:
            return value, _check_grads(gs, op)
        except ValueError:
            ENGINE.dispose([value, gs])
            raise
    finally:
        ENGINE.dispose(temps)


def value_and_grads(f: Callable[..., Tensor]) -> Callable[..., ValueAndGrads]:
    """``f(*xs)`` and its gradients with respect to each of ``xs``: ``value_and_grads(f)([x, y])``."""

    def run(args: Sequence[Any], dy: Any = None) -> ValueAndGrads:
        return ValueAndGrads(*_differentiate(f, _args_list(args, "value_and_grads"), dy, "value_and_grads"))

    return run


def grads(f: Callable[..., Tensor]) -> Callable[..., list[Tensor]]:
    """The gradients of ``f`` with respect to each argument: ``grads(f)([x, y], dy=None)`` -> list."""

    def run(args: Sequence[Any], dy: Any = None) -> list[Tensor]:
        value, gs = _differentiate(f, _args_list(args, "grads"), dy, "grads")
        value.dispose()
        return gs

    return run


def value_and_grad(f: Callable[[Tensor], Tensor]) -> Callable[..., ValueAndGrad]:
    """``f(x)`` and df/dx: ``value_and_grad(f)(x, dy=None)``."""

    def run(x: Any, dy: Any = None) -> ValueAndGrad:
        value, gs = _differentiate(f, [x], dy, "value_and_grad", single=True)
        return ValueAndGrad(value, gs[0])

    return run


def grad(f: Callable[[Tensor], Tensor]) -> Callable[..., Tensor]:
    """df/dx as a function of x: ``grad(f)(x, dy=None)``; nest for higher orders: ``grad(grad(f))``."""

    def run(x: Any, dy: Any = None) -> Tensor:
        value, gs = _differentiate(f, [x], dy, "grad", single=True)
        value.dispose()
        return gs[0]

    return run


def variable_grads(f: Callable[[], Tensor], var_list: Sequence[Variable] | None = None) -> VariableGrads:
    """The scalar ``f()`` and its gradients with respect to trainable variables, by variable name."""
    if var_list is None:
        var_list = [v for v in ENGINE.variables.values() if v.trainable]
    else:
        for v in var_list:
            if not isinstance(v, Variable):
                raise TypeError(f"variable_grads: var_list must hold Variables, got {type(v).__name__}")
            v.throw_if_disposed()
        var_list = [v for v in var_list if v.trainable]
    if not var_list:
        raise ValueError("variable_grads: there are no trainable variables to differentiate with respect to")
    value, gs = gradients(f, var_list, None, allow_no_gradients=True, op="variable_grads")
    if value.rank != 0:
        ENGINE.dispose([value, gs])
        raise ValueError(f"variable_grads: f must return a scalar, got shape {list(value.shape)}")
    if all(g is None for g in gs):
        value.dispose()
        raise ValueError("variable_grads: no variable is connected to the result of f; make sure f uses the variables")
    return VariableGrads(value, {v.name: g for v, g in zip(var_list, gs, strict=True) if g is not None})
