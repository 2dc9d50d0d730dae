"""Wrapper layers, as TF.js's ``tf.layers.timeDistributed`` and ``tf.layers.bidirectional``.

``TimeDistributed(layer)`` applies ``layer`` to every time step of ``[batch, time, ...]`` inputs;
its weights are the wrapped layer's, named under the wrapper (``time_distributed_TimeDistributed1/kernel``).
``Bidirectional(layer)`` runs a copy of an RNN layer forwards (``forward_<name>``) and one backwards
(``backward_<name>``) and merges their outputs (``merge_mode`` ``'concat'``, ``'sum'``, ``'mul'``,
``'ave'``, or None for both); weights are ``bidirectional_Bidirectional1/forward_lstm_LSTM1/kernel``, ...
as in TF.js, so saved models load either way.

``TimeDistributed`` folds time into the batch (one call of the wrapped layer on ``[batch * time,
...]``), which gives TF.js's per-step results for layers that treat examples independently; it
calls the layer once per step, as TF.js does, where that matters (a stateful layer, or batch
normalization while training). Beyond TF.js: a ``Bidirectional`` layer reports its copies'
regularization losses (TF.js reports those of the unused original layer: none), and a
``TimeDistributed`` built on one batch size accepts another.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from .engine.base import Layer
from .engine.topology import InputSpec, SymbolicTensor
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .naming import name_scope
from .recurrent import RNN
from .rnn_steps import run_rnn, standardize_args
from .serialization import deserialize_keras_object, register_class
from .utils import accepted_kwargs, get_exactly_one_shape, get_exactly_one_tensor, is_shape, singleton_or_list, to_list

MERGE_MODES = ("sum", "mul", "concat", "ave")


class Wrapper(Layer):
    """Base class of layers that wrap another layer (its weights are the wrapped layer's)."""

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise TypeError(f"{type(self).__name__}: layer must be a Layer, got {type(layer).__name__}")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape: Any) -> None:
        """Nothing to build by default."""
        self.built = True

    @property
    def trainable(self) -> bool:
        """The wrapped layer's ``trainable``."""
        layer = self.__dict__.get("layer")
        return layer.trainable if layer is not None else False

    @trainable.setter
    def trainable(self, value: bool) -> None:
        layer = self.__dict__.get("layer")
        if layer is not None:
            layer.trainable = value

    @property
    def trainable_weights(self) -> list[Any]:
        """The wrapped layer's trainable weights."""
        return self.layer.trainable_weights

    @property
    def non_trainable_weights(self) -> list[Any]:
        """The wrapped layer's non-trainable weights."""
        return self.layer.non_trainable_weights

    @property
    def updates(self) -> list[Any]:
        """The wrapped layer's updates."""
        return self.layer.updates

    @property
    def losses(self) -> list[Any]:
        """The wrapped layer's losses."""
        return self.layer.losses

    def get_weights(self, trainable_only: bool = False) -> list[Tensor]:
        """The wrapped layer's weight values."""
        return self.layer.get_weights(trainable_only)

    def set_weights(self, weights: Any) -> None:
        """Assign the wrapped layer's weights."""
        self.layer.set_weights(weights)

    def dispose_weights(self) -> int:
        """Free the wrapped layer's weights."""
        return self.layer.dispose_weights()

    def set_fast_weight_init_during_build(self, value: bool) -> None:
        """Skip costly initializers while building, in the wrapped layer too."""
        super().set_fast_weight_init_during_build(value)
        self.layer.set_fast_weight_init_during_build(value)

    def get_config(self) -> dict[str, Any]:
        """``layer`` (its class name and config), then the base config."""
        config: dict[str, Any] = {
            "layer": {"class_name": self.layer.get_class_name(), "config": self.layer.get_config()}
        }
        config.update(super().get_config())
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None, **_: Any) -> Layer:
        """Rebuild the wrapped layer from ``config['layer']``, then the wrapper."""
        config = dict(config)
        layer = deserialize_keras_object(config.pop("layer"), custom_objects=custom_objects, kind="layer")
        accepted = accepted_kwargs(cls, Layer)
        if accepted is not None:
            config = {k: v for k, v in config.items() if k in accepted}
        return cls(layer=layer, **config)


