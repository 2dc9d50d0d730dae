"""Recurrent layers, as TF.js's ``tf.layers.rnn`` / ``simpleRNN`` / ``gru`` / ``lstm``.

``RNN`` runs a cell (``recurrent_cells``) over the time axis of ``[batch, time, ...]`` inputs,
with ``return_sequences``, ``return_state``, ``go_backwards``, ``stateful`` (``reset_states``),
``initial_state`` (a call argument, or extra symbolic inputs) and masking (a ``[batch, time]`` mask:
masked steps carry the previous output and states forward). ``unroll`` is accepted and ignored,
as in TF.js. The input projection of every step is one matrix product before the loop; each step
adds the recurrent product, inside its own ``tidy``; gradients flow back through time by the tape. At inference
an LSTM or GRU runs its whole loop as one kernel instead (``rnn_fused.py``), with the same results.

Weights live in the cell and are named under the layer (``lstm_LSTM1/kernel``). Configs are TF.js's:
the cell's keys merged into the layer's, then the RNN keys (and ``cell`` for the generic ``RNN``).
Beyond TF.js: the cell's regularization penalties count in ``losses`` (TF.js drops them: a
``kernel_regularizer`` on an LSTM has no effect there), setting ``trainable`` on the layer also
sets it on its cell, and a stateful layer frees its states when disposed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from .. import ops
from ..core.globals import keep, tidy
from ..core.tensor import Tensor
from .engine.base import KERAS_NEUTRAL_KEYS, Layer
from .engine.topology import InputSpec, SymbolicTensor
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .recurrent_cells import GRUCell, LSTMCell, RNNCell, SimpleRNNCell, StackedRNNCells
from .rnn_fused import fused_run
from .rnn_steps import run_steps, standardize_args, step_masks
from .serialization import deserialize_keras_object, register_class
from .utils import accepted_kwargs, is_shape, shape_str, to_list

logger = logging.getLogger("ndflow")

_CELL_PARAMS: dict[type, frozenset[str]] = {}
_SHARED_WITH_CELL = ("name", "trainable", "input_shape", "batch_input_shape", "batch_size", "dtype", "input_dtype")


@register_class
class RNN(Layer):
    """Base class of recurrent layers: runs ``cell`` (or a list of cells, stacked) over time."""

    def __init__(
        self,
        cell: RNNCell | Sequence[RNNCell],
        return_sequences: bool = False,
        return_state: bool = False,
        go_backwards: bool = False,
        stateful: bool = False,
        unroll: bool = False,
        input_dim: int | None = None,
        input_length: int | None = None,
        **kwargs: Any,
    ) -> None:
        if cell is None:
            raise ValueError("cell property is missing for the constructor of RNN.")
        super().__init__(**kwargs)
        if isinstance(cell, list | tuple):
            cell = StackedRNNCells(cells=list(cell))
        if getattr(cell, "state_size", None) is None:
            raise ValueError(
                f"{self.name}: the RNN cell should have an attribute state_size (an int or a list of ints, one per "
                "state)"
            )
        if self.batch_input_shape is None and input_dim is not None:
            self.batch_input_shape = (kwargs.get("batch_size"), input_length, input_dim)
            self.dtype = kwargs.get("dtype") or kwargs.get("input_dtype") or "float32"
        self.cell = cell
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self._stateful = bool(stateful)
        self.unroll = bool(unroll)
        self.supports_masking = True
        self.input_spec = [InputSpec(ndim=3)]
        self.state_spec: list[InputSpec] | None = None
        self.states_: list[Tensor] | None = None
        self.num_constants: int | None = None

    # -- states -----------------------------------------------------------------------------------
    @property
    def states(self) -> list[Tensor | None]:
        """The current states of a stateful layer (Nones before there are any)."""
        if self.states_ is None:
            return [None] * len(to_list(self.cell.state_size))
        return self.states_

    @states.setter
    def states(self, states: list[Tensor] | None) -> None:
        self.states_ = states

    def _state_shapes(self, batch: int | None, input_shape: Sequence[int | None] | None = None) -> list[tuple]:
        """The shape of each state for a batch of ``batch``."""
        return [(batch, dim) for dim in to_list(self.cell.state_size)]

    def get_initial_state(self, inputs: Tensor) -> list[Tensor]:
        """All-zero states for ``inputs`` (``[batch, time, ...]``)."""
        return [ops.zeros(list(s)) for s in self._state_shapes(inputs.shape[0], tuple(inputs.shape))]

    def reset_states(self, states: Tensor | Sequence[Tensor] | None = None, training: bool = False) -> None:
        """Set the states of a stateful layer to zeros, or to ``states``."""
        if not self.stateful:
            raise RuntimeError("Cannot call reset_states() on an RNN Layer that is not stateful.")
        spec = self.input_spec[0] if self.input_spec else None
        batch = spec.shape[0] if spec is not None and spec.shape is not None else None
        if batch is None:
            raise ValueError(
                f"{self.name}: if an RNN is stateful, it needs to know its batch size. Specify the batch size of your "
                "input tensors: \n- If using a Sequential model, specify the batch size by passing a "
                "batch_input_shape option to your first layer.\n- If using the functional API, specify the batch "
                "size by passing a batch_shape option to your Input layer."
            )
        shapes = self._state_shapes(batch, spec.shape)
        if states is None:
            for s in self.states_ or []:
                if not s.is_disposed:
                    s.dispose()
            self.states_ = [keep(ops.zeros(list(s))) for s in shapes]
            return
        states = to_list(states)
        if len(states) != len(shapes):
            raise ValueError(
                f"Layer {self.name} expects {len(shapes)} state(s), but it received {len(states)} state value(s)."
            )
        for index, (value, shape) in enumerate(zip(states, shapes, strict=True)):
            if tuple(value.shape) != tuple(shape):
                raise ValueError(
                    f"State {index} is incompatible with layer {self.name}: expected shape={list(shape)}, "
                    f"received shape={list(value.shape)}"
                )
        old, self.states_ = self.states_, [keep(ops.clone(s)) for s in states]
        for s in old or []:
            if not s.is_disposed:
                s.dispose()

    def dispose_weights(self) -> int:
        """Free the weights (and the states of a stateful layer)."""
        for s in self.states_ or []:
            if not s.is_disposed:
                s.dispose()
        self.states_ = None
        return super().dispose_weights()

    # -- weights ----------------------------------------------------------------------------------
    @property
    def trainable(self) -> bool:
        """Whether the layer's (the cell's) weights are trained."""
        return self._trainable

    @trainable.setter
    def trainable(self, trainable: bool) -> None:
        self._trainable = bool(trainable)
        if getattr(self, "cell", None) is not None:
            self.cell.trainable = trainable

    @property
    def trainable_weights(self) -> list[Any]:
        """The cell's trainable weights (none when the layer is not trainable)."""
        return self.cell.trainable_weights if self.trainable else []

    @property
    def non_trainable_weights(self) -> list[Any]:
        """The cell's non-trainable weights (all its weights when the layer is not trainable)."""
        return self.cell.non_trainable_weights if self.trainable else self.cell.weights

    @property
    def losses(self) -> list[Any]:
        """The layer's losses and its cell's (regularization penalties; TF.js drops the cell's)."""
        return self._losses + list(self.cell.losses)

    def set_fast_weight_init_during_build(self, value: bool) -> None:
        """Skip costly initializers while building, in the cell too."""
        super().set_fast_weight_init_during_build(value)
        self.cell.set_fast_weight_init_during_build(value)

    # -- shapes -----------------------------------------------------------------------------------
    def compute_output_shape(self, input_shape: Any) -> Any:
        """``[batch, units]`` or ``[batch, time, units]``, then the state shapes if ``return_state``."""
        shape = tuple(input_shape if is_shape(input_shape) else input_shape[0])
        output_dim = to_list(self.cell.state_size)[0]
        output = (shape[0], shape[1], output_dim) if self.return_sequences else (shape[0], output_dim)
        if self.return_state:
            return [output, *self._state_shapes(shape[0], shape)]
        return output

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask if ``return_sequences``, else None (None for the states)."""
        if isinstance(mask, list | tuple):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self.states)
        return output_mask

    def build(self, input_shape: Any) -> None:
        """Build the cell on the per-step input shape; a stateful layer creates its states."""
        shape = tuple(input_shape if is_shape(input_shape) else input_shape[0])
        batch = shape[0] if self.stateful else None
        if self.stateful and batch is None:
            raise ValueError(
                f"{self.name}: if an RNN is stateful, it needs to know its batch size. Specify the batch size of your "
                "input tensors: \n- If using a Sequential model, specify the batch size by passing a "
                "batch_input_shape option to your first layer.\n- If using the functional API, specify the batch "
                "size by passing a batch_shape option to your Input layer."
            )
        self.input_spec[0] = InputSpec(shape=[batch, None, *shape[2:]])
        step_shape = (shape[0], *shape[2:])
        self.cell.build(step_shape)
        self.cell.built = True
        sizes = [s[-1] for s in self._state_shapes(shape[0], shape)]
        if self.state_spec is not None:
            if [spec.shape[-1] for spec in self.state_spec] != sizes:
                raise ValueError(
                    f"{self.name}: an initial_state was passed that is not compatible with the cell's state_size: "
                    f"state shapes {[shape_str(s.shape) for s in self.state_spec]}, state_size {self.cell.state_size}"
                )
        else:
            self.state_spec = [InputSpec(shape=[None, *s[1:]]) for s in self._state_shapes(None, shape)]
        self.built = True
        if self.stateful:
            self.reset_states()

    # -- calling ----------------------------------------------------------------------------------
    def apply(self, inputs: Any, kwargs: dict[str, Any] | None = None) -> Any:
        """Call the layer; ``initial_state`` (kwargs, or extra inputs ``[x, *states]``) sets the first states."""
        kwargs = dict(kwargs or {})
        initial_state = kwargs.pop("initial_state", None)
        constants = kwargs.pop("constants", None)
        if constants is not None:
            raise NotImplementedError(f"{self.name}: constants are not supported by RNN layers yet (as in TF.js).")
        listed = to_list(inputs)
        if (
            initial_state is not None
            and isinstance(inputs, list | tuple)
            and len(listed) > 1
            and not isinstance(listed[0], SymbolicTensor)
        ):
            initial_state = None  # a graph replaying a node recorded with symbolic states: they are in inputs
        inputs, initial_state, _ = standardize_args(inputs, initial_state)
        if initial_state is None:
            return super().apply(inputs, kwargs)
        kwargs["initial_state"] = initial_state
        symbolic = [isinstance(s, SymbolicTensor) for s in initial_state]
        if any(symbolic) != all(symbolic) or any(symbolic) != isinstance(inputs, SymbolicTensor):
            raise ValueError(
                f"{self.name}: the initial state of an RNN layer cannot be a mix of symbolic and concrete tensors"
            )
        if not any(symbolic):
            return super().apply(inputs, kwargs)
        self.state_spec = [InputSpec(shape=s.shape) for s in initial_state]
        original = self.input_spec
        self.input_spec = [*original, *self.state_spec]
        try:
            return super().apply([inputs, *initial_state], kwargs)
        finally:
            self.input_spec = [self.input_spec[0], *original[1:]]

    def call(
        self, inputs: Any, training: Any = None, mask: Any = None, initial_state: Any = None, **kwargs: Any
    ) -> Any:
        """Run the cell over the time axis of ``inputs``."""
        self.invoke_call_hook(inputs, {"training": training, "mask": mask, **kwargs})
        if isinstance(inputs, list | tuple):
            inputs = list(inputs)
            if initial_state is None and len(inputs) > 1:
                initial_state = inputs[1:]
            inputs = inputs[0]
        if isinstance(mask, list | tuple):
            mask = mask[0]
        if inputs.rank < 3:
            raise ValueError(f"{self.name}: input should be at least 3D, but is {inputs.rank}D.")
        return tidy(self._run, inputs, initial_state, mask, bool(training))

    def _run(self, inputs: Tensor, initial_state: Any, mask: Tensor | None, training: bool) -> Any:
        if initial_state is None:
            states = list(self.states_) if self.stateful and self.states_ is not None else None
            states = states or self.get_initial_state(inputs)
        else:
            states = [
                s if isinstance(s, Tensor) else ops.tensor(np.asarray(s, np.float32)) for s in to_list(initial_state)
            ]
        num_states = len(to_list(self.cell.state_size))
        if len(states) != num_states:
            raise ValueError(
                f"RNN Layer {self.name} has {num_states} state(s) but was passed {len(states)} initial state(s)."
            )
        fused = fused_run(self, inputs, states, mask, training)
        if fused is not None:
            output, new_states = fused
            if self.stateful:
                self.reset_states(new_states, training)
            return [output, *new_states] if self.return_state else output
        batch, time = inputs.shape[0], inputs.shape[1]
        fns = self.cell.make_step((batch, *inputs.shape[2:]), training)
        steps = list(ops.unstack(fns.project(inputs), 1))
        masks = step_masks(mask, batch, time)
        if self.go_backwards:
            steps.reverse()
            masks = masks[::-1] if masks is not None else None
        last, outputs, new_states = run_steps(fns.step, steps, states, masks, self.return_sequences, True)
        output = ops.stack(outputs, 1) if self.return_sequences else last
        if self.stateful:
            self.reset_states(new_states, training)
        return [output, *new_states] if self.return_state else output

    # -- serialization ----------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """The cell's config, the layer's base config, then the RNN keys (and ``cell`` for ``RNN`` itself)."""
        cell_config = self.cell.get_config()
        config: dict[str, Any] = {
            "return_sequences": self.return_sequences,
            "return_state": self.return_state,
            "go_backwards": self.go_backwards,
            "stateful": self.stateful,
            "unroll": self.unroll,
        }
        if self.num_constants is not None:
            config["num_constants"] = self.num_constants
        if self.get_class_name() == RNN.class_name:
            config["cell"] = {"class_name": self.cell.get_class_name(), "config": cell_config}
        return {**cell_config, **Layer.get_config(self), **config}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None, **_: Any) -> Layer:
        """Rebuild the cell from ``config['cell']``; the cell's keys merged into the config are skipped."""
        if "cell" not in config:
            raise ValueError(f"{cls.__name__}.from_config: the config has no 'cell'")
        cell = deserialize_keras_object(config["cell"], custom_objects=custom_objects, kind="layer")
        accepted = accepted_kwargs(cls, Layer) or set()
        return cls(**{k: v for k, v in config.items() if k in accepted and k != "cell"}, cell=cell)


