"""Models: ``LayersModel`` (``nf.model(inputs=..., outputs=...)``, class name ``Model``); ``Sequential`` is in
``sequential.py``.

A ``LayersModel`` is a ``Container`` with ``predict``, ``summary``, ``to_json`` and named weights;
training (``compile`` / ``fit`` / ``evaluate``) and saving build on it.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ... import ops
from ...core.awaitable import Resolved, resolved
from ...core.globals import tidy
from ...core.tensor import Tensor
from ...core.types import ModelData, ModelOutput
from ...ops import tensor as make_tensor
from ..serialization import register_class
from ..utils import shape_str, singleton_or_list, to_list
from .compiled_inference import compiled_outputs
from .container import Container
from .executor import FeedDict, execute
from .summary import print_summary
from .tfjs_args import tfjs_config
from .topology import SymbolicTensor
from .training_api import TrainingApiMixin
from .training_utils import weights_lock


def check_batch_size(batch_size: Any) -> None:
    """Raise unless ``batch_size`` is a positive integer."""
    if isinstance(batch_size, bool) or not isinstance(batch_size, int | np.integer) or batch_size <= 0:
        raise ValueError(f"batch_size is required to be a positive integer, but got {batch_size!r}")


def make_batches(size: int, batch_size: int) -> list[tuple[int, int]]:
    """``[(start, end), ...]`` covering ``range(size)`` in batches."""
    if size == 0:
        return [(0, 0)]
    return [(i * batch_size, min(size, (i + 1) * batch_size)) for i in range(math.ceil(size / batch_size))]


def slice_along_first_axis(x: Tensor, start: int, size: int) -> Tensor:
    """``x[start:start + size]``."""
    return ops.slice(x, [start] + [0] * (x.rank - 1), [size] + [-1] * (x.rank - 1))


class LayersModel(TrainingApiMixin, Container, Resolved):
    """A model made of layers (functional API): ``nf.model(inputs=..., outputs=...)``; trains (``training_api.py``).

    A model is awaitable and ``await`` gives it back, so TF.js's ``const m = await tf.loadLayersModel(url)`` ports
    as ``m = await nf.load_layers_model(url)`` (ndflow/core/awaitable.py).
    """

    class_name = "Model"

    def __init__(
        self,
        inputs: SymbolicTensor | Sequence[SymbolicTensor],
        outputs: SymbolicTensor | Sequence[SymbolicTensor],
        name: str | None = None,
    ) -> None:
        super().__init__(inputs=inputs, outputs=outputs, name=name)
        self._init_training()

    def summary(
        self,
        line_length: int | None = None,
        positions: Sequence[float] | None = None,
        print_fn: Callable[[str], Any] = print,
    ) -> None:
        """Print the table of layers, output shapes and parameter counts (TF.js's format).

        Args:
            line_length: the width of the table in characters (default 65, wider for models with several inputs).
            positions: where the columns end, as fractions of ``line_length`` or absolute positions.
            print_fn: called with each line (default ``print``; e.g. ``lines.append`` to collect them).

        Example::

            model.summary()
            lines = []; model.summary(print_fn=lines.append)
        """
        if not self.built:
            raise ValueError(
                "This model has never been called, thus its weights have not been created yet. So no summary can "
                "be displayed. Build the model first (e.g., by calling it on some test data)."
            )
        print_summary(self, line_length, positions, print_fn)

    # -- inference --------------------------------------------------------------------------------
    def _as_tensors(self, x: Any) -> tuple[list[Tensor], list[Tensor]]:
        """The inputs as a list of rank >= 2 tensors, and the tensors made here (to dispose)."""
        if isinstance(x, dict):
            missing = [name for name in self.input_names if name not in x]
            if missing:
                raise ValueError(f"No data provided for {missing}. Need data for each key in: {self.input_names}")
            x = [x[name] for name in self.input_names]
        xs = to_list(x) if isinstance(x, list | tuple) else [x]
        made: list[Tensor] = []
        tensors = []
        for i, value in enumerate(xs):
            dtype = self.inputs[i].dtype if i < len(self.inputs) else "float32"
            t = value if isinstance(value, Tensor) else make_tensor(np.asarray(value), dtype=dtype)
            if t is not value:
                made.append(t)
            if t.rank == 1:
                t = ops.expand_dims(t, 1)
                made.append(t)
            tensors.append(t)
        return tensors, made

    def _check_input_data(self, xs: list[Tensor], check_batch_axis: bool) -> None:
        names, shapes = self.input_names, self.feed_input_shapes
        if len(xs) != len(names):
            if len(names) > 1 and len(xs) == 1:
                raise ValueError(
                    f"The model expects {len(names)} input tensors, but only received one tensor. Found: array with "
                    f"shape {list(xs[0].shape)}."
                )
            raise ValueError(
                "Error when checking model: the list of tensors that you are passing to your model is not the size "
                f"the model expected. Expected to see {len(names)} tensor(s), but instead got {len(xs)} tensor(s)."
            )
        for name, shape, x in zip(names, shapes, xs, strict=True):
            if shape is None:
                continue
            if x.rank != len(shape):
                raise ValueError(
                    f"Error when checking input: expected {name} to have {len(shape)} dimension(s), but got array "
                    f"with shape {list(x.shape)}"
                )
            for j, (ref, dim) in enumerate(zip(shape, x.shape, strict=True)):
                if (j == 0 and not check_batch_axis) or ref is None:
                    continue
                if ref != dim:
                    raise ValueError(
                        f"Error when checking input: expected {name} to have shape {shape_str(shape)} but got "
                        f"array with shape {list(x.shape)}."
                    )

    def _predict_loop(self, xs: list[Tensor], batch_size: int) -> Any:
        def run() -> Any:
            num_samples = xs[0].shape[0]
            outs: list[list[Tensor]] = [[] for _ in self.outputs]
            for start, end in make_batches(num_samples, batch_size):

                def batch(start: int = start, end: int = end) -> list[Tensor]:
                    feeds = [
                        (s, slice_along_first_axis(x, start, end - start)) for s, x in zip(self.inputs, xs, strict=True)
                    ]
                    compiled = compiled_outputs(self, [x for _, x in feeds])
                    return compiled if compiled is not None else execute(self.outputs, FeedDict(feeds))

                for i, out in enumerate(tidy(batch)):
                    outs[i].append(out)
            return singleton_or_list([parts[0] if len(parts) == 1 else ops.concat(parts, 0) for parts in outs])

        return tidy(run)

    @tfjs_config("batch_size")
    def predict(
        self, x: ModelData, batch_size: int | Mapping[str, Any] | None = None, verbose: bool = False
    ) -> ModelOutput:
        """The outputs of the model for the inputs ``x``, computed in batches (inference mode).

        Args:
            x: a tensor or array ``[samples, ...input shape]`` (a rank-1 input is taken as ``[samples, 1]``), a
                list of them for several inputs, or a dict by input name.
            batch_size: samples per batch (default 32), or a TF.js config dict (``{'batchSize': 4}``).
            verbose: not supported yet (must be False).

        Returns:
            One tensor ``[samples, ...output shape]``, or a list of them for several outputs; the caller disposes
            them. Both are awaitable and give themselves back (``await model.predict(x)`` as in ported code).

        Example::

            y = model.predict(nf.tensor([[1.0, 2.0]]), batch_size=4)
        """
        xs, made = self._as_tensors(x)
        try:
            self._check_input_data(xs, check_batch_axis=False)
            batch_size = 32 if batch_size is None else batch_size
            check_batch_size(batch_size)
            if verbose:
                raise NotImplementedError("verbose predict() is not implemented yet")
            with weights_lock(self):  # not while another thread takes an optimizer step
                return resolved(self._predict_loop(xs, batch_size))
        finally:
            for t in made:
                t.dispose()

    def predict_on_batch(self, x: ModelData) -> ModelOutput:
        """The outputs for one batch of input tensor(s) ``x``."""
        xs, made = self._as_tensors(x)
        try:
            self._check_input_data(xs, check_batch_axis=True)
            with weights_lock(self):
                return resolved(self._predict_loop(xs, xs[0].shape[0] or 1))
        finally:
            for t in made:
                t.dispose()

    def execute(
        self, inputs: Tensor | Sequence[Tensor] | dict[str, Tensor], outputs: str | Sequence[str]
    ) -> ModelOutput:
        """The values of the symbolic tensors named ``outputs`` (intermediate ones too) for ``inputs``."""
        if isinstance(outputs, list | tuple) and not outputs:
            raise ValueError("outputs is an empty list, which is not allowed.")
        names = to_list(outputs)
        fetches = self.retrieve_symbolic_tensors(names)
        if isinstance(inputs, Tensor):
            inputs = [inputs]
        if isinstance(inputs, dict):
            missing = [x.name for x in self.inputs if x.name not in inputs]
            if missing:
                raise ValueError(f"No value is provided for the model's input(s) {missing}")
            feeds = [(x, inputs[x.name]) for x in self.inputs]
        else:
            if len(inputs) != len(self.inputs):
                raise ValueError(
                    f"The number of inputs provided ({len(inputs)}) does not match the number of inputs of this "
                    f"model ({len(self.inputs)})."
                )
            feeds = list(zip(self.inputs, inputs, strict=True))
        result = tidy(lambda: execute(fetches, FeedDict(feeds)))  # casts of the feeds are freed with the scope
        return result if isinstance(outputs, list | tuple) else result[0]

    def retrieve_symbolic_tensors(self, names: Sequence[str]) -> list[SymbolicTensor]:
        """The symbolic tensors of this model with the given names."""
        found: list[SymbolicTensor | None] = [None] * len(names)
        for layer in self.layers:
            for node in layer.inbound_nodes:
                for t in node.output_tensors:
                    for i, name in enumerate(names):
                        if found[i] is None and t.name == name:
                            found[i] = t
        missing = [n for n, t in zip(names, found, strict=True) if t is None]
        if missing:
            raise ValueError(f"Cannot find SymbolicTensors for output name(s): {missing}")
        return found  # type: ignore[return-value]

    # -- weights for saving -----------------------------------------------------------------------
    def get_named_weights(self, trainable_only: bool = False) -> list[dict[str, Any]]:
        """``[{'name': original name, 'tensor': variable}]`` in weight order (the variables themselves)."""
        weights = self.trainable_weights if trainable_only else self.weights
        return [{"name": w.original_name, "tensor": w.read()} for w in weights]


@register_class
class Functional(LayersModel):
    """Keras's ``Functional`` class name (written by tf.keras >= 2.4): a ``LayersModel``."""


register_class(LayersModel)


@tfjs_config("inputs")
def model(
    inputs: SymbolicTensor | Sequence[SymbolicTensor],
    outputs: SymbolicTensor | Sequence[SymbolicTensor],
    name: str | None = None,
) -> LayersModel:
    """A functional model from symbolic ``inputs`` (``nf.input(...)``) to ``outputs`` (TF.js's ``tf.model``).

    ``nf.model(inputs=x, outputs=y)``, or TF.js's object: ``nf.model({'inputs': x, 'outputs': y})``.
    """
    return LayersModel(inputs=inputs, outputs=outputs, name=name)


__all__ = [
    "Functional", "LayersModel", "check_batch_size", "make_batches", "model", "slice_along_first_axis",
]  # fmt: skip
