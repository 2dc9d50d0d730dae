"""Layer factories as TF.js writes them: ``nf.layers.dense({'units': 16, 'inputShape': [4]})`` or keywords.

``layer_factory(Dense, shapes=..., example=...)`` makes the ``nf.layers.dense`` function:

- its only positional argument is an optional TF.js config dict; its keys may be camelCase (``inputShape``,
  converted with TF.js's ``toSnakeCase``) or snake_case, and keywords given beside it override nothing: a key
  given both ways is an error;
- its keywords are the snake_case arguments of the layer class (gathered from the constructors along the
  class's MRO, the cell's constructor for recurrent layers, then ``Layer``'s own ``name``, ``input_shape``, ...);
  a camelCase keyword is refused with the snake_case name to use;
- ``inspect.signature`` / ``help()`` show those arguments with their types and defaults, and the docstring
  lists them with the input and output shapes and an example.
"""

from __future__ import annotations

import inspect
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from ..core.arguments import unexpected_arguments
from .naming import to_camel_case, to_snake_case

L = TypeVar("L")

#: Constructor arguments for ndflow's own use (tests, wrappers), left out of the factories' signatures.
_INTERNAL = frozenset({"dropout_func"})

#: TF.js factory names that are not the camelCase of ours ('' for factories TF.js 4.22 does not ship).
_TFJS_NAMES = {
    "relu": "reLU", "leaky_relu": "leakyReLU", "thresholded_relu": "thresholdedReLU", "cropping2d": "cropping2D",
    "simple_rnn": "simpleRNN", "simple_rnn_cell": "simpleRNNCell", "stacked_rnn_cells": "stackedRNNCells",
    "random_height": "",
}  # fmt: skip

#: TF.js keys whose snake_case is not what ``toSnakeCase`` makes of them.
_KEY_EXCEPTIONS = {"inputDType": "input_dtype"}

#: What the arguments shared by many layers mean (the docstrings of the factories list them).
PARAM_DOCS: dict[str, str] = {
    "units": "number of output units (the last output axis)",
    "activation": "activation name or function applied to the output (none when omitted)",
    "use_bias": "whether to add a bias vector",
    "kernel_initializer": "initializer of the kernel (name, config or Initializer)",
    "bias_initializer": "initializer of the bias",
    "kernel_regularizer": "regularizer of the kernel",
    "bias_regularizer": "regularizer of the bias",
    "activity_regularizer": "regularizer of the output",
    "kernel_constraint": "constraint applied to the kernel after each update",
    "bias_constraint": "constraint applied to the bias after each update",
    "input_dim": "size of the last input axis (shorthand for ``input_shape=[input_dim]``)",
    "filters": "number of output channels",
    "kernel_size": "size of the convolution window (an int or one per spatial axis)",
    "strides": "step of the window (an int or one per spatial axis)",
    "padding": "``'valid'`` (no padding) or ``'same'`` (output as large as the input over the strides)",
    "data_format": "``'channelsLast'`` (default) or ``'channelsFirst'``",
    "dilation_rate": "spacing of the kernel taps (atrous convolution)",
    "pool_size": "size of the pooling window",
    "rate": "fraction of the inputs to drop, in [0, 1)",
    "noise_shape": "shape of the binary drop mask (broadcast against the input)",
    "seed": "seed of the random numbers (unseeded when omitted)",
    "name": "the layer's name (unique default such as ``dense_Dense1``)",
    "trainable": "whether training updates the layer's weights",
    "input_shape": "shape of one example, without the batch axis (first layer of a model)",
    "batch_input_shape": "input shape including the batch axis (first layer of a model)",
    "batch_size": "fixed batch size used with ``input_shape``",
    "dtype": "dtype of the layer's inputs and weights (``'float32'``)",
    "input_dtype": "legacy name of ``dtype``",
    "weights": "initial weight values (a list of arrays, in ``get_weights()`` order)",
    "axis": "the axis (or axes) the layer works on",
    "epsilon": "small number added to variances to avoid dividing by zero",
    "center": "whether to add the learned offset ``beta``",
    "scale": "whether to multiply by the learned factor ``gamma``",
    "momentum": "momentum of the moving averages",
    "return_sequences": "return every timestep's output (else only the last)",
    "return_state": "also return the final state(s)",
    "go_backwards": "process the sequence backwards",
    "stateful": "keep the last state of each batch as the initial state of the next",
    "unroll": "unroll the loop over time (accepted for TF.js; the loop runs either way)",
    "input_length": "length of the input sequences (needed before Flatten/Dense)",
    "recurrent_activation": "activation of the gates",
    "recurrent_initializer": "initializer of the recurrent kernel",
    "recurrent_regularizer": "regularizer of the recurrent kernel",
    "recurrent_constraint": "constraint of the recurrent kernel",
    "dropout": "fraction of the inputs dropped in training",
    "recurrent_dropout": "fraction of the recurrent state dropped in training",
    "implementation": "implementation mode (accepted for TF.js; both compute the same)",
    "interpolation": "``'bilinear'`` or ``'nearest'``",
    "height": "output height in pixels",
    "width": "output width in pixels",
    "factor": "a positive number ``f`` for the range ``[-f, f]``, or a pair ``[lower, upper]`` (fractions, > -1)",
    "layer": "the layer to wrap",
    "cell": "an RNN cell (or a list of cells, stacked)",
    "depth_multiplier": "output channels per input channel of the depthwise step",
    "keepdims": "keep the reduced axes with length 1",
    "mask_zero": "treat index 0 as padding and emit a mask",
    "alpha": "slope below zero (LeakyReLU, default 0.3) or scale of the negative part (ELU, default 1)",
    "axes": "the axis (or one per input) summed over by the dot product",
    "cells": "the RNN cells to stack (the first gets the input)",
    "crop_to_aspect_ratio": "resize with ``align_corners=False`` (TF.js's use of this flag; no cropping happens)",
    "cropping": "rows / columns to cut: an int, ``[rows, cols]`` or ``[[top, bottom], [left, right]]``",
    "dims": "the new order of the non-batch axes, 1-based (``[2, 1]`` swaps them)",
    "mask_value": "timesteps whose features all equal it are masked",
    "max_value": "upper bound of the output (none when omitted)",
    "merge_mode": "how the two directions combine: ``'concat'``, ``'sum'``, ``'mul'``, ``'ave'`` or None (a list)",
    "n": "how many times the input is repeated",
    "negative_slope": "Keras's slope below ``threshold`` (0 in TF.js)",
    "normalize": "L2-normalize both inputs first (cosine similarity)",
    "num_tokens": "number of categories: inputs are integers in ``[0, num_tokens)``",
    "offset": "added after scaling",
    "output_dim": "length of each embedding vector",
    "output_mode": "``'multiHot'``, ``'oneHot'``, ``'count'`` or ``'int'``",
    "reset_after": "apply the reset gate after the matrix product (Keras's / cuDNN's GRU; TF.js: False)",
    "shared_axes": "axes along which the learned slope is shared (e.g. ``[1, 2]`` for one per channel)",
    "size": "upsampling factors ``[rows, cols]``",
    "sparse": "accepted for Keras; only False is supported",
    "stddev": "standard deviation of the added noise",
    "target_shape": "the output shape without the batch axis",
    "theta": "values at or below it become 0",
    "threshold": "Keras's threshold below which values are damped (0 in TF.js)",
    "unit_forget_bias": "add 1 to the forget-gate bias at initialization",
}

