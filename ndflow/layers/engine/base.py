"""``Layer``: the base class of every layer and model, as TF.js's ``tf.layers.Layer``.

A layer is called with ``layer.apply(inputs, kwargs)`` or ``layer(inputs, **kwargs)``:

- on ``Tensor``s (or numpy arrays) it runs now: ``build`` on the first call, then ``call`` inside
  ``nf.tidy`` (only the outputs survive; an output that is an input is returned as a copy);
- on ``SymbolicTensor``s it adds a ``Node`` to the graph and returns symbolic outputs whose shapes
  come from ``compute_output_shape``.

Subclasses override ``build(input_shape)`` (creating weights with ``add_weight``),
``call(inputs, **kwargs)`` (kwargs carry ``training`` and ``mask``; accept ``**kwargs``),
``compute_output_shape`` and ``get_config`` (own keys first, then ``super().get_config()``), and
register themselves with ``nf.serialization.register_class``. Weights are named under the name
scope of the layer being built (``dense_Dense1/kernel``).

Reference counting follows TF.js: the first eager build or each symbolic call takes a reference;
``dispose()`` drops one and frees the weights at zero. Beyond TF.js, a model releases a layer once
per node it holds, so a layer shared inside one model is freed with it.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from ...core.arguments import unexpected_arguments
from ...core.tensor import Tensor, Variable
from ...core.trace_spans import SPANS, span_of
from ...ops import clone
from ...ops import tensor as make_tensor
from ..naming import get_uid, name_scope, to_snake_case
from ..serialization import Serializable
from ..utils import (
    Shape,
    accepted_kwargs,
    normalize_shape,
    shape_str,
    shape_to_json,
    singleton_or_list,
    tidy,
    to_list,
)
from ..variables import LayerVariable
from .layer_nodes import LayerNodesMixin
from .layer_weights import LayerWeightsMixin
from .topology import InputSpec, Node, SymbolicTensor

logger = logging.getLogger("ndflow")
_next_layer_id = itertools.count().__next__


class DisposeResult(NamedTuple):
    """What ``dispose()`` did: the reference count left and how many variables it freed."""

    ref_count_after_dispose: int
    num_disposed_variables: int


#: Config keys newer Keras versions write that TF.js's layers do not have, with the value that means "as TF.js":
#: dropped silently when they hold it, refused otherwise (a grouped convolution must not load as a plain one).
KERAS_NEUTRAL_KEYS: dict[str, Any] = {
    "groups": 1, "ragged": False, "sparse": False, "synchronized": False, "rms_scaling": False, "lora_rank": None,
    "time_major": False, "output_padding": None,
}  # fmt: skip


class Layer(LayerWeightsMixin, LayerNodesMixin, Serializable):
    """Base class of layers (and of models, which are layers made of layers)."""

    class_name = "Layer"

    def __init__(
        self,
        *,
        name: str | None = None,
        trainable: bool | None = True,
        input_shape: Sequence[int | None] | None = None,
        batch_input_shape: Sequence[int | None] | None = None,
        batch_size: int | None = None,
        dtype: str | None = None,
        input_dtype: str | None = None,
        weights: Sequence[Any] | None = None,
        **unknown: Any,
    ) -> None:
        if unknown:
            raise unexpected_arguments(type(self).__name__, list(unknown))
        self._call_hook: Callable[..., Any] | None = None
        self._added_weight_names: list[str] = []
        self._stateful = False
        self.id = _next_layer_id()
        self.activity_regularizer: Any = None
        self.input_spec: list[InputSpec | None] | None = None
        self.supports_masking = False
        self._trainable_weights: list[LayerVariable] = []
        self._non_trainable_weights: list[LayerVariable] = []
        self._losses: list[Callable[[], Tensor]] = []
        self._updates: list[Any] = []
        self._built = False
        self.inbound_nodes: list[Node] = []
        self.outbound_nodes: list[Node] = []
        if not name:
            prefix = self.get_class_name()
            name = f"{to_snake_case(prefix)}_{get_uid(prefix)}"
        self.name: str = name
        self._trainable = True if trainable is None else bool(trainable)
        self.batch_input_shape: Shape | None = None
        self.dtype: str | None = None
        if input_shape is not None or batch_input_shape is not None:
            if batch_input_shape is not None:
                self.batch_input_shape = normalize_shape(batch_input_shape, "batch_input_shape")
            else:
                self.batch_input_shape = (batch_size, *normalize_shape(input_shape, "input_shape"))
            self.dtype = dtype or input_dtype or "float32"
        self.initial_weights = list(weights) if weights is not None else None
        self._ref_count: int | None = None
        self.fast_weight_init_during_build = False

    # -- identity and state -----------------------------------------------------------------------
    @staticmethod
    def node_key(layer: Layer, node_index: int) -> str:
        """A unique key for a layer's node (``name_ib-<index>``)."""
        return f"{layer.name}_ib-{node_index}"

    @property
    def built(self) -> bool:
        """Whether ``build`` has run (the weights exist)."""
        return self._built

    @built.setter
    def built(self, value: bool) -> None:
        self._built = bool(value)

    @property
    def trainable(self) -> bool:
        """Whether the layer's weights are updated by training."""
        return self._trainable

    @trainable.setter
    def trainable(self, trainable: bool) -> None:
        for w in self._trainable_weights:
            w.trainable = trainable
        self._trainable = bool(trainable)

    @property
    def trainable_weights(self) -> list[LayerVariable]:
        """The weights training updates (none when the layer is not trainable)."""
        if not self._trainable:
            return []
        return [w for w in self._trainable_weights if w.trainable]

    @property
    def non_trainable_weights(self) -> list[LayerVariable]:
        """The weights training leaves alone."""
        if self._trainable:
            return [w for w in self._trainable_weights if not w.trainable] + self._non_trainable_weights
        return self._trainable_weights + self._non_trainable_weights

    @property
    def weights(self) -> list[LayerVariable]:
        """Trainable weights, then non-trainable ones."""
        return self.trainable_weights + self.non_trainable_weights

    @property
    def losses(self) -> list[Callable[[], Tensor]]:
        """Functions returning the layer's extra losses (regularization penalties)."""
        return self._losses

    @property
    def updates(self) -> list[Any]:
        """Pending state updates (kept for Keras parity)."""
        return self._updates

    @property
    def stateful(self) -> bool:
        """Whether the layer keeps state between calls (stateful RNNs)."""
        return self._stateful

    def reset_states(self) -> None:
        """Reset the state of a stateful layer."""
        if not self.stateful:
            raise RuntimeError("Cannot call the reset_states() method of a non-stateful Layer object.")

    # -- calling ----------------------------------------------------------------------------------
    def assert_input_compatibility(self, inputs: Any) -> None:
        """Raise ``ValueError`` if ``inputs`` do not match ``input_spec`` (rank, dtype, axes, shape)."""
        if not self.input_spec:
            return
        inputs_list = to_list(inputs)
        specs = [InputSpec(**s) if isinstance(s, dict) else s for s in to_list(self.input_spec)]
        if len(inputs_list) != len(specs):
            raise ValueError(
                f"Layer {self.name} expects {len(specs)} inputs, but it received {len(inputs_list)} input tensors."
            )
        for index, (x, spec) in enumerate(zip(inputs_list, specs, strict=True)):
            if spec is None:
                continue
            shape = tuple(x.shape)
            ndim = len(shape)
            where = f"Input {index} is incompatible with layer {self.name}"
            if spec.ndim is not None and ndim != spec.ndim:
                raise ValueError(f"{where}: expected ndim={spec.ndim}, found ndim={ndim} (shape {list(shape)})")
            if spec.max_ndim is not None and ndim > spec.max_ndim:
                raise ValueError(f"{where}: expected max_ndim={spec.max_ndim}, found ndim={ndim}")
            if spec.min_ndim is not None and ndim < spec.min_ndim:
                raise ValueError(
                    f"{where}: expected min_ndim={spec.min_ndim}, found ndim={ndim} (shape {shape_str(shape)})"
                )
            if spec.dtype is not None and x.dtype != spec.dtype:
                raise ValueError(f"{where}: expected dtype={spec.dtype}, found dtype={x.dtype}")
            for axis, value in spec.axes.items():
                axis = int(axis)
                if not -ndim <= axis < ndim:
                    raise ValueError(f"{where}: expected an axis {axis}, found shape {shape_str(shape)}")
                if value is not None and shape[axis] not in (value, None):
                    raise ValueError(
                        f"{where}: expected axis {axis} of input shape to have value {value} but got shape "
                        f"{shape_str(shape)}"
                    )
            if spec.shape is not None:
                for spec_dim, dim in zip(spec.shape, shape, strict=False):
                    if spec_dim is not None and dim is not None and spec_dim != dim:
                        raise ValueError(
                            f"{where}: expected shape={shape_str(spec.shape)}, found shape={shape_str(shape)}"
                        )

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        """The layer's computation on tensors (the identity here)."""
        return inputs

    def invoke_call_hook(self, inputs: Any, kwargs: dict[str, Any]) -> None:
        """Run the test hook set by ``set_call_hook``, if any."""
        if self._call_hook is not None:
            self._call_hook(inputs, kwargs)

    def set_call_hook(self, call_hook: Callable[..., Any]) -> None:
        """Call ``call_hook(inputs, kwargs)`` on each call (for tests)."""
        self._call_hook = call_hook

    def clear_call_hook(self) -> None:
        """Remove the call hook."""
        self._call_hook = None

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        return self.apply(inputs, kwargs)

    def apply(self, inputs: Any, kwargs: dict[str, Any] | None = None) -> Any:
        """Run the layer on tensors, or connect it to symbolic tensors (see the module docstring)."""
        kwargs = dict(kwargs or {})
        self.assert_not_disposed()
        inputs_list = to_list(inputs)
        symbolic = [isinstance(x, SymbolicTensor) for x in inputs_list]
        if inputs_list and any(symbolic) and not all(symbolic):
            raise ValueError(f"{self.name}: arguments to apply() must be all SymbolicTensors or all Tensors")
        if inputs_list and all(symbolic):
            with name_scope(self.name):
                self._maybe_build(inputs, inputs_list, eager=False)
                self.assert_input_compatibility(inputs)
                return self._apply_symbolic(inputs, inputs_list, kwargs)
        converted = [x if isinstance(x, Tensor) else None for x in inputs_list]
        try:
            for i, x in enumerate(inputs_list):
                if converted[i] is None:
                    converted[i] = make_tensor(np.asarray(x)) if not isinstance(x, np.ndarray) else make_tensor(x)
            tensors = converted if isinstance(inputs, list | tuple) else converted[0]
            with name_scope(self.name):
                if SPANS.on:  # a profile records spans: this call is a layer of its trace
                    return _apply_in_span(self, tensors, converted, kwargs)
                self._maybe_build(tensors, converted, eager=True)
                self.assert_input_compatibility(tensors)
                return self._apply_eager(tensors, converted, kwargs)
        finally:
            for x, c in zip(inputs_list, converted, strict=True):
                if c is not None and c is not x:
                    c.dispose()

    def _maybe_build(self, inputs: Any, inputs_list: list[Any], eager: bool) -> None:
        if self.built:
            return
        self.assert_input_compatibility(inputs)
        try:
            self.build(singleton_or_list([tuple(x.shape) for x in inputs_list]))
        except BaseException:  # free the weights made before the failing one (e.g. one over MAX_WEIGHT_BYTES)
            for weight in self.weights:
                if not weight.is_disposed:
                    weight.dispose()
            raise
        self.built = True
        if self.initial_weights is not None:
            self.set_weights(self.initial_weights)
        if self._ref_count is None and eager:
            self._ref_count = 1  # first use is eager: take the user's reference

    def _apply_eager(self, inputs: Any, inputs_list: list[Tensor], kwargs: dict[str, Any]) -> Any:
        if self.activity_regularizer is not None:
            raise NotImplementedError(
                f"{self.name}: layer invocation in the presence of activity regularizer(s) is not supported yet."
            )

        def run() -> Any:
            output = self.call(inputs, **kwargs)
            outputs = [
                clone(o) if isinstance(o, Variable) or any(o is x for x in inputs_list) else o for o in to_list(output)
            ]
            return singleton_or_list(outputs) if isinstance(output, list | tuple) else outputs[0]

        return tidy(run)

    def _apply_symbolic(self, inputs: Any, inputs_list: list[SymbolicTensor], kwargs: dict[str, Any]) -> Any:
        input_shape = singleton_or_list([x.shape for x in inputs_list])
        output_shape = self.compute_output_shape(input_shape)
        output_dtype = self.compute_output_dtype(inputs)
        self.warn_on_incompatible_input_shape(
            input_shape[0] if isinstance(inputs, list | tuple) and len(inputs_list) > 1 else input_shape
        )
        if isinstance(output_shape, list | tuple) and output_shape and isinstance(output_shape[0], list | tuple):
            output: Any = [
                SymbolicTensor(output_dtype, s, self, inputs_list, kwargs, self.name, i)
                for i, s in enumerate(output_shape)
            ]
        else:
            output = SymbolicTensor(output_dtype, output_shape, self, inputs_list, kwargs, self.name)
        self.add_inbound_node(inputs, output, None, None, input_shape, output_shape, kwargs)
        self._ref_count = (self._ref_count or 0) + 1
        if self.activity_regularizer is not None:
            raise NotImplementedError(
                f"{self.name}: layer invocation in the presence of activity regularizer(s) is not supported yet."
            )
        return output

    def compute_output_dtype(self, inputs: Any) -> str:
        """The dtype of symbolic outputs (float32, as TF.js guesses)."""
        return "float32"

    def warn_on_incompatible_input_shape(self, input_shape: Any) -> None:
        """Log a warning if ``input_shape`` disagrees with the layer's ``batch_input_shape``."""
        if self.batch_input_shape is None:
            return
        expected, got = shape_str(self.batch_input_shape), shape_str(input_shape)
        if len(input_shape) != len(self.batch_input_shape):
            logger.warning(
                "The rank of the input shape %s does not match batch_input_shape %s of %s", got, expected, self.name
            )
        elif any(d is not None and i is not None and i != d for d, i in zip(self.batch_input_shape, input_shape)):  # noqa: B905
            logger.warning(
                "The input shape %s does not match the expectation of layer %s: %s", got, self.name, expected
            )

    # -- shapes and masks -------------------------------------------------------------------------
    def build(self, input_shape: Any) -> None:
        """Create the weights for inputs of ``input_shape`` (nothing here)."""
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for ``input_shape`` (unchanged here)."""
        return input_shape

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The output mask: the input mask for layers that support masking, else None."""
        if not self.supports_masking:
            if mask is not None and any(m is not None for m in to_list(mask)):
                raise TypeError(f"Layer {self.name} does not support masking, but was passed an input mask.")
            return None
        return mask

    # -- serialization ----------------------------------------------------------------------------
    def get_config(self) -> dict[str, Any]:
        """``name``, ``trainable`` and, for a first layer, ``batch_input_shape`` and ``dtype``."""
        config: dict[str, Any] = {"name": self.name, "trainable": self.trainable}
        if self.batch_input_shape is not None:
            config["batch_input_shape"] = shape_to_json(self.batch_input_shape)
        if self.dtype is not None:
            config["dtype"] = self.dtype
        return config

    @classmethod
    def from_config(
        cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None, fast_weight_init: bool = False
    ) -> Layer:
        """A layer from its config; keys the constructor does not know are dropped with a warning."""
        accepted = accepted_kwargs(cls, Layer)
        config = dict(config)
        if accepted is not None:
            for key, neutral in KERAS_NEUTRAL_KEYS.items():  # newer Keras writes them; only their default is ok
                if key in config and key not in accepted:
                    if config[key] != neutral:
                        raise NotImplementedError(
                            f"{cls.__name__}.from_config: {key}={config[key]!r} is not supported (TF.js has no "
                            f"such option; only {key}={neutral!r} loads)"
                        )
                    del config[key]
            unknown = [k for k in config if k not in accepted]
            if unknown:
                logger.warning("%s.from_config: ignoring unknown config key(s) %s", cls.__name__, unknown)
                for key in unknown:
                    del config[key]
        return cls(**config)

    # -- memory -----------------------------------------------------------------------------------
    def dispose_weights(self) -> int:
        """Free every weight; returns how many."""
        weights = self.weights
        for w in weights:
            if not w.is_disposed:
                w.dispose()
        return len(weights)

    def assert_not_disposed(self) -> None:
        """Raise if the layer was disposed."""
        if self._ref_count == 0:
            raise RuntimeError(f"Layer '{self.name}' is already disposed.")

    def dispose(self) -> DisposeResult:
        """Drop one reference; at zero the weights are freed and the layer can no longer be used."""
        if not self.built:
            raise RuntimeError(f"Cannot dispose Layer {self.name} because it has not been built yet.")
        if self._ref_count is None:
            raise RuntimeError(f"Cannot dispose Layer {self.name} because it has not been used yet.")
        self.assert_not_disposed()
        return self._release(1)

    def _release(self, count: int) -> DisposeResult:
        """Drop ``count`` references (a model releasing the nodes it holds)."""
        if self._ref_count is None or self._ref_count == 0:
            return DisposeResult(self._ref_count or 0, 0)
        self._ref_count = max(0, self._ref_count - count)
        freed = self.dispose_weights() if self._ref_count == 0 else 0
        return DisposeResult(self._ref_count, freed)

    @property
    def is_disposed(self) -> bool:
        """Whether the layer was disposed."""
        return self._ref_count == 0

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r}>"


def _apply_in_span(layer: Layer, tensors: Any, converted: list[Tensor], kwargs: dict[str, Any]) -> Any:
    """``Layer.apply``'s eager build and call inside a span of the layer, while a profile records spans
    (core/trace_spans.py)."""
    with span_of("layer", layer):
        layer._maybe_build(tensors, converted, eager=True)
        layer.assert_input_compatibility(tensors)
        return layer._apply_eager(tensors, converted, kwargs)


__all__ = ["DisposeResult", "Layer"]
