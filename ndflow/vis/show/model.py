"""``show.model_summary`` (a table of the layers) and ``show.layer`` (each weight's statistics and a histogram of
its values), as tfjs-vis's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._options import VIS, resolve
from .._surface import _MISSING, split_container, surface
from ..metrics import tensor_stats
from ..render.bars import HIST_COLOR, draw_histogram
from ..render.table import draw_table, rows_height

_DEFAULTS = {"font_size": 11, "width": None, "height": None, "path": None}
_LAYER_DEFAULTS = {**VIS, "font_size": 10, "max_bins": 12, "color": None}


def format_shape(shape: Any) -> str:
    """``[batch,10]`` as tfjs-vis writes a shape (``Scalar`` for ``[]``); a list of shapes in brackets."""
    if shape and isinstance(shape[0], list | tuple):
        return "[" + ", ".join(format_shape(s) for s in shape) + "]"
    dims = ["batch" if i == 0 and d is None else str(d) for i, d in enumerate(shape)]
    return "Scalar" if not dims else "[" + ",".join(dims) + "]"


def _check_model(what: str, model: Any) -> list[Any]:
    layers = getattr(model, "layers", None)
    if layers is None or not hasattr(model, "count_params"):
        raise TypeError(
            f"nf.vis.{what}: model must be a LayersModel (nf.sequential, nf.model), got {type(model).__name__}"
        )
    unbuilt = [layer.name for layer in layers if not getattr(layer, "built", True)]
    if not layers or unbuilt:
        raise ValueError(
            f"nf.vis.{what}: the model has never been built ("
            + (f"layer(s) {', '.join(unbuilt)} have no weights yet" if unbuilt else "it has no layers")
            + "): give the first layer an input_shape, or call the model on data first"
        )
    return list(layers)


def _output_shape(layer: Any) -> str:
    try:
        return format_shape(layer.output_shape)
    except (AttributeError, ValueError):
        return "multiple"


def model_summary(container: Any, model: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """A table of ``model``'s layers: name, output shape, number of parameters, trainable.

    Options: ``font_size`` (11), ``width``, ``height`` (pixels), ``path``. Returns the matplotlib Figure."""
    container, (model, opts) = split_container("show.model_summary", container, [model, opts])
    options = resolve("show.model_summary", opts, options, _DEFAULTS)
    layers = _check_model("show.model_summary", model)
    headers = ["Layer Name", "Output Shape", "# Of Params", "Trainable"]
    rows = [
        [layer.name, _output_shape(layer), layer.count_params(), str(bool(layer.trainable)).lower()] for layer in layers
    ]
    options["height"] = options["height"] or rows_height(len(rows), options["font_size"])
    options["width"] = options["width"] or 640
    surf = surface("show.model_summary", container, options=options)
    draw_table(surf.axes[0], headers, rows, options["font_size"])
    return surf.finish()


def layer(container: Any, layer: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """``layer``'s weights: a table of each one's shape, min, max, number of values, zeros, NaNs and infinities,
    and below it one histogram of values per weight (tfjs-vis shows one at a time, picked in a menu).

    Options: ``font_size`` (10), ``max_bins`` (12), ``color``, ``width``, ``height`` (per histogram), ``path``.
    Returns the matplotlib Figure."""
    container, (layer, opts) = split_container("show.layer", container, [layer, opts])
    options = resolve("show.layer", opts, options, _LAYER_DEFAULTS)
    if not hasattr(layer, "get_weights") or not hasattr(layer, "weights"):
        raise TypeError(f"nf.vis.show.layer: layer must be a Layer, got {type(layer).__name__}")
    if not getattr(layer, "built", True):
        raise ValueError(
            f"nf.vis.show.layer: layer {layer.name} has never been built (it has no weights yet): build its model "
            "first (an input_shape on the first layer, or a call on data)"
        )
    variables = list(layer.weights)
    if not variables:
        raise ValueError(f"nf.vis.show.layer: layer {layer.name} has no weights to show")
    weights = layer.get_weights()
    try:
        stats = [tensor_stats(w) for w in weights]
        values = [np.asarray(w.data_sync(), dtype=np.float64) for w in weights]
        shapes = [list(w.shape) for w in weights]
    finally:
        for w in weights:
            w.dispose()
    headers = ["Weight Name", "Shape", "Min", "Max", "# Params", "# Zeros", "# NaNs", "# Infinity"]
    rows = [
        [v.name, format_shape(shape), s["min"], s["max"], s["num_vals"], s["num_zeros"], s["num_nans"], s["num_infs"]]
        for v, shape, s in zip(variables, shapes, stats, strict=True)
    ]
    hist_height = float(options.get("height") or 220)
    table_px = rows_height(len(rows), options["font_size"])
    count = len(values)
    options = {**options, "width": options.get("width") or max(720, 90 * len(headers)),
               "height": (table_px + hist_height * count) / (count + 1)}  # fmt: skip
    ratios = [table_px] + [hist_height] * count
    surf = surface("show.layer", container, rows=count + 1, options=options, height_ratios=ratios)
    draw_table(surf.axes[0], headers, rows, options["font_size"])
    for ax, variable, data in zip(surf.axes[1:], variables, values, strict=True):
        draw_histogram(ax, data, int(options["max_bins"]), options["color"] or HIST_COLOR)
        ax.set_title(f"{variable.name}: values distribution", fontsize=options["font_size"])
    return surf.finish()