_WEIGHT_PARTS = {"initializer": "initializer", "regularizer": "regularizer", "constraint": "constraint"}


def _describe(name: str) -> str:
    """What an argument means: ``PARAM_DOCS``, or for ``<weight>_initializer`` etc. a sentence naming the weight."""
    if name in PARAM_DOCS:
        return PARAM_DOCS[name]
    weight, _, part = name.rpartition("_")
    if weight and part in _WEIGHT_PARTS:
        return f"{part} of the ``{weight.replace('_', ' ')}`` weight"
    return ""


def _hints(init: Callable[..., Any]) -> dict[str, Any]:
    """The evaluated annotations of a constructor (empty when some name is only known to type checkers)."""
    try:
        return typing.get_type_hints(init)
    except (NameError, TypeError):
        return {}


def _gather_params(cls: type, exclude: frozenset[str]) -> tuple[list[inspect.Parameter], set[str]]:
    """The keyword arguments ``cls`` takes (constructors along its MRO, then its cell's), and the required ones."""
    from .engine.base import Layer

    def own(klass: type) -> list[type]:
        return [k for k in klass.__mro__ if "__init__" in vars(k) and issubclass(k, Layer) and k is not Layer]

    cell = getattr(cls, "cell_class", None)
    order = [*own(cls), *(own(cell) if isinstance(cell, type) else []), Layer]
    seen: dict[str, inspect.Parameter] = {}
    required: set[str] = set()
    for klass in order:
        signature = list(inspect.signature(klass.__init__).parameters.values())[1:]
        hints = _hints(klass.__init__)
        for p in signature:
            if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL) or p.name in seen or p.name in exclude | _INTERNAL:
                continue
            if p.name == "cell" and isinstance(cell, type):
                continue
            default = None if p.default is inspect.Parameter.empty else p.default
            annotation = hints.get(p.name, p.annotation)
            if p.default is inspect.Parameter.empty:
                required.add(p.name)
                if isinstance(annotation, str) and "None" not in annotation:
                    annotation = f"{annotation} | None"
                elif not isinstance(annotation, str) and annotation is not Any:
                    annotation = annotation | None
            seen[p.name] = inspect.Parameter(p.name, p.KEYWORD_ONLY, default=default, annotation=annotation)
        if not any(p.kind is p.VAR_KEYWORD for p in signature):  # passes nothing further up
            break
    return list(seen.values()), required


