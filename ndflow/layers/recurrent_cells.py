"""RNN cells, as TF.js's ``tf.layers.simpleRNNCell`` / ``gruCell`` / ``lstmCell`` / ``stackedRNNCells``.

A cell computes one time step: ``cell.call([x, *states], training=...)`` returns
``[output, *new_states]``; ``state_size`` is an int or a list of ints (the first is the output
size). The ``RNN`` layer drives a cell over a sequence through ``make_step(input_shape, training)``,
which returns two functions: ``project`` maps inputs of any leading shape (a whole ``[batch, time,
...]`` sequence at once) to what ``step`` consumes, and ``step(projected_t, states)`` does the rest
of one step. The built-in cells put the input matrix product (and bias) in ``project``, so a
sequence costs one large matrix product for the inputs and one small one per step for the
recurrence. Custom cells need only ``state_size``, ``build`` and ``call``.

Dropout masks (``dropout`` on the inputs, ``recurrent_dropout`` on the state) are drawn once per
``make_step``, i.e. once per layer call, and reused at every time step, as in TF.js. Beyond TF.js:
they are never cached on the cell between calls (TF.js's generic ``RNN`` layer keeps the first
call's masks forever, and keeps them alive), and a ``GRUCell`` with ``reset_after=True`` (the
Keras / TF2 default, which TF.js refuses) is supported, so such models load and run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from ..ops import fused
from .activations import get_activation, serialize_activation
from .backend import in_train_phase
from .constraints import get_constraint, serialize_constraint
from .engine.base import Layer
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .initializers import Initializer, Ones, get_initializer, serialize_initializer
from .naming import name_scope
from .regularizers import get_regularizer, serialize_regularizer
from .serialization import deserialize_keras_object, register_class
from .utils import get_exactly_one_shape, is_shape, to_list

DropoutFunc = Callable[[Tensor, float], Tensor]


class StepFns(NamedTuple):
    """What a cell needs to run over a sequence: ``project`` (all steps at once) and ``step``."""

    project: Callable[[Tensor], Tensor]
    step: Callable[[Tensor, list[Tensor]], tuple[Tensor, list[Tensor]]]


def assert_positive_integer(value: Any, name: str, owner: str) -> None:
    """Raise ``ValueError`` naming ``owner`` and ``name`` unless ``value`` is a positive integer."""
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"{owner}: expected {name} to be a positive integer, but got {value!r}")


def _rate(value: float | None) -> float:
    return min(1.0, max(0.0, 0.0 if value is None else float(value)))


def generate_dropout_mask(
    ones: Callable[[], Tensor], rate: float, training: bool = False, count: int = 1, dropout_func: Any = None
) -> Tensor | list[Tensor]:
    """TF.js's ``generateDropoutMask``: ``count`` dropout masks of ``ones()`` (all ones unless ``training``)."""

    def dropped() -> Tensor:
        return dropout_func(ones(), rate) if dropout_func is not None else ops.dropout(ones(), rate)

    def create() -> Tensor:
        return in_train_phase(dropped, ones, training)

    if not count or count <= 1:
        return create()
    return [create() for _ in range(count)]


def _masks(shape: Sequence[int], rate: float, training: bool, count: int, func: Any) -> list[Tensor] | None:
    """``count`` masks of ``shape`` when dropping out at ``rate`` while training, else None."""
    if not (0 < rate < 1) or not training:
        return None
    return to_list(generate_dropout_mask(lambda: ops.ones(list(shape)), rate, True, count, func))


def apply_mask(x: Tensor, mask: Tensor | None) -> Tensor:
    """``x * mask``; a per-example mask is broadcast over the time axis of a sequence."""
    if mask is None:
        return x
    if x.rank > mask.rank:
        mask = ops.expand_dims(mask, 1)
    return ops.mul(x, mask)


