"""The gradient tape: what the engine records while a gradient function runs, and backprop over it.

A :class:`TapeNode` is one kernel run: its inputs and outputs (tensor objects, used for their ids
and shapes), its attributes, the tensors its gradient needs (``saved``: kept clones that share the
data) and the gradient function registered for the kernel. Backprop walks the nodes that lie on a
path from the sources ``xs`` to ``y`` in reverse, accumulating one gradient per tensor id.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .kernel_registry import GradConfig
from .tensor import Tensor

GradThunk = Callable[[], Tensor]
GradFunc = Callable[[Any, list[Tensor], dict[str, Any]], Sequence[GradThunk | None]]


class TapeNode:
    __slots__ = ("id", "kernel_name", "inputs", "outputs", "attrs", "saved", "grad_func", "relevant")

    def __init__(
        self,
        node_id: int,
        kernel_name: str,
        inputs: tuple[Tensor, ...],
        outputs: list[Tensor],
        attrs: dict[str, Any] | None,
        saved: list[Tensor],
        grad_func: GradFunc | None,
    ) -> None:
        self.id = node_id
        self.kernel_name = kernel_name
        self.inputs = inputs
        self.outputs = outputs
        self.attrs = attrs or {}
        self.saved = saved
        self.grad_func = grad_func
        self.relevant: list[int] = []  # indices of inputs whose gradient is wanted


def saved_tensors(config: GradConfig | None, inputs: tuple[Tensor, ...], outputs: list[Tensor]) -> list[Tensor]:
    """The tensors a kernel's gradient needs: the inputs it names (or all), then the outputs it names."""
    if config is None:
        return []
    if config.save_all_inputs:
        chosen = list(inputs)
    else:
        chosen = [inputs[i] for i in (config.inputs_to_save or ())]
    if config.outputs_to_save:
        chosen += [o for o, keep in zip(outputs, config.outputs_to_save, strict=False) if keep]
    return chosen


def filter_tape(tape: list[TapeNode], xs: Sequence[Tensor], y: Tensor) -> list[TapeNode]:
    """The nodes on a path from any of ``xs`` to ``y``, each knowing which inputs matter."""
    from_x = {x.id for x in xs}
    nodes_from_x = set()
    for node in tape:
        if any(t.id in from_x for t in node.inputs):
            nodes_from_x.add(node.id)
            from_x.update(o.id for o in node.outputs)
    lead_to_y = {y.id}
    nodes_to_y = set()
    for node in reversed(tape):
        if any(o.id in lead_to_y for o in node.outputs):
            nodes_to_y.add(node.id)
            lead_to_y.update(t.id for t in node.inputs)
    filtered = []
    for node in tape:
        if node.id in nodes_from_x and node.id in nodes_to_y:
            # Integer and bool tensors carry no gradient: ops producing them (comparisons, arg_max,
            # casts to int) act as stop-gradients instead of failing, unlike TF.js.
            node.relevant = [
                i
                for i, t in enumerate(node.inputs)
                if t.id in from_x and t.id in lead_to_y and t.dtype in ("float32", "complex64")
            ]
            if node.relevant:
                filtered.append(node)
    return filtered


def backpropagate(
    grads: dict[int, Tensor],
    tape: list[TapeNode],
    tidy: Callable[[Callable[[], Tensor]], Tensor],
    add: Callable[[Tensor, Tensor], Tensor],
    zeros: Callable[[tuple[int, ...], str], Tensor],
    scope_id: int,
) -> None:
    """Walk ``tape`` backwards, adding each node's input gradients into ``grads`` (by tensor id).

    ``scope_id`` is the backward pass's scope: partial sums made in it may be freed early.
    """
    for node in reversed(tape):
        dys = [grads.get(o.id) for o in node.outputs]
        if all(d is None for d in dys):
            continue  # no gradient flows into this node's outputs
        if node.grad_func is None:
            raise NotImplementedError(
                f"Cannot compute gradient: no gradient function is registered for kernel '{node.kernel_name}'"
            )
        dys = [d if d is not None else zeros(o.shape, o.dtype) for d, o in zip(dys, node.outputs, strict=True)]
        thunks = node.grad_func(dys[0] if len(dys) == 1 else dys, node.saved, node.attrs)
        for i in node.relevant:
            thunk = thunks[i] if i < len(thunks) else None
            if thunk is None:
                raise ValueError(
                    f"Cannot backprop through input {i} of kernel '{node.kernel_name}': its gradient is not defined"
                )
            dx = tidy(thunk)
            x = node.inputs[i]
            if dx.dtype != "float32":
                dx.dispose()
                raise TypeError(
                    f"Error in gradient for kernel '{node.kernel_name}': the gradient of input {i} must be "
                    f"float32, got {dx.dtype}"
                )
            if dx.shape != x.shape:
                shape = dx.shape
                dx.dispose()
                raise ValueError(
                    f"Error in gradient for kernel '{node.kernel_name}': the gradient of input {i} has shape "
                    f"{list(shape)}, which does not match the input's shape {list(x.shape)}"
                )
            previous = grads.get(x.id)
            if previous is None:
                grads[x.id] = dx
            else:
                grads[x.id] = add(previous, dx)
                # Free partial sums early, but never a tensor the caller gave (dy) or one still in use.
                for t in (previous, dx):
                    if t.scope_id == scope_id and not any(v is t for v in grads.values()):
                        t.dispose()
