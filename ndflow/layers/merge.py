"""Merge layers: ``Add``, ``Subtract``, ``Multiply``, ``Average``, ``Maximum``, ``Minimum``, ``Concatenate``, ``Dot``.

Each is called on a list of tensors (or symbolic tensors). The factories return a layer
(``nf.layers.add()``, ``nf.layers.concatenate(axis=1)``), or, given a list, apply a new layer to it
at once, as TF.js's ``tf.layers.add([a, b])`` form does (``nf.layers.add([a, b])``).

Element-wise merges broadcast: inputs of lower rank are expanded at axis 1 until the ranks match.
Masks: the output mask is the logical AND of the input masks (Keras's rule; TF.js 4.22 skips the last
mask and adds a leading axis to the result, which breaks the layers after it); ``Concatenate``
concatenates them; ``Dot`` drops them. ``Subtract`` is Keras's (TF.js 4.22 has none). Beyond TF.js:
``Concatenate`` honours any negative ``axis`` (TF.js concatenates along the last axis for all).
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import reduce
from typing import Any

from .. import ops
from ..core.globals import tidy
from ..core.tensor import Tensor
from .backend import epsilon
from .engine.base import Layer
from .factory import layer_factory
from .factory_docs import FACTORY_DOCS
from .serialization import register_class
from .utils import Shape, is_shape, shape_str, to_list


def _shape_list(input_shape: Any) -> list[Shape | None]:
    """``input_shape`` as a list of shapes (one shape becomes a one-element list)."""
    if input_shape is None:
        return [None]
    if is_shape(input_shape):
        return [tuple(input_shape)]
    return [None if s is None else tuple(s) for s in input_shape]


class Merge(Layer):
    """Base of the element-wise merge layers: subclasses define ``merge_function(list_of_tensors)``."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.reshape_required = False

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """Merge same-rank tensors (overridden by each layer)."""
        raise NotImplementedError(f"{type(self).__name__}.merge_function")

    def _elementwise_output_shape(self, shape1: Shape | None, shape2: Shape | None) -> Shape | None:
        """The broadcast shape of two shapes (without their batch axes)."""
        if shape1 is None or shape2 is None:
            return None
        if len(shape1) < len(shape2):
            return self._elementwise_output_shape(shape2, shape1)
        if not shape2:
            return shape1
        output = list(shape1[: len(shape1) - len(shape2)])
        for i, j in zip(shape1[len(shape1) - len(shape2) :], shape2, strict=True):
            if i is None or j is None or i < 0 or j < 0:
                output.append(None)
            elif i == 1:
                output.append(j)
            elif j == 1 or i == j:
                output.append(i)
            else:
                raise ValueError(
                    f"{self.name}: operands could not be broadcast together with shapes {shape_str(shape1)} "
                    f"{shape_str(shape2)}"
                )
        return tuple(output)

    def _check_inputs(self, shapes: list[Shape | None], minimum: int = 2) -> None:
        if len(shapes) < minimum:
            raise ValueError(
                f"{self.name}: a merge layer should be called on a list of at least {minimum} inputs, "
                f"got {len(shapes)} input(s)"
            )

    def _output_shape_without_batch(self, shapes: list[Shape | None]) -> Shape | None:
        output = None if shapes[0] is None else shapes[0][1:]
        for shape in shapes[1:]:
            output = self._elementwise_output_shape(output, None if shape is None else shape[1:])
        return output

    @staticmethod
    def _batch_sizes(shapes: list[Shape | None]) -> list[int]:
        sizes: list[int] = []
        for shape in shapes:
            if shape is not None and shape and shape[0] is not None and shape[0] not in sizes:
                sizes.append(shape[0])
        return sizes

    def build(self, input_shape: Any) -> None:
        """Validate the shapes (at least 2, one batch size, broadcastable); note whether ranks differ."""
        shapes = _shape_list(input_shape)
        self._check_inputs(shapes)
        if len(self._batch_sizes(shapes)) > 1:
            raise ValueError(
                f"{self.name}: can not merge tensors with different batch sizes, got tensors with shapes "
                f"{shape_str(shapes)}"
            )
        self._output_shape_without_batch(shapes)
        self.reshape_required = any(s is None for s in shapes) or len({len(s) for s in shapes}) != 1  # type: ignore[arg-type]
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The merge of ``inputs`` (lower-rank inputs expanded at axis 1 first)."""
        xs = to_list(inputs)
        if self.reshape_required:
            max_rank = max(x.rank for x in xs)
            expanded = []
            for x in xs:
                for _ in range(max_rank - x.rank):
                    x = ops.expand_dims(x, 1)
                expanded.append(x)
            xs = expanded
        return self.merge_function(xs)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The broadcast shape of the inputs, with their common batch size (or None)."""
        shapes = _shape_list(input_shape)
        self._check_inputs(shapes)
        output = self._output_shape_without_batch(shapes)
        sizes = self._batch_sizes(shapes)
        batch = sizes[0] if len(sizes) == 1 else None
        return None if output is None else (batch, *output)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor | None:
        """The logical AND of the input masks that are not None (None if all are)."""
        if mask is None:
            return None
        if not isinstance(mask, list | tuple):
            raise ValueError(f"{self.name}: the mask should be a list (one mask per input), got {mask!r}")
        if not isinstance(inputs, list | tuple):
            raise ValueError(f"{self.name}: the inputs should be a list")
        if len(mask) != len(inputs):
            raise ValueError(
                f"{self.name}: the inputs and the masks should have the same length, but have different lengths "
                f"({len(inputs)} vs {len(mask)})"
            )
        masks = [m for m in mask if m is not None]
        if not masks:
            return None
        return tidy(lambda: reduce(ops.logical_and, [ops.cast(m, "bool") for m in masks]))


