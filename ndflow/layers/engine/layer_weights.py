"""A layer's weights and losses: ``add_weight`` (initializer, regularizer, constraint, trainable), ``get_weights``
/ ``set_weights`` (copies in, copies out), ``count_params``, ``add_loss`` / ``calculate_losses``. Mixed into
:class:`~ndflow.layers.engine.base.Layer`."""

from __future__ import annotations

import contextlib
import contextvars
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from ...core.dtypes import BYTES_PER_ELEMENT
from ...core.flags import env
from ...core.tensor import Tensor
from ...ops import clone
from ..initializers import get_initializer
from ..naming import get_scoped_tensor_name
from ..regularizers import get_regularizer
from ..utils import to_list
from ..variables import LayerVariable, batch_set_value

#: Weight name -> shape of the weights about to be loaded (set by ``expected_weight_shapes`` while a model is
#: built from a config with weights), so a config that disagrees fails before its weights are allocated.
_EXPECTED: contextvars.ContextVar[dict[str, tuple[int, ...]] | None] = contextvars.ContextVar(
    "ndflow_expected_weight_shapes", default=None
)


@contextlib.contextmanager
def expected_weight_shapes(specs: Sequence[Mapping[str, Any]]) -> Iterator[None]:
    """While active, ``add_weight`` compares each weight's shape with the spec of the same name (also under the
    TF 2.2+ ``layer/cell/weight`` name) and raises a ValueError naming the layer and weight on a mismatch."""
    shapes: dict[str, tuple[int, ...]] = {}
    for spec in specs:
        name, shape = str(spec["name"]), tuple(int(d) for d in spec["shape"])
        shapes[name] = shape
        tokens = name.split("/")
        if len(tokens) > 2:
            shapes.setdefault("/".join(tokens[:-2] + tokens[-1:]), shape)
    token = _EXPECTED.set(shapes)
    try:
        yield
    finally:
        _EXPECTED.reset(token)


def check_weight_shape(layer: str, name: str, shape: Sequence[Any], dtype: str) -> None:
    """Before a weight is allocated: a ValueError naming the layer and weight when its shape is not a list of
    non-negative ints, it would take more than ``MAX_WEIGHT_BYTES``, or it disagrees with the weights being loaded."""
    dims = list(shape)
    if any(isinstance(d, bool) or not isinstance(d, int | np.integer) or d < 0 for d in dims):
        raise ValueError(f"layer {layer!r}: weight {name!r} has shape {dims}; a shape must be non-negative ints")
    size = math.prod(int(d) for d in dims)
    nbytes = size * BYTES_PER_ELEMENT.get(dtype, 4)
    limit = int(env().get_number("MAX_WEIGHT_BYTES"))
    if nbytes > limit:
        raise ValueError(
            f"layer {layer!r}: weight {name!r} of shape {[int(d) for d in dims]} ({dtype}) would take {nbytes} bytes, "
            f"over the limit of {limit} bytes per weight (flag MAX_WEIGHT_BYTES)"
        )
    expected = _EXPECTED.get()
    if expected:
        full = get_scoped_tensor_name(name)
        want = expected.get(full)
        if want is not None and want != tuple(int(d) for d in dims):
            raise ValueError(
                f"layer {layer!r}: weight {full!r} would have shape {[int(d) for d in dims]} by the model's config, "
                f"but the weights manifest gives it shape {list(want)}"
            )


class LayerWeightsMixin:
    """Weights and losses of a layer (see the module docstring)."""

    # -- weights ----------------------------------------------------------------------------------
    def count_params(self) -> int:
        """The number of scalars in the weights (the layer must be built)."""
        if not self.built:
            raise RuntimeError(
                f"You tried to call count_params() on {self.name}, but the layer is not built yet. Build it "
                "first by calling build(batch_input_shape)."
            )
        return sum(math.prod(w.shape) for w in self.weights)

    def get_weights(self, trainable_only: bool = False) -> list[Tensor]:
        """Copies of the weight values (new tensors sharing the data; the caller disposes them)."""
        return [clone(w.read()) for w in (self.trainable_weights if trainable_only else self.weights)]

    def set_weights(self, weights: Sequence[Any]) -> None:
        """Assign every weight, in ``weights`` order (tensors, numpy arrays or nested lists)."""
        params = self.weights
        weights = list(weights)
        if len(params) != len(weights):
            raise ValueError(
                f"You called set_weights(weights) on layer {self.name!r} with a weight list of length "
                f"{len(weights)}, but the layer was expecting {len(params)} weights."
            )
        pairs = []
        for p, w in zip(params, weights, strict=True):
            shape = tuple(w.shape) if isinstance(w, Tensor) else np.shape(w)
            if tuple(shape) != tuple(p.shape):
                raise ValueError(
                    f"Layer weight shape {list(p.shape)} of {p.name} not compatible with provided weight shape "
                    f"{list(shape)}"
                )
            pairs.append((p, w))
        batch_set_value(pairs)

    def add_weight(
        self,
        name: str,
        shape: Sequence[int],
        dtype: str | None = None,
        initializer: Any = None,
        regularizer: Any = None,
        trainable: bool | None = True,
        constraint: Any = None,
        get_initializer_func: Callable[[], Any] | None = None,
    ) -> LayerVariable:
        """Create a weight (named under the current name scope) and track it."""
        from ..constraints import get_constraint

        if name in self._added_weight_names:
            raise ValueError(f"Duplicate weight name {name} for layer {self.name}")
        dtype = dtype or "float32"
        check_weight_shape(self.name, name, shape, dtype)
        self._added_weight_names.append(name)
        if self.fast_weight_init_during_build:
            initializer = get_initializer_func() if get_initializer_func is not None else "zeros"
        init = get_initializer("glorotUniform" if initializer is None else initializer)
        regularizer = get_regularizer(regularizer)
        trainable = True if trainable is None else bool(trainable)
        init_value = init.apply(list(shape), dtype)
        try:
            weight = LayerVariable(init_value, dtype, name, trainable, get_constraint(constraint))
        finally:
            init_value.dispose()
        if regularizer is not None:
            self.add_loss(lambda: regularizer.apply(weight.read()))
        (self._trainable_weights if trainable else self._non_trainable_weights).append(weight)
        return weight

    def set_fast_weight_init_during_build(self, value: bool) -> None:
        """Skip costly initializers while building (weights about to be overwritten by loading)."""
        self.fast_weight_init_during_build = bool(value)

    def add_loss(self, losses: Callable[[], Tensor] | Sequence[Callable[[], Tensor]] | None) -> None:
        """Add loss functions (each returns a scalar when called)."""
        if losses is None:
            return
        self._losses.extend(to_list(losses))

    def calculate_losses(self) -> list[Tensor]:
        """The current values of the layer's losses."""
        return [fn() for fn in self.losses]