def _sublayers(layer: Layer) -> Iterator[Layer]:
    """``layer`` and the layers inside it (models, wrappers, bidirectional copies)."""
    yield layer
    for attr in ("layers", "forward_layer", "backward_layer", "layer"):
        inner = layer.__dict__.get(attr)
        for sub in to_list(inner) if inner is not None else []:
            if isinstance(sub, Layer) and sub is not layer:
                yield from _sublayers(sub)


@register_class
class TimeDistributed(Wrapper):
    """Apply a layer to every time step: ``nf.layers.time_distributed(layer=nf.layers.dense(units=8))``."""

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        super().__init__(layer, **kwargs)
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        """Build the wrapped layer on the per-step shape ``[batch, ...]``."""
        shape = get_exactly_one_shape(input_shape)
        if len(shape) < 3:
            raise ValueError(
                f"{self.name}: TimeDistributed layer expects an input shape >= 3D, but received input shape "
                f"{list(shape)}"
            )
        self.input_spec = [InputSpec(shape=[None, *shape[1:]])]
        if not self.layer.built:
            self.layer.build((shape[0], *shape[2:]))
            self.layer.built = True
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The wrapped layer's output shape with the time axis put back."""
        shape = get_exactly_one_shape(input_shape)
        child = tuple(self.layer.compute_output_shape((shape[0], *shape[2:])))
        return (child[0], shape[1], *child[1:])

    def _per_step(self, training: bool) -> bool:
        """Whether folding time into the batch could change the results (then call per step, as TF.js)."""
        for layer in _sublayers(self.layer):
            if layer.stateful or (training and layer.get_class_name() == "BatchNormalization"):
                return True
        return False

    def call(self, inputs: Any, training: Any = None, **kwargs: Any) -> Tensor:
        """The wrapped layer on each time step, stacked back along axis 1."""
        self.invoke_call_hook(inputs, {"training": training, **kwargs})
        x = get_exactly_one_tensor(inputs)
        if x.rank < 3:
            raise ValueError(f"{self.name}: expected an input of rank >= 3, got shape {list(x.shape)}")
        if self._per_step(bool(training)):

            def step(x_t: Tensor, states: list[Tensor]) -> tuple[Tensor, list[Tensor]]:
                return get_exactly_one_tensor(self.layer.call(x_t, training=training)), []

            return run_rnn(step, x, [], need_per_step_outputs=True)[1]

        def folded() -> Tensor:
            batch, time = x.shape[0], x.shape[1]
            y = self.layer.call(ops.reshape(x, [batch * time, *x.shape[2:]]), training=training)
            y = get_exactly_one_tensor(y)
            return ops.reshape(y, [batch, time, *y.shape[1:]])

        return tidy(folded)