@register_class
class Add(Merge):
    """The element-wise sum of the inputs."""

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """``inputs[0] + inputs[1] + ...``."""
        return reduce(ops.add, inputs[1:], ops.clone(inputs[0]))


@register_class
class Subtract(Merge):
    """The difference of exactly two inputs: ``inputs[0] - inputs[1]`` (Keras's layer; TF.js has none)."""

    def _check_inputs(self, shapes: list[Shape | None], minimum: int = 2) -> None:
        if len(shapes) != 2:
            raise ValueError(f"{self.name}: a Subtract layer should be called on exactly 2 inputs, got {len(shapes)}")

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """``inputs[0] - inputs[1]``."""
        if len(inputs) != 2:
            raise ValueError(f"{self.name}: a Subtract layer should be called on exactly 2 inputs, got {len(inputs)}")
        return ops.sub(inputs[0], inputs[1])


@register_class
class Multiply(Merge):
    """The element-wise product of the inputs."""

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """``inputs[0] * inputs[1] * ...``."""
        return reduce(ops.mul, inputs[1:], ops.clone(inputs[0]))


@register_class
class Average(Merge):
    """The element-wise mean of the inputs."""

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """``(inputs[0] + inputs[1] + ...) / len(inputs)``."""
        total = reduce(ops.add, inputs[1:], ops.clone(inputs[0]))
        return ops.mul(total, 1 / len(inputs))


@register_class
class Maximum(Merge):
    """The element-wise maximum of the inputs."""

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """``max(inputs[0], inputs[1], ...)``."""
        return reduce(ops.maximum, inputs)


@register_class
class Minimum(Merge):
    """The element-wise minimum of the inputs."""

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """``min(inputs[0], inputs[1], ...)``."""
        return reduce(ops.minimum, inputs)