class _CellRNN(RNN):
    """An RNN layer that makes its own cell from its arguments (SimpleRNN, GRU, LSTM, ConvLSTM2D)."""

    cell_class: type[RNNCell] = RNNCell

    def __init__(self, units: int | None = None, **kwargs: Any) -> None:
        if units is not None:
            kwargs["units"] = units
        cell_params = self._cell_params()
        cell_kwargs = {k: kwargs.pop(k) for k in list(kwargs) if k in cell_params}
        cell_kwargs.update({k: kwargs[k] for k in _SHARED_WITH_CELL if k in kwargs})
        cell = self.cell_class(**cell_kwargs)
        super().__init__(cell=cell, **kwargs)

    @classmethod
    def _cell_params(cls) -> frozenset[str]:
        params = _CELL_PARAMS.get(cls.cell_class)
        if params is None:
            params = frozenset(
                (accepted_kwargs(cls.cell_class, Layer) or set()) - (accepted_kwargs(Layer, Layer) or set())
            )
            _CELL_PARAMS[cls.cell_class] = params
        return params

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None, **_: Any) -> Layer:
        """A layer from its config (keys neither the layer nor its cell knows are dropped with a warning)."""
        accepted = (accepted_kwargs(RNN, Layer) or set()) | cls._cell_params()
        for key, neutral in KERAS_NEUTRAL_KEYS.items():  # newer Keras writes them; only their default loads
            if key in config and key not in accepted and config[key] != neutral:
                raise NotImplementedError(
                    f"{cls.__name__}.from_config: {key}={config[key]!r} is not supported (TF.js has no such option; "
                    f"only {key}={neutral!r} loads)"
                )
        unknown = [k for k in config if k not in accepted and k not in KERAS_NEUTRAL_KEYS]
        if unknown:
            logger.warning("%s.from_config: ignoring unknown config key(s) %s", cls.__name__, unknown)
        return cls(**{k: v for k, v in config.items() if k in accepted and k != "cell"})

    def __getattr__(self, name: str) -> Any:
        # The cell's hyper-parameters read as the layer's (``lstm.units``), as TF.js's getters do.
        if name.startswith("_") or name in ("cell", "cell_class"):
            raise AttributeError(name)
        cell = self.__dict__.get("cell")
        if cell is not None and name in self._cell_params() | {"kernel", "recurrent_kernel", "bias", "state_size"}:
            return getattr(cell, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")


@register_class
class SimpleRNN(_CellRNN):
    """A fully-connected RNN whose output is fed back as its input: ``nf.layers.simple_rnn(units=4)``."""

    cell_class = SimpleRNNCell


@register_class
class GRU(_CellRNN):
    """Gated recurrent unit layer (``reset_after=False`` as TF.js; ``True`` supported beyond TF.js)."""

    cell_class = GRUCell

    def __init__(self, units: int | None = None, **kwargs: Any) -> None:
        if kwargs.get("implementation") == 0:
            logger.warning("`implementation=0` has been deprecated, and now defaults to `implementation=1`.")
        super().__init__(units, **kwargs)


@register_class
class LSTM(_CellRNN):
    """Long short-term memory layer: ``nf.layers.lstm(units=4, return_sequences=True)``."""

    cell_class = LSTMCell

    def __init__(self, units: int | None = None, **kwargs: Any) -> None:
        if kwargs.get("implementation") == 0:
            logger.warning("`implementation=0` has been deprecated, and now defaults to `implementation=1`.")
        super().__init__(units, **kwargs)


rnn = layer_factory(RNN, "rnn", **FACTORY_DOCS["rnn"])
simple_rnn = layer_factory(SimpleRNN, "simple_rnn", **FACTORY_DOCS["simple_rnn"])
gru = layer_factory(GRU, "gru", **FACTORY_DOCS["gru"])
lstm = layer_factory(LSTM, "lstm", **FACTORY_DOCS["lstm"])


__all__ = ["GRU", "LSTM", "RNN", "SimpleRNN", "gru", "lstm", "rnn", "simple_rnn"]