def linear(x: Tensor, kernel: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ kernel + bias`` over the last axis of ``x`` (any leading shape), as one matrix product."""
    lead = list(x.shape[:-1])
    flat = ops.reshape(x, [-1, x.shape[-1]]) if x.rank != 2 else x
    out = fused.mat_mul(a=flat, b=kernel, bias=bias)
    return ops.reshape(out, [*lead, kernel.shape[-1]]) if x.rank != 2 else out


class RNNCell(Layer):
    """Base class of RNN cells: one time step of a recurrent computation."""

    state_size: Any = None

    def make_step(self, input_shape: Sequence[int | None], training: bool = False) -> StepFns:
        """Step functions for inputs of ``input_shape`` (``[batch, ...]``, no time axis): ``call`` per step."""

        def step(x: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
            outputs = to_list(self.call([x, *states], training=training))
            return outputs[0], outputs[1:]

        return StepFns(lambda x: x, step)

    def _call_step(self, inputs: Any, training: Any, expected: int) -> list[Tensor]:
        """``call`` of the built-in cells: one step through ``make_step``."""
        inputs = to_list(inputs)
        if len(inputs) != expected:
            raise ValueError(f"{self.get_class_name()} expects {expected} input Tensors, got {len(inputs)}.")

        def run() -> list[Tensor]:
            fns = self.make_step(tuple(inputs[0].shape), bool(training))
            output, states = fns.step(fns.project(inputs[0]), list(inputs[1:]))
            return [output, *states]

        return tidy(run)

    @property
    def output_size(self) -> int:
        """The size of the cell's output (the first state size)."""
        return to_list(self.state_size)[0]


class _GatedCell(RNNCell):
    """Shared arguments, weights and config of SimpleRNNCell, GRUCell and LSTMCell."""

    _gates = 1
    _has_recurrent_activation = False

    def __init__(
        self,
        units: int,
        activation: Any = "tanh",
        recurrent_activation: Any = "hardSigmoid",
        use_bias: bool = True,
        kernel_initializer: Any = None,
        recurrent_initializer: Any = None,
        bias_initializer: Any = None,
        kernel_regularizer: Any = None,
        recurrent_regularizer: Any = None,
        bias_regularizer: Any = None,
        activity_regularizer: Any = None,
        kernel_constraint: Any = None,
        recurrent_constraint: Any = None,
        bias_constraint: Any = None,
        dropout: float = 0,
        recurrent_dropout: float = 0,
        dropout_func: DropoutFunc | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        assert_positive_integer(units, "units", self.get_class_name())
        self.units = units
        self.activation = get_activation(activation)
        self.recurrent_activation = get_activation(recurrent_activation)
        self.use_bias = True if use_bias is None else bool(use_bias)
        self.kernel_initializer = get_initializer(kernel_initializer or "glorotNormal")
        self.recurrent_initializer = get_initializer(recurrent_initializer or "orthogonal")
        self.bias_initializer = get_initializer(bias_initializer or "zeros")
        self.kernel_regularizer = get_regularizer(kernel_regularizer)
        self.recurrent_regularizer = get_regularizer(recurrent_regularizer)
        self.bias_regularizer = get_regularizer(bias_regularizer)
        self._cell_activity_regularizer = get_regularizer(activity_regularizer)  # serialized, unused (as TF.js)
        self.kernel_constraint = get_constraint(kernel_constraint)
        self.recurrent_constraint = get_constraint(recurrent_constraint)
        self.bias_constraint = get_constraint(bias_constraint)
        self.dropout = _rate(dropout)
        self.recurrent_dropout = _rate(recurrent_dropout)
        self.dropout_func = dropout_func
        self.state_size: Any = units
        self.kernel = self.recurrent_kernel = self.bias = None

    def _bias_shape(self) -> list[int]:
        return [self.units * self._gates]

    def _bias_initializer(self) -> Any:
        return self.bias_initializer

    def build(self, input_shape: Any) -> None:
        """Create ``kernel``, ``recurrent_kernel`` and ``bias``."""
        shape = input_shape[0] if not is_shape(input_shape) else input_shape
        input_dim = get_exactly_one_shape(shape)[-1]
        if input_dim is None:
            raise ValueError(f"{self.get_class_name()}: the last dimension of the input must be known")
        n = self.units * self._gates
        self.kernel = self.add_weight(
            "kernel", [input_dim, n], None, self.kernel_initializer, self.kernel_regularizer, True,
            self.kernel_constraint,
        )  # fmt: skip
        self.recurrent_kernel = self.add_weight(
            "recurrent_kernel", [self.units, n], None, self.recurrent_initializer, self.recurrent_regularizer, True,
            self.recurrent_constraint,
        )  # fmt: skip
        self.bias = None
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", self._bias_shape(), None, self._bias_initializer(), self.bias_regularizer, True,
                self.bias_constraint,
            )  # fmt: skip
        self.built = True

    def _dropout_masks(self, input_shape: Sequence[int], training: bool, count: int = 1) -> tuple[Any, Any]:
        batch = input_shape[0]
        return (
            _masks(input_shape, self.dropout, training, count, self.dropout_func),
            _masks([batch, self.units], self.recurrent_dropout, training, count, self.dropout_func),
        )

    def call(self, inputs: Any, training: Any = None, **kwargs: Any) -> list[Tensor]:
        """One step: ``[x, *states]`` -> ``[output, *new_states]``."""
        return self._call_step(inputs, training, 1 + len(to_list(self.state_size)))

    def get_config(self) -> dict[str, Any]:
        """The Keras-format config (TF.js order: the base keys first)."""
        config = super().get_config()
        config.update({"units": self.units, "activation": serialize_activation(self.activation)})
        if self._has_recurrent_activation:
            config["recurrent_activation"] = serialize_activation(self.recurrent_activation)
        config.update(
            {
                "use_bias": self.use_bias,
                "kernel_initializer": serialize_initializer(self.kernel_initializer),
                "recurrent_initializer": serialize_initializer(self.recurrent_initializer),
                "bias_initializer": serialize_initializer(self.bias_initializer),
            }
        )
        config.update(self._extra_config_after_initializers())
        config.update(
            {
                "kernel_regularizer": serialize_regularizer(self.kernel_regularizer),
                "recurrent_regularizer": serialize_regularizer(self.recurrent_regularizer),
                "bias_regularizer": serialize_regularizer(self.bias_regularizer),
                "activity_regularizer": serialize_regularizer(self._cell_activity_regularizer),
                "kernel_constraint": serialize_constraint(self.kernel_constraint),
                "recurrent_constraint": serialize_constraint(self.recurrent_constraint),
                "bias_constraint": serialize_constraint(self.bias_constraint),
                "dropout": self.dropout,
                "recurrent_dropout": self.recurrent_dropout,
            }
        )
        return config

    def _extra_config_after_initializers(self) -> dict[str, Any]:
        return {}


@register_class
class SimpleRNNCell(_GatedCell):
    """``h = activation(x @ kernel + h_prev @ recurrent_kernel + bias)``."""

    def __init__(self, units: int, activation: Any = "tanh", **kwargs: Any) -> None:
        super().__init__(units, "tanh" if activation is None else activation, **kwargs)

    def make_step(self, input_shape: Sequence[int | None], training: bool = False) -> StepFns:
        """Input projection for all steps at once, then one matrix product per step."""
        in_mask, rec_mask = self._dropout_masks(input_shape, training)
        kernel, rk = self.kernel.read(), self.recurrent_kernel.read()
        bias = self.bias.read() if self.bias is not None else None

        def project(x: Tensor) -> Tensor:
            return linear(apply_mask(x, in_mask and in_mask[0]), kernel, bias)

        def step(p: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
            h = apply_mask(states[0], rec_mask and rec_mask[0])
            out = self.activation.apply(ops.add(p, ops.mat_mul(h, rk)))
            return out, [out]

        return StepFns(project, step)


@register_class
class GRUCell(_GatedCell):
    """Gated recurrent unit: update gate ``z``, reset gate ``r``, candidate ``hh`` (TF.js: ``reset_after=False``)."""

    _gates = 3
    _has_recurrent_activation = True

    def __init__(self, units: int, implementation: int | None = None, reset_after: bool = False, **kwargs: Any) -> None:
        super().__init__(units, **kwargs)
        self.implementation = implementation
        self.reset_after = bool(reset_after)

    def _bias_shape(self) -> list[int]:
        return [2, self.units * 3] if self.reset_after else [self.units * 3]

    def make_step(self, input_shape: Sequence[int | None], training: bool = False) -> StepFns:
        """Input projection for all steps at once; per step one (``reset_after``) or two matrix products."""
        in_mask, rec_mask = self._dropout_masks(input_shape, training, 3)
        u = self.units
        kernel, rk = self.kernel.read(), self.recurrent_kernel.read()
        bias = self.bias.read() if self.bias is not None else None
        input_bias = recurrent_bias = bias
        if self.reset_after and bias is not None:
            input_bias, recurrent_bias = (ops.reshape(b, [3 * u]) for b in ops.split(bias, 2, 0))
        rk_zr, rk_h = ops.split(rk, [2 * u, u], 1) if not self.reset_after else (None, None)

        def project(x: Tensor) -> Tensor:
            return linear(apply_mask(x, in_mask and in_mask[0]), kernel, input_bias)

        def step(p: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
            h = apply_mask(states[0], rec_mask and rec_mask[0])
            x_z, x_r, x_h = ops.split(p, 3, -1)
            if self.reset_after:
                inner = linear(h, rk, recurrent_bias)
                r_z, r_r, r_h = ops.split(inner, 3, -1)
                z = self.recurrent_activation.apply(ops.add(x_z, r_z))
                r = self.recurrent_activation.apply(ops.add(x_r, r_r))
                hh = self.activation.apply(ops.add(x_h, ops.mul(r, r_h)))
            else:
                r_z, r_r = ops.split(ops.mat_mul(h, rk_zr), 2, -1)
                z = self.recurrent_activation.apply(ops.add(x_z, r_z))
                r = self.recurrent_activation.apply(ops.add(x_r, r_r))
                hh = self.activation.apply(ops.add(x_h, ops.mat_mul(ops.mul(r, h), rk_h)))
            new_h = ops.add(ops.mul(z, h), ops.mul(ops.add(1, ops.neg(z)), hh))
            return new_h, [new_h]

        return StepFns(project, step)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format config, with ``implementation`` and ``reset_after``."""
        config = super().get_config()
        config.update({"implementation": self.implementation, "reset_after": self.reset_after})
        return config


class _UnitForgetBias(Initializer):
    """LSTM bias with the forget gate's quarter set to ones (``unit_forget_bias``)."""

    class_name = "CustomInit"

    def __init__(self, init: Initializer, units: int) -> None:
        self.init, self.units = init, units

    def apply(self, shape: Sequence[int], dtype: str | None = None) -> Tensor:
        """``concat(init([u]), ones([u]), init([2u]))``."""
        parts = [self.init.apply([self.units]), Ones().apply([self.units]), self.init.apply([2 * self.units])]
        try:
            return ops.concat(parts, 0)
        finally:
            for part in parts:
                part.dispose()


@register_class
class LSTMCell(_GatedCell):
    """Long short-term memory: input ``i``, forget ``f``, cell ``c`` and output ``o`` gates; states ``[h, c]``."""

    _gates = 4
    _has_recurrent_activation = True

    def __init__(
        self, units: int, unit_forget_bias: bool | None = None, implementation: int | None = None, **kwargs: Any
    ) -> None:
        super().__init__(units, **kwargs)
        self.unit_forget_bias = unit_forget_bias
        self.implementation = implementation
        self.state_size = [self.units, self.units]

    def _bias_initializer(self) -> Any:
        return _UnitForgetBias(self.bias_initializer, self.units) if self.unit_forget_bias else self.bias_initializer

    def _extra_config_after_initializers(self) -> dict[str, Any]:
        return {"unit_forget_bias": self.unit_forget_bias}

    def make_step(self, input_shape: Sequence[int | None], training: bool = False) -> StepFns:
        """Input projection for all steps at once, then one matrix product per step."""
        in_mask, rec_mask = self._dropout_masks(input_shape, training, 4)
        kernel, rk = self.kernel.read(), self.recurrent_kernel.read()
        bias = self.bias.read() if self.bias is not None else None

        def project(x: Tensor) -> Tensor:
            return linear(apply_mask(x, in_mask and in_mask[0]), kernel, bias)

        def step(p: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
            h = apply_mask(states[0], rec_mask and rec_mask[0])
            return self._gates_step(ops.add(p, ops.mat_mul(h, rk)), states[1], -1)

        return StepFns(project, step)

    def _gates_step(self, z: Tensor, c_prev: Tensor, axis: int) -> tuple[Tensor, list[Tensor]]:
        """``h, [h, c]`` from the summed gate pre-activations ``z`` (``[i, f, c, o]`` along ``axis``)."""
        z_i, z_f, z_c, z_o = ops.split(z, 4, axis)
        i = self.recurrent_activation.apply(z_i)
        f = self.recurrent_activation.apply(z_f)
        c = ops.add(ops.mul(f, c_prev), ops.mul(i, self.activation.apply(z_c)))
        o = self.recurrent_activation.apply(z_o)
        h = ops.mul(o, self.activation.apply(c))
        return h, [h, c]

    def get_config(self) -> dict[str, Any]:
        """The Keras-format config, with ``implementation``."""
        config = super().get_config()
        config["implementation"] = self.implementation
        return config


@register_class
class StackedRNNCells(RNNCell):
    """Cells run one after the other at each step; states are a flat list in reverse cell order."""

    def __init__(self, cells: Sequence[RNNCell], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(cells, list | tuple) or not cells:
            raise ValueError(f"StackedRNNCells: cells must be a non-empty list of RNN cells, got {cells!r}")
        for cell in cells:
            if getattr(cell, "state_size", None) is None:
                raise ValueError(f"StackedRNNCells: cell {cell!r} has no state_size")
        self.cells = list(cells)

    @property
    def state_size(self) -> list[int]:  # type: ignore[override]
        """Every cell's state sizes, last cell first (so ``state_size[0]`` is the output size)."""
        return [size for cell in reversed(self.cells) for size in to_list(cell.state_size)]

    def _nest(self, states: list[Tensor]) -> list[list[Tensor]]:
        states, nested = list(states), []
        for cell in reversed(self.cells):
            n = len(to_list(cell.state_size))
            nested.append(states[:n])
            states = states[n:]
        return nested[::-1]

    def build(self, input_shape: Any) -> None:
        """Build each cell under the name scope ``RNNCell_<i>`` on the previous cell's output shape."""
        shape = get_exactly_one_shape(input_shape[0] if not is_shape(input_shape) else input_shape)
        for i, cell in enumerate(self.cells):
            with name_scope(f"RNNCell_{i}"):
                cell.build(shape)
                cell.built = True
            shape = (shape[0], to_list(cell.state_size)[0])
        self.built = True

    def make_step(self, input_shape: Sequence[int | None], training: bool = False) -> StepFns:
        """The first cell's projection for the sequence; the later cells project their input each step."""
        fns, shape = [], tuple(input_shape)
        for cell in self.cells:
            fns.append(cell.make_step(shape, training))
            shape = (shape[0], to_list(cell.state_size)[0])

        def step(p: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
            x, new_nested = p, []
            for i, (f, cell_states) in enumerate(zip(fns, self._nest(states), strict=True)):
                x, new_states = f.step(x if i == 0 else f.project(x), cell_states)
                new_nested.append(new_states)
            return x, [s for cell_states in reversed(new_nested) for s in cell_states]

        return StepFns(fns[0].project, step)

    def call(self, inputs: Any, training: Any = None, **kwargs: Any) -> list[Tensor]:
        """One step of every cell."""
        return self._call_step(inputs, training, 1 + len(self.state_size))

    @property
    def losses(self) -> list[Any]:
        """The cells' losses (regularization penalties)."""
        return self._losses + [loss for cell in self.cells for loss in cell.losses]

    @property
    def trainable_weights(self) -> list[Any]:
        """The cells' trainable weights (none when not trainable)."""
        return [w for cell in self.cells for w in cell.trainable_weights] if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Any]:
        """The cells' non-trainable weights (all their weights when not trainable)."""
        weights = [w for cell in self.cells for w in cell.non_trainable_weights]
        if not self.trainable:
            return [w for cell in self.cells for w in cell.trainable_weights] + weights
        return weights

    def get_config(self) -> dict[str, Any]:
        """The base config, then ``cells``."""
        config = super().get_config()
        config["cells"] = [{"class_name": c.get_class_name(), "config": c.get_config()} for c in self.cells]
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None, **_: Any) -> Any:
        """Rebuild the cells (beyond TF.js, which keeps only ``cells``: the name and ``trainable`` too)."""
        cells = [deserialize_keras_object(c, custom_objects=custom_objects, kind="layer") for c in config["cells"]]
        kept = {k: config[k] for k in ("name", "trainable") if k in config}
        return cls(cells=cells, **kept)


simple_rnn_cell = layer_factory(SimpleRNNCell, "simple_rnn_cell", **FACTORY_DOCS["simple_rnn_cell"])
gru_cell = layer_factory(GRUCell, "gru_cell", **FACTORY_DOCS["gru_cell"])
lstm_cell = layer_factory(LSTMCell, "lstm_cell", **FACTORY_DOCS["lstm_cell"])
stacked_rnn_cells = layer_factory(StackedRNNCells, "stacked_rnn_cells", **FACTORY_DOCS["stacked_rnn_cells"])


__all__ = [
    "GRUCell", "LSTMCell", "RNNCell", "SimpleRNNCell", "StackedRNNCells", "gru_cell", "lstm_cell", "simple_rnn_cell",
    "stacked_rnn_cells",
]  # fmt: skip