@register_class
class Concatenate(Merge):
    """Concatenate the inputs along ``axis`` (default -1); the other axes must match."""

    def __init__(self, axis: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if axis is not None and (isinstance(axis, bool) or not isinstance(axis, int)):
            raise ValueError(f"Concatenate: axis must be an integer, but got {axis!r}")
        self.axis = -1 if axis is None else axis

    def build(self, input_shape: Any) -> None:
        """Validate that the shapes match except along ``axis``."""
        shapes = _shape_list(input_shape)
        if is_shape(input_shape) or len(shapes) < 2:
            raise ValueError(f"{self.name}: a Concatenate layer should be called on a list of at least 2 inputs")
        if all(s is None for s in shapes):
            return
        rank = len(shapes[0])  # type: ignore[arg-type]
        if not -rank <= self.axis < rank:
            raise ValueError(f"{self.name}: axis {self.axis} is out of range for inputs of rank {rank}")
        distinct: list[list[int | None]] = []
        for shape in shapes:
            rest = list(shape)  # type: ignore[arg-type]
            del rest[self.axis]
            if rest not in distinct:
                distinct.append(rest)
        if len(distinct) > 1:
            raise ValueError(
                f"{self.name}: a Concatenate layer requires inputs with matching shapes except for the concat "
                f"axis, got input shapes {shape_str(shapes)}"
            )
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The inputs concatenated along ``axis``."""
        return self.merge_function(to_list(inputs))

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """``concat(inputs, axis)``, any negative axis counted from the end (TF.js 4.22 uses the last axis for all)."""
        return ops.concat(inputs, self.axis)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The first shape with the ``axis`` sizes summed (None if any is unknown)."""
        shapes = _shape_list(input_shape)
        if is_shape(input_shape) or len(shapes) < 2:
            raise ValueError(f"{self.name}: a Concatenate layer should be called on a list of inputs")
        output = list(shapes[0])  # type: ignore[arg-type]
        axis = self.axis % len(output)
        for shape in shapes[1:]:
            if output[axis] is None or shape[axis] is None:  # type: ignore[index]
                output[axis] = None
                break
            output[axis] += shape[axis]  # type: ignore[index]
        return tuple(output)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Tensor | None:
        """The input masks (all True for unmasked inputs) concatenated, then reduced over the last axis."""
        if mask is None:
            return None
        if not isinstance(mask, list | tuple) or not isinstance(inputs, list | tuple):
            raise ValueError(f"{self.name}: the mask and the inputs should be lists for Concatenate")
        if len(mask) != len(inputs):
            raise ValueError(
                f"{self.name}: mismatch in the length of mask ({len(mask)}) and the length of inputs ({len(inputs)})"
            )
        if all(m is None for m in mask):
            return None

        def run() -> Tensor:
            masks = []
            for x, m in zip(inputs, mask, strict=True):
                if m is None:
                    masks.append(ops.cast(ops.ones_like(x), "bool"))
                elif m.rank < x.rank:
                    masks.append(ops.expand_dims(m, -1))
                else:
                    masks.append(m)
            return ops.all(ops.concat(masks, self.axis), -1, False)

        return tidy(run)

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"axis": self.axis}
        config.update(super().get_config())
        return config


def _interpret_axis(axis: int, rank: int) -> int:
    while axis < 0:
        axis += rank
    return axis


def l2_normalize(x: Tensor, axis: int) -> Tensor:
    """``x / sqrt(max(sum(x**2, axis), epsilon))`` (TF.js's ``l2Normalize``)."""
    if x.dtype != "float32":
        x = ops.cast(x, "float32")
    square_sum = ops.sum(ops.mul(x, x), axis, True)
    return ops.div(x, ops.sqrt(ops.maximum(square_sum, epsilon())))


def batch_dot(x: Tensor, y: Tensor, axes: Sequence[int]) -> Tensor:
    """Keras's ``batch_dot`` for rank-2 and rank-3 tensors: per-example dot products over ``axes``."""
    if x.rank > 3 or y.rank > 3:
        raise NotImplementedError("batch_dot is not implemented for tensors of 4D or higher rank yet")
    x_rank, y_rank = x.rank, y.rank
    diff = abs(x_rank - y_rank)
    if x_rank > y_rank:
        y = ops.reshape(y, [*y.shape, *([1] * diff)])
    elif y_rank > x_rank:
        x = ops.reshape(x, [*x.shape, *([1] * diff)])
    if x.rank == 2 and y.rank == 2:
        if axes[0] == axes[1]:
            out = ops.sum(ops.mul(x, y), axes[0])
        else:
            out = ops.sum(ops.mul(ops.transpose(x, [1, 0]), y), axes[1])
    else:
        out = ops.mat_mul(x, y, axes[0] != x.rank - 1, axes[1] == y.rank - 1)
    if diff > 0:
        start = x_rank + y_rank - 3 if x_rank > y_rank else x_rank - 1
        out = ops.squeeze(out, list(range(start, start + diff)))
    if out.rank == 1:
        out = ops.expand_dims(out, 1)
    return out


