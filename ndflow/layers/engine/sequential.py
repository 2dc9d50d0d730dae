"""``Sequential`` (``nf.sequential(layers=[...])``, ``add`` / ``pop``): a linear stack of layers.

Its first layer needs ``input_shape`` (or ``batch_input_shape``), which creates the model's ``InputLayer``
(``<layer name>_input``); running, summarizing and setting weights build an internal functional model
(``<name>_model``) once; ``layers`` lists the added layers only (no ``InputLayer``), as in TF.js.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ...core.tensor import Tensor
from ...core.types import ModelData, ModelOutput
from ...train import Optimizer
from ..naming import get_uid
from ..serialization import register_class
from .base import Layer
from .compiled_inference import release_compiled
from .container import Container, deserialize_layer
from .inputs import input as make_input
from .models import LayersModel
from .tfjs_args import tfjs_config
from .topology import Node, get_source_inputs


@register_class
class Sequential(LayersModel):
    """A model whose layers are applied one after the other."""

    def __init__(self, layers: Sequence[Layer] | None = None, name: str | None = None) -> None:
        super().__init__(inputs=[], outputs=[])
        self.trainable = True
        self.built = False
        self.name = name if name is not None else get_uid("sequential_")
        self.model: LayersModel | None = None
        for layer in layers or ():
            self.add(layer)

    def _check_shape(self, layer: Layer) -> None:
        shape = layer.inbound_nodes[0].output_tensors[0].shape
        if any(d is not None and d < 0 for d in shape):
            raise ValueError(
                f"Negative dimension size caused by adding layer {layer.name} with input shape "
                f"{list(layer.inbound_nodes[0].input_tensors[0].shape)}"
            )

    def add(self, layer: Layer) -> None:
        """Append ``layer`` (or a single-input, single-output model) to the stack."""
        if not isinstance(layer, Layer):
            raise TypeError(f"Sequential.add: expected a Layer, got {type(layer).__name__}")
        is_model = isinstance(layer, Container)
        if is_model:
            if len(layer.outputs) != 1:
                raise ValueError(
                    "All layers in a Sequential model should have a single output tensor. For multi-output layers, "
                    "use the functional API."
                )
            if len(layer.inputs) != 1:
                raise ValueError(
                    "All layers in a Sequential model should have a single input tensor. For multi-input layers, "
                    "use the functional API."
                )
        if not self.outputs:
            if not layer.inbound_nodes:
                if layer.batch_input_shape is None:
                    raise ValueError(
                        f"The first layer in a Sequential model must get an input_shape or batch_input_shape "
                        f"argument (layer {layer.name} has neither)."
                    )
                x = make_input(batch_shape=layer.batch_input_shape, dtype=layer.dtype, name=f"{layer.name}_input")
                layer.apply(x)
            if is_model:
                self.outputs = list(layer.outputs)
                self.inputs = list(layer.inputs)
            else:
                if len(layer.inbound_nodes) != 1:
                    raise ValueError(
                        "A layer added to a Sequential model must not already be connected somewhere else. "
                        f"Sequential received layer {layer.name} which has {len(layer.inbound_nodes)} pre-existing "
                        "inbound connections."
                    )
                if len(layer.inbound_nodes[0].output_tensors) != 1:
                    raise ValueError(
                        "All layers in a Sequential model should have a single output tensor. For multi-output "
                        "layers, use the functional API."
                    )
                self._check_shape(layer)
                self.outputs = [layer.inbound_nodes[0].output_tensors[0]]
                self.inputs = get_source_inputs(self.outputs[0])
            self.inbound_nodes = []
            Node(
                self, [], [], [], self.inputs, self.outputs, [None] * len(self.inputs), [None],
                [x.shape for x in self.inputs], [self.outputs[0].shape],
            )  # fmt: skip
        else:
            output = layer.apply(self.outputs[0])
            if isinstance(output, list | tuple):
                raise TypeError(
                    "All layers in a Sequential model should have a single output tensor. For multi-output layers, "
                    "use the functional API."
                )
            self._check_shape(layer)
            self.outputs = [output]
            self.inbound_nodes[0].output_tensors = self.outputs
            self.inbound_nodes[0].output_shapes = [self.outputs[0].shape]
        self.layers.append(layer)
        self.built = False
        release_compiled(self.model)
        self.model = None

    def pop(self) -> None:
        """Remove the last layer (its weights stay; dispose it if it is no longer needed)."""
        if not self.layers:
            raise TypeError("There are no layers in the model.")
        self.layers.pop()
        if not self.layers:
            self.outputs = []
            self.inbound_nodes = []
            self.outbound_nodes = []
        else:
            last = self.layers[-1]
            last.outbound_nodes = []
            self.outputs = [last.output]
            self.inbound_nodes[0].output_tensors = self.outputs
            self.inbound_nodes[0].output_shapes = [self.outputs[0].shape]
        self.built = False
        release_compiled(self.model)
        self.model = None

    def build(self, input_shape: Any = None) -> None:
        """Create the internal functional model (the layers are already built)."""
        if not self.inputs or not self.outputs:
            raise TypeError("Sequential model cannot be built: model is empty. Add some layers first.")
        self.model = LayersModel(inputs=self.inputs, outputs=self.outputs[0], name=f"{self.name}_model")
        self.model.trainable = self.trainable
        self.supports_masking = self.model.supports_masking
        self.input_layers = self.model.input_layers
        self.input_layers_node_indices = self.model.input_layers_node_indices
        self.input_layers_tensor_indices = self.model.input_layers_tensor_indices
        self.output_layers = self.model.output_layers
        self.output_layers_node_indices = self.model.output_layers_node_indices
        self.output_layers_tensor_indices = self.model.output_layers_tensor_indices
        self.nodes_by_depth = self.model.nodes_by_depth
        self.container_nodes = self.model.container_nodes
        self.output_names = self.model.output_names
        self.input_names = self.model.input_names
        self.feed_input_names = self.model.feed_input_names
        self.feed_input_shapes = self.model.feed_input_shapes
        self.built = True

    def _ensure_model(self) -> LayersModel:
        if self.model is None or not self.built:
            self.build()
        return self.model  # type: ignore[return-value]

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        """Run the stack on ``inputs``."""
        return self._ensure_model().call(inputs, **kwargs)

    def count_params(self) -> int:
        """The number of scalars in the weights."""
        self._ensure_model()
        return super().count_params()

    def summary(
        self,
        line_length: int | None = None,
        positions: Sequence[float] | None = None,
        print_fn: Callable[[str], Any] = print,
    ) -> None:
        """Print the table of layers, output shapes and parameter counts (TF.js's format).

        Args:
            line_length: the width of the table in characters (default 65).
            positions: where the columns end, as fractions of ``line_length`` or absolute positions.
            print_fn: called with each line (default ``print``).

        Example::

            nf.sequential(layers=[nf.layers.dense(units=2, input_shape=[3])]).summary()
        """
        self._ensure_model()
        super().summary(line_length, positions, print_fn)

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Assign every weight, in ``weights`` order."""
        self._ensure_model().set_weights(weights)

    @tfjs_config("batch_size")
    def predict(
        self, x: ModelData, batch_size: int | Mapping[str, Any] | None = None, verbose: bool = False
    ) -> ModelOutput:
        """The output for the input ``x`` ``[samples, ...input shape]``, computed in batches of ``batch_size``
        (default 32; or a TF.js config dict ``{'batchSize': 4}``); see ``LayersModel.predict``.

        Example::

            y = model.predict(nf.ones([3, 4]), batch_size=2)
        """
        return self._ensure_model().predict(x, batch_size=batch_size, verbose=verbose)

    def predict_on_batch(self, x: ModelData) -> ModelOutput:
        """The output for one batch ``x``."""
        return self._ensure_model().predict_on_batch(x)

    def execute(
        self, inputs: Tensor | Sequence[Tensor] | dict[str, Tensor], outputs: str | Sequence[str]
    ) -> ModelOutput:
        """The values of the symbolic tensors named ``outputs`` for ``inputs``."""
        return self._ensure_model().execute(inputs, outputs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape of the stack for ``input_shape``."""
        return self._ensure_model().compute_output_shape(input_shape)

    # -- training: the internal functional model trains; callbacks see this model ----------------
    @tfjs_config("optimizer")
    def compile(
        self,
        optimizer: str | Optimizer | Mapping[str, Any],
        loss: Any = None,
        metrics: Any = None,
    ) -> None:
        """Build the internal model and compile it: ``optimizer`` (a name such as ``'sgd'`` / ``'adam'`` or an
        ``nf.train`` optimizer), ``loss`` (a name or function; required), ``metrics`` (None, a name, a list);
        see ``LayersModel.compile``. A TF.js config dict may replace the arguments.

        Example::

            model.compile({'optimizer': 'sgd', 'loss': 'meanSquaredError', 'metrics': ['mae']})
        """
        if self.is_optimizer_owned and self.optimizer_ is not None:
            self.optimizer_.dispose()  # beyond TF.js: a re-compile frees the slots of the optimizer it made
            self.optimizer_, self.is_optimizer_owned = None, False
        self.build()
        inner = self.model
        inner.compile(optimizer=optimizer, loss=loss, metrics=metrics)  # type: ignore[union-attr]
        self.optimizer_ = inner.optimizer_
        self.is_optimizer_owned = inner.is_optimizer_owned
        self.loss = inner.loss
        self.loss_functions = inner.loss_functions
        self.metrics = inner.metrics
        self.metrics_tensors = inner.metrics_tensors
        self.metrics_names = inner.metrics_names

    def _compiled_model(self, op: str) -> LayersModel:
        if self.model is None or not self.built:
            raise RuntimeError(f"{op}: the model needs to be compiled before being used (call model.compile(...)).")
        return self.model

    @property
    def optimizer(self) -> Any:
        """The internal model's optimizer (None before ``compile``)."""
        return None if self.model is None else self.model.optimizer

    @optimizer.setter
    def optimizer(self, optimizer: Any) -> None:
        self._compiled_model("optimizer").optimizer = optimizer

    @property
    def stop_training(self) -> bool:
        """Whether ``fit`` stops after the current batch (the internal model's flag)."""
        if self.model is None:
            raise ValueError("Cannot get the stop_training property of a sequential model before it is compiled.")
        return self.model.stop_training

    @stop_training.setter
    def stop_training(self, stop: bool) -> None:
        if self.model is None:
            raise ValueError("Cannot set the stop_training property of a sequential model before it is compiled.")
        self.model.stop_training = stop

    def _training_target(self, op: str) -> tuple[Any, Any]:
        """The internal functional model trains and evaluates; callbacks see this model. ``fit``,
        ``fit_async``, ``evaluate``, ... (``training_api.py``) are inherited with their signatures."""
        return self._compiled_model(op), self

    def train_on_batch(self, x: ModelData, y: ModelData, *args: Any, **kwargs: Any) -> float | list[float]:
        """One optimizer step on one batch (see ``LayersModel.train_on_batch``)."""
        return self._compiled_model("train_on_batch").train_on_batch(x, y, *args, **kwargs)

    def get_config(self) -> dict[str, Any]:
        """``{'name', 'layers': [{'class_name', 'config'}, ...]}``."""
        return {
            "name": self.name,
            "layers": [{"class_name": layer.get_class_name(), "config": layer.get_config()} for layer in self.layers],
        }

    @classmethod
    def from_config(
        cls, config: Any, custom_objects: dict[str, Any] | None = None, fast_weight_init: bool = False
    ) -> Sequential:
        """A Sequential from its config (a dict with ``layers``, or the legacy list of layer configs)."""
        if isinstance(config, list):
            if not config or "class_name" not in config[0] or config[0]["class_name"] == "Merge":
                raise ValueError("Legacy serialization format not supported yet.")
            layer_configs, extra = config, {}
        else:
            if config.get("layers") is None:
                raise ValueError("The config of a Sequential model must be a list or a dict with a 'layers' field.")
            extra = {k: v for k, v in config.items() if k != "layers"}
            layer_configs = config["layers"]
        model = cls(name=extra.get("name"))
        for layer_config in layer_configs:
            layer = deserialize_layer(layer_config, custom_objects, fast_weight_init)
            if fast_weight_init:
                layer.set_fast_weight_init_during_build(True)
            model.add(layer)
        return model


@tfjs_config("layers")
def sequential(layers: Sequence[Layer] | None = None, name: str | None = None) -> Sequential:
    """A model that applies ``layers`` one after the other (TF.js's ``tf.sequential``).

    ``nf.sequential(layers=[...])``, or TF.js's object: ``nf.sequential({'layers': [nf.layers.dense({'units': 1,
    'inputShape': [3]})]})``; more layers join with ``model.add(layer)``.
    """
    return Sequential(layers=layers, name=name)


__all__ = ["Sequential", "sequential"]