@register_class
class Bidirectional(Wrapper):
    """Run an RNN layer both ways and merge: ``nf.layers.bidirectional(layer=nf.layers.lstm(units=8))``."""

    def __init__(self, layer: Layer, merge_mode: str | None = "concat", weights: Any = None, **kwargs: Any) -> None:
        super().__init__(layer, **kwargs)
        if not isinstance(layer, RNN):
            raise TypeError(f"{self.name}: Bidirectional wraps an RNN layer, got {type(layer).__name__}")
        if merge_mode is not None and merge_mode not in MERGE_MODES:
            raise ValueError(
                f"{self.name}: {merge_mode!r} is not a valid merge_mode; valid values are "
                f"{', '.join(repr(m) for m in MERGE_MODES)} or None"
            )
        if weights:
            raise NotImplementedError("weights support is not implemented for Bidirectional layer yet.")
        config = layer.get_config()
        self.forward_layer = type(layer).from_config(dict(config))
        config["go_backwards"] = config.get("go_backwards") is not True
        self.backward_layer = type(layer).from_config(config)
        for copy, prefix in ((self.forward_layer, "forward_"), (self.backward_layer, "backward_")):
            copy.name = prefix + copy.name
            func = getattr(layer.cell, "dropout_func", None)
            if func is not None:
                copy.cell.dropout_func = func
        self.merge_mode = merge_mode
        self._stateful = layer.stateful
        self.return_sequences = layer.return_sequences
        self.return_state = layer.return_state
        self.supports_masking = True
        self._trainable = True
        self.input_spec = layer.input_spec
        self.num_constants = None

    @property
    def trainable(self) -> bool:
        """Whether the two copies' weights are trained."""
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value: bool) -> None:
        self._trainable = bool(value)
        for copy in (self.__dict__.get("forward_layer"), self.__dict__.get("backward_layer")):
            if copy is not None:
                copy.trainable = value

    @property
    def trainable_weights(self) -> list[Any]:
        """The forward copy's trainable weights, then the backward copy's."""
        return self.forward_layer.trainable_weights + self.backward_layer.trainable_weights

    @property
    def non_trainable_weights(self) -> list[Any]:
        """The forward copy's non-trainable weights, then the backward copy's."""
        return self.forward_layer.non_trainable_weights + self.backward_layer.non_trainable_weights

    @property
    def losses(self) -> list[Any]:
        """The two copies' losses (regularization penalties)."""
        return self.forward_layer.losses + self.backward_layer.losses

    @property
    def updates(self) -> list[Any]:
        """The two copies' updates."""
        return self.forward_layer.updates + self.backward_layer.updates

    def get_weights(self, trainable_only: bool = False) -> list[Tensor]:
        """The forward copy's weight values, then the backward copy's."""
        return self.forward_layer.get_weights(trainable_only) + self.backward_layer.get_weights(trainable_only)

    def set_weights(self, weights: Any) -> None:
        """The first half of ``weights`` to the forward copy, the rest to the backward copy."""
        weights = list(weights)
        half = len(weights) // 2
        self.forward_layer.set_weights(weights[:half])
        self.backward_layer.set_weights(weights[half:])

    def dispose_weights(self) -> int:
        """Free both copies' weights (and states)."""
        return self.forward_layer.dispose_weights() + self.backward_layer.dispose_weights()

    def set_fast_weight_init_during_build(self, value: bool) -> None:
        """Skip costly initializers while building, in both copies."""
        Layer.set_fast_weight_init_during_build(self, value)
        self.forward_layer.set_fast_weight_init_during_build(value)
        self.backward_layer.set_fast_weight_init_during_build(value)

    def reset_states(self, states: Any = None) -> None:
        """Reset both copies' states."""
        self.forward_layer.reset_states()
        self.backward_layer.reset_states()

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The merged output shape(s), then the states of both directions if ``return_state``."""
        shapes = self.forward_layer.compute_output_shape(input_shape)
        shapes = [tuple(s) for s in shapes] if not is_shape(shapes) else [tuple(shapes)]
        output, states = shapes[0], shapes[1:]
        if self.merge_mode == "concat":
            output = (*output[:-1], output[-1] * 2)
        outputs = [output, output] if self.merge_mode is None else [output]
        if self.return_state:
            return [*outputs, *states, *states]
        return singleton_or_list(outputs)

    def build(self, input_shape: Any) -> None:
        """Build the copies under the name scopes ``forward_<name>`` and ``backward_<name>``."""
        for copy in (self.forward_layer, self.backward_layer):
            with name_scope(copy.name):
                copy.build(input_shape)
                copy.built = True
        self.built = True

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask for sequences (twice without merging), None for the states."""
        if isinstance(mask, list | tuple):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        output_masks = [output_mask, output_mask] if self.merge_mode is None else [output_mask]
        if self.return_state:
            state_masks = [None] * len(self.forward_layer.states)
            return [*output_masks, *state_masks, *state_masks]
        return singleton_or_list(output_masks)

    def apply(self, inputs: Any, kwargs: dict[str, Any] | None = None) -> Any:
        """Call the layer; ``initial_state`` holds the forward states, then the backward ones."""
        kwargs = dict(kwargs or {})
        initial_state = kwargs.pop("initial_state", None)
        if kwargs.pop("constants", None) is not None:
            raise NotImplementedError("Support for constants in Bidirectional layers is not implemented yet.")
        listed = to_list(inputs)
        if initial_state is not None and len(listed) > 1 and not isinstance(listed[0], SymbolicTensor):
            initial_state = None  # a graph replaying a node recorded with symbolic states: they are in inputs
        inputs, initial_state, _ = standardize_args(inputs, initial_state)
        if not initial_state:
            return super().apply(inputs, kwargs)
        if len(initial_state) % 2:
            raise ValueError(
                f"{self.name}: when passing initial_state to a Bidirectional RNN, the state should be a list "
                "containing the states of the underlying RNNs (forward, then backward)."
            )
        kwargs["initial_state"] = initial_state
        specs = [InputSpec(shape=s.shape) for s in initial_state]
        half = len(specs) // 2
        self.forward_layer.state_spec, self.backward_layer.state_spec = specs[:half], specs[half:]
        symbolic = [isinstance(s, SymbolicTensor) for s in initial_state]
        if any(symbolic) != all(symbolic) or any(symbolic) != isinstance(inputs, SymbolicTensor):
            raise ValueError(
                "The initial state of a Bidirectional layer cannot be specified as a mix of symbolic and "
                "non-symbolic tensors"
            )
        if not any(symbolic):
            return super().apply(inputs, kwargs)
        original = self.input_spec
        self.input_spec = [*to_list(original), *specs]
        try:
            return super().apply([inputs, *initial_state], kwargs)
        finally:
            self.input_spec = original

    def call(
        self, inputs: Any, training: Any = None, mask: Any = None, initial_state: Any = None, **kwargs: Any
    ) -> Any:
        """Both directions, merged."""
        self.invoke_call_hook(inputs, {"training": training, "mask": mask, **kwargs})
        if isinstance(inputs, list | tuple):
            inputs = list(inputs)
            if initial_state is None and len(inputs) > 1:
                initial_state = inputs[1:]
            inputs = inputs[0]
        return tidy(self._run, inputs, initial_state, {"training": training, "mask": mask})

    def _run(self, inputs: Tensor, initial_state: Any, common: dict[str, Any]) -> Any:
        if initial_state is None:
            y = self.forward_layer.call(inputs, **common)
            y_rev = self.backward_layer.call(inputs, **common)
        else:
            initial_state = to_list(initial_state)
            half = len(initial_state) // 2
            y = self.forward_layer.call(inputs, initial_state=initial_state[:half], **common)
            y_rev = self.backward_layer.call(inputs, initial_state=initial_state[half:], **common)
        states: list[Tensor] = []
        if self.return_state:
            states = [*y[1:], *y_rev[1:]]
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = ops.reverse(y_rev, 1)
        if self.merge_mode == "concat":
            output: Any = ops.concat([y, y_rev], -1)
        elif self.merge_mode == "sum":
            output = ops.add(y, y_rev)
        elif self.merge_mode == "ave":
            output = ops.mul(0.5, ops.add(y, y_rev))
        elif self.merge_mode == "mul":
            output = ops.mul(y, y_rev)
        else:
            output = [y, y_rev]
        if self.return_state:
            return [*to_list(output), *states]
        return output

    def get_config(self) -> dict[str, Any]:
        """``merge_mode``, then the wrapper's config."""
        config: dict[str, Any] = {"merge_mode": self.merge_mode}
        config.update(super().get_config())
        return config

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None, **_: Any) -> Layer:
        """Rebuild the RNN layer, then the wrapper."""
        if config.get("num_constants") is not None:
            raise NotImplementedError(
                "Deserialization of a Bidirectional layer with num_constants present is not supported yet."
            )
        return super().from_config(config, custom_objects)


time_distributed = layer_factory(TimeDistributed, "time_distributed", **FACTORY_DOCS["time_distributed"])
bidirectional = layer_factory(Bidirectional, "bidirectional", **FACTORY_DOCS["bidirectional"])


__all__ = ["Bidirectional", "TimeDistributed", "Wrapper", "bidirectional", "time_distributed"]
