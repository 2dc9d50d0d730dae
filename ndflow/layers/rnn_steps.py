"""The time loop of the recurrent layers: splitting call arguments into inputs, initial states and constants
(as TF.js's ``standardizeArgs``), and running a step function over the time axis with masks, each step in its
own ``tidy`` (TF.js's ``rnn`` in ``recurrent.ts``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from .utils import to_list

StepFunction = Callable[[Tensor, list[Tensor]], tuple[Tensor, list[Tensor]]]


def standardize_args(inputs: Any, initial_state: Any, constants: Any = None, num_constants: int | None = None) -> tuple:
    """TF.js's ``standardizeArgs``: split ``[inputs, *initial_state, *constants]`` into its three parts."""
    if isinstance(inputs, list | tuple):
        if initial_state is not None or constants is not None:
            raise ValueError("When inputs is an array, neither initial_state or constants should be provided")
        inputs = list(inputs)
        if num_constants is not None:
            constants = inputs[len(inputs) - num_constants :]
            inputs = inputs[: len(inputs) - num_constants]
        if len(inputs) > 1:
            initial_state = inputs[1:]
        inputs = inputs[0]

    def to_list_or_none(x: Any) -> list | None:
        return None if x is None else to_list(x)

    return inputs, to_list_or_none(initial_state), to_list_or_none(constants)


def _step_once(step: StepFunction, x_t: Tensor, states: list[Tensor], mask_t: Tensor | None) -> tuple:
    output, new_states = step(x_t, list(states))
    if mask_t is None:
        return output, list(new_states)
    keep_mask = ops.reshape(mask_t, [mask_t.shape[0]] + [1] * (output.rank - 1))
    drop_mask = ops.sub(ops.ones_like(keep_mask), keep_mask)
    output = ops.add(ops.mul(output, keep_mask), ops.mul(states[0], drop_mask))
    new_states = [
        ops.add(ops.mul(n, keep_mask), ops.mul(s, drop_mask)) for n, s in zip(new_states, states, strict=True)
    ]
    return output, new_states


def run_steps(
    step: StepFunction,
    inputs: Sequence[Tensor],
    initial_states: Sequence[Tensor],
    masks: Sequence[Tensor] | None = None,
    need_per_step_outputs: bool = False,
    dispose_inputs: bool = False,
) -> tuple[Tensor, list[Tensor], list[Tensor]]:
    """Run ``step`` over per-step ``inputs``: ``(last_output, per_step_outputs, final_states)``.

    Each step runs in its own ``tidy``; states the next steps no longer need are freed as the loop
    goes (the tape keeps what gradients need). ``masks[t]`` (``[batch]``, 1 = keep) carries the
    previous output and states through masked steps.
    """
    if not inputs:
        raise ValueError("rnn: the input sequence has no time steps")
    states, last = list(initial_states), None
    protected = {id(s) for s in states}
    outputs: list[Tensor] = []
    for t, x_t in enumerate(inputs):
        previous = [*states, last]
        last, states = tidy(_step_once, step, x_t, states, None if masks is None else masks[t])
        if dispose_inputs:
            x_t.dispose()
        if need_per_step_outputs:
            outputs.append(last)
            protected.add(id(last))
        live = {id(s) for s in states} | {id(last)} | protected
        freed: set[int] = set()
        for s in previous:
            if s is not None and id(s) not in live and id(s) not in freed and not s.is_disposed:
                freed.add(id(s))
                s.dispose()
    return last, outputs, states


def run_rnn(
    step_function: StepFunction,
    inputs: Tensor,
    initial_states: Sequence[Tensor],
    go_backwards: bool = False,
    mask: Tensor | None = None,
    constants: Any = None,
    unroll: bool = False,
    need_per_step_outputs: bool = False,
) -> tuple[Tensor, Tensor | None, list[Tensor]]:
    """TF.js's backend ``rnn``: iterate ``step_function`` over axis 1 of ``inputs`` (``[batch, time, ...]``).

    Returns ``(last_output, outputs [batch, time, ...] or None, new_states)``.
    """
    if inputs.rank < 3:
        raise ValueError(f"Input should be at least 3D, but is {inputs.rank}D.")
    if constants is not None:
        raise NotImplementedError("rnn: constants are not supported yet (as in TF.js).")

    def run() -> tuple:
        steps = list(ops.unstack(inputs, 1))
        masks = step_masks(mask, inputs.shape[0], inputs.shape[1])
        if go_backwards:
            steps.reverse()
            masks = masks[::-1] if masks is not None else None
        last, outputs, states = run_steps(step_function, steps, initial_states, masks, need_per_step_outputs, True)
        return last, ops.stack(outputs, 1) if need_per_step_outputs else None, states

    return tidy(run)


def step_masks(mask: Tensor | None, batch: int, time: int) -> list[Tensor] | None:
    """A ``[batch, time]`` (or ``[batch, time, 1]``) mask as one float ``[batch]`` tensor per step."""
    if mask is None:
        return None
    m = ops.cast(ops.cast(mask, "bool"), "float32")
    if m.size != batch * time:
        raise ValueError(f"rnn: the mask of shape {list(mask.shape)} does not match [batch, time] = [{batch}, {time}]")
    return list(ops.unstack(ops.reshape(m, [batch, time]), 1))