def to_layer_kwargs(owner: str, config: Any, kwargs: Mapping[str, Any], known: set[str] | None) -> dict[str, Any]:
    """Merge a TF.js config dict (camelCase or snake_case keys) with keywords, checking both."""
    if config is None:
        config = {}
    if not isinstance(config, Mapping):
        raise TypeError(
            f"{owner}: the only positional argument is a TF.js config dict (e.g. {{'units': 4}}), "
            f"got {type(config).__name__}; pass the layer's arguments as keywords or in that dict"
        )
    merged: dict[str, Any] = {}
    for key, value in config.items():
        if not isinstance(key, str):
            raise TypeError(f"{owner}: config keys must be strings, got {key!r}")
        snake = _KEY_EXCEPTIONS.get(key) or to_snake_case(key)
        if snake in merged:
            raise TypeError(f"{owner}: config gives {snake!r} twice ({key!r} and its other spelling)")
        merged[snake] = value
    for key, value in kwargs.items():
        snake = to_snake_case(key)
        if snake != key and (known is None or snake in known):
            raise unexpected_arguments(owner, [key])
        if key in merged:
            raise TypeError(f"{owner}: {key!r} is given both in the config dict and as a keyword")
        merged[key] = value
    return merged


def _format_default(value: Any) -> str:
    return repr(value) if not callable(value) else getattr(value, "__name__", repr(value))


def _doc(
    summary: str, params: list[inspect.Parameter], required: set[str], shapes: str, example: str, notes: str
) -> str:
    lines = [summary.strip(), ""]
    if notes:
        lines += [notes.strip(), ""]
    lines += [
        "Arguments (keywords, or keys of a TF.js config dict given as the only positional argument):",
        "",
    ]
    for p in params:
        annotation = p.annotation if isinstance(p.annotation, str) else inspect.formatannotation(p.annotation)
        what = _describe(p.name)
        default = "required" if p.name in required else f"default {_format_default(p.default)}"
        lines.append(f"- ``{p.name}`` ({annotation}, {default}){': ' + what if what else ''}")
    lines += ["", shapes.strip(), "", "Example::", "", f"    {example.strip()}"]
    return "\n".join(lines) + "\n"


def layer_factory(
    cls: Callable[..., L],
    name: str,
    *,
    shapes: str,
    example: str,
    summary: str | None = None,
    notes: str = "",
    exclude: frozenset[str] = frozenset(),
    applies_to_list: bool = False,
) -> Callable[..., L]:
    """The ``nf.layers.<name>`` factory of ``cls``: config dict or keywords, real signature and docstring."""
    assert isinstance(cls, type)
    params, required = _gather_params(cls, exclude)
    known = {p.name for p in params}
    cls_name = cls.__name__

    def factory(config: Mapping[str, Any] | None = None, /, **kwargs: Any) -> L:
        if applies_to_list and "inputs" in kwargs and config is None:
            config = kwargs.pop("inputs")
        if applies_to_list and config is not None and not isinstance(config, Mapping):
            if not isinstance(config, list | tuple):
                got = type(config).__name__
                raise TypeError(f"{cls_name}: expected a list of tensors to merge (or a config dict), but got a {got}")
            return cls(**to_layer_kwargs(name, None, kwargs, known)).apply(list(config))  # type: ignore[attr-defined]
        return cls(**to_layer_kwargs(name, config, kwargs, known))

    config_type: Any = Mapping[str, Any] | Sequence[Any] | None if applies_to_list else Mapping[str, Any] | None
    config_param = inspect.Parameter("config", inspect.Parameter.POSITIONAL_ONLY, default=None, annotation=config_type)
    from ..core.tensor import Tensor
    from .engine.topology import SymbolicTensor

    returns: Any = cls | Tensor | SymbolicTensor if applies_to_list else cls  # a list of inputs is merged at once
    factory.__signature__ = inspect.Signature([config_param, *params], return_annotation=returns)  # type: ignore[attr-defined]
    factory.__name__ = factory.__qualname__ = name
    factory.__module__ = cls.__module__
    first = summary or (cls.__doc__ or cls_name).strip().splitlines()[0]
    tfjs = _TFJS_NAMES.get(name, to_camel_case(name))
    origin = f"TF.js: ``tf.layers.{tfjs}``." if tfjs else "Beyond TF.js 4.22 (whose bundle lacks it)."
    factory.__doc__ = _doc(f"A ``{cls_name}`` layer: {first}\n\n{origin}", params, required, shapes, example, notes)
    factory.__annotations__ = {"config": config_type, **{p.name: p.annotation for p in params}, "return": returns}
    return factory


def alias(factory: Callable[..., L], name: str, tfjs_name: str) -> Callable[..., L]:
    """``factory`` under another name (TF.js's alternative layer names: ``max_pool2d`` for ``max_pooling2d``)."""

    def aliased(config: Mapping[str, Any] | None = None, /, **kwargs: Any) -> L:
        return factory(config, **kwargs)

    aliased.__signature__ = inspect.signature(factory)  # type: ignore[attr-defined]
    aliased.__name__ = aliased.__qualname__ = name
    aliased.__module__ = factory.__module__
    aliased.__doc__ = f"TF.js's ``{tfjs_name}``: the same as ``nf.layers.{factory.__name__}``.\n\n{factory.__doc__}"
    aliased.__annotations__ = dict(getattr(factory, "__annotations__", {}))
    return aliased


__all__ = ["PARAM_DOCS", "alias", "layer_factory", "to_layer_kwargs"]