@register_class
class Dot(Merge):
    """Per-example dot products of two inputs over ``axes`` (cosine proximity with ``normalize=True``)."""

    def __init__(self, axes: int | Sequence[int], normalize: bool | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        valid_int = isinstance(axes, int) and not isinstance(axes, bool)
        valid_pair = (
            isinstance(axes, list | tuple)
            and len(axes) == 2
            and all(isinstance(a, int) and not isinstance(a, bool) for a in axes)
        )
        if not (valid_int or valid_pair):
            raise ValueError(f"Dot: axes must be an integer or a list of 2 integers, but got {axes!r}")
        self.axes: int | list[int] = axes if valid_int else list(axes)  # type: ignore[arg-type]
        self.normalize = False if normalize is None else bool(normalize)

    def _two_shapes(self, input_shape: Any) -> tuple[list[int | None], list[int | None]]:
        shapes = _shape_list(input_shape)
        if is_shape(input_shape) or len(shapes) != 2 or any(s is None for s in shapes):
            raise ValueError(f"{self.name}: a Dot layer should be called on a list of exactly 2 inputs")
        shape1, shape2 = list(shapes[0]), list(shapes[1])  # type: ignore[arg-type]
        if len(shape1) > 3 or len(shape2) > 3:
            raise NotImplementedError(f"{self.name}: the Dot layer does not support tensors of 4D or higher rank yet")
        return shape1, shape2

    def _interpret_axes(self, rank1: int, rank2: int) -> list[int]:
        if isinstance(self.axes, int):
            return [_interpret_axis(self.axes, rank1), _interpret_axis(self.axes, rank2)]
        return [_interpret_axis(self.axes[0], rank1), _interpret_axis(self.axes[1], rank2)]

    def build(self, input_shape: Any) -> None:
        """Validate that the dotted axes have the same size."""
        shape1, shape2 = self._two_shapes(input_shape)
        a1, a2 = self._interpret_axes(len(shape1), len(shape2))
        d1, d2 = shape1[a1], shape2[a2]
        if d1 is not None and d2 is not None and d1 != d2:
            raise ValueError(f"{self.name}: dimension incompatibility: {d1} !== {d2} (axes {self.axes})")
        self.built = True

    def call(self, inputs: Any, **kwargs: Any) -> Tensor:
        """The dot products."""
        return self.merge_function(to_list(inputs))

    def merge_function(self, inputs: list[Tensor]) -> Tensor:
        """``batch_dot`` of the two inputs (L2-normalized first with ``normalize``)."""
        if len(inputs) != 2:
            raise ValueError(f"{self.name}: a Dot layer must be called on exactly 2 inputs, but got {len(inputs)}")
        x1, x2 = inputs
        axes = self._interpret_axes(x1.rank, x2.rank)
        if self.normalize:
            x1, x2 = l2_normalize(x1, axes[0]), l2_normalize(x2, axes[1])
        return batch_dot(x1, x2, axes)

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The remaining axes of the first input, then those of the second (without its batch axis)."""
        shape1, shape2 = self._two_shapes(input_shape)
        a1, a2 = self._interpret_axes(len(shape1), len(shape2))
        del shape1[a1]
        del shape2[a2]
        del shape2[0]
        output = shape1 + shape2
        if len(output) == 1:
            output.append(1)
        return tuple(output)

    def compute_mask(self, inputs: Any, mask: Any = None) -> None:
        """None: the dot product drops masks."""
        return None

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) config."""
        config: dict[str, Any] = {"axes": self.axes, "normalize": self.normalize}
        config.update(super().get_config())
        return config


add = layer_factory(Add, "add", applies_to_list=True, **FACTORY_DOCS["add"])
subtract = layer_factory(Subtract, "subtract", applies_to_list=True, **FACTORY_DOCS["subtract"])
multiply = layer_factory(Multiply, "multiply", applies_to_list=True, **FACTORY_DOCS["multiply"])
average = layer_factory(Average, "average", applies_to_list=True, **FACTORY_DOCS["average"])
maximum = layer_factory(Maximum, "maximum", applies_to_list=True, **FACTORY_DOCS["maximum"])
minimum = layer_factory(Minimum, "minimum", applies_to_list=True, **FACTORY_DOCS["minimum"])
concatenate = layer_factory(Concatenate, "concatenate", applies_to_list=True, **FACTORY_DOCS["concatenate"])
dot = layer_factory(Dot, "dot", applies_to_list=True, **FACTORY_DOCS["dot"])


__all__ = [
    "Add", "Average", "Concatenate", "Dot", "Maximum", "Merge", "Minimum", "Multiply", "Subtract", "add", "average",
    "concatenate", "dot", "maximum", "minimum", "multiply", "subtract",
]  # fmt: skip
