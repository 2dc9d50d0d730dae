"""``render.heatmap`` and ``render.confusion_matrix``: matrices as colored cells, as tfjs-vis's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._options import VIS, format_number, label_axes, resolve
from .._surface import _MISSING, split_container, surface
from ._data import labels, matrix

_HEATMAP_DEFAULTS = {**VIS, "font_size": 12, "color_map": "viridis", "domain": None, "row_major": False}
_CONFUSION_DEFAULTS = {**VIS, "font_size": 12, "height": 400, "shade_diagonal": True, "show_text_overlay": True,
                       "color_map": None}  # fmt: skip
#: tfjs-vis's named color ranges (low, high); viridis is matplotlib's own.
RANGES = {"blues": ("#f7fbff", "#4292c6"), "greyscale": ("#000000", "#ffffff")}


def colormap(what: str, name: Any, default: str) -> Any:
    """A matplotlib colormap from ``'viridis'``, ``'blues'``, ``'greyscale'`` or a ``[low, high]`` pair of colors."""
    from matplotlib.colors import LinearSegmentedColormap

    name = default if name is None else name
    if isinstance(name, str):
        if name == "viridis":
            import matplotlib

            return matplotlib.colormaps["viridis"]
        if name not in RANGES:
            raise ValueError(
                f"nf.vis.{what}: color_map must be 'viridis', 'blues', 'greyscale' or [low, high], got {name!r}"
            )
        low, high = RANGES[name]
    elif isinstance(name, list | tuple) and len(name) == 2:
        low, high = name
    else:
        raise ValueError(
            f"nf.vis.{what}: color_map must be 'viridis', 'blues', 'greyscale' or [low, high], got {name!r}"
        )
    return LinearSegmentedColormap.from_list(f"nf_vis_{low}_{high}", [low, high])


def heatmap(container: Any, data: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """A heatmap of ``data = {'values': matrix, 'x_tick_labels': [...], 'y_tick_labels': [...]}``.

    As in tfjs-vis, ``values`` is in column-major order (``values[i]`` is the column at x = i) unless the option
    ``row_major`` is true; it may be a list of lists, a numpy array or a 2D tensor. Options: ``color_map``
    (``'viridis'``, ``'blues'``, ``'greyscale'``), ``domain`` (``[low, high]`` of the color scale), ``row_major``,
    ``width``, ``height``, ``x_label``, ``y_label``, ``font_size`` (12), ``path``. Returns the Figure."""
    container, (data, opts) = split_container("render.heatmap", container, [data, opts])
    options = resolve("render.heatmap", opts, options, _HEATMAP_DEFAULTS)
    if not isinstance(data, Mapping) or "values" not in data:
        raise TypeError(
            f"nf.vis.render.heatmap: data must be a dict {{'values': matrix, ...}}, got {type(data).__name__}"
        )
    keys = {
        k: data.get(k, data.get(alt)) for k, alt in (("x_tick_labels", "xTickLabels"), ("y_tick_labels", "yTickLabels"))
    }
    values = matrix("render.heatmap", "data['values']", data["values"])
    if options["row_major"]:
        values = values.T
    # values[x][y] from here on
    x_labels = labels("render.heatmap", "x_tick_labels", keys["x_tick_labels"], values.shape[0], "rows (x)")
    y_labels = labels("render.heatmap", "y_tick_labels", keys["y_tick_labels"], values.shape[1], "columns (y)")
    cmap = colormap("render.heatmap", options["color_map"], "viridis")
    domain = options["domain"]
    if domain is not None and len(domain) != 2:
        raise ValueError(f"nf.vis.render.heatmap: domain must be [low, high], got {domain!r}")
    surf = surface("render.heatmap", container, options=options)
    ax = surf.axes[0]
    low, high = (None, None) if domain is None else (float(domain[0]), float(domain[1]))
    image = ax.imshow(values.T, cmap=cmap, vmin=low, vmax=high, aspect="auto", interpolation="nearest")
    surf.figure.colorbar(image, ax=ax, label="value")
    _ticks(ax, values.shape[0], values.shape[1], x_labels, y_labels)
    label_axes(ax, options)
    return surf.finish()


def _ticks(ax: Any, nx: int, ny: int, x_labels: list[str] | None, y_labels: list[str] | None) -> None:
    step_x, step_y = max(1, nx // 20), max(1, ny // 20)
    ax.set_xticks(range(0, nx, step_x), x_labels[::step_x] if x_labels else range(0, nx, step_x))
    ax.set_yticks(range(0, ny, step_y), y_labels[::step_y] if y_labels else range(0, ny, step_y))


def confusion_matrix(
    container: Any, data: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any
) -> Any:
    """A confusion matrix ``data = {'values': [[count, ...], ...], 'tick_labels': [...]}``: row = true label,
    column = prediction (``nf.vis.metrics.confusion_matrix`` computes one).

    Options: ``shade_diagonal`` (True; False leaves the diagonal white, to look at the mistakes),
    ``show_text_overlay`` (True: the counts in the cells), ``color_map`` (default tfjs-vis's blues), ``width``,
    ``height`` (400), ``x_label``, ``y_label``, ``font_size`` (12), ``path``. Returns the Figure."""
    container, (data, opts) = split_container("render.confusion_matrix", container, [data, opts])
    options = resolve("render.confusion_matrix", opts, options, _CONFUSION_DEFAULTS)
    if not isinstance(data, Mapping) or "values" not in data:
        raise TypeError(
            f"nf.vis.render.confusion_matrix: data must be a dict {{'values': [[...], ...], 'tick_labels': [...]}}, "
            f"got {type(data).__name__}"
        )
    counts = matrix("render.confusion_matrix", "data['values']", data["values"])
    if counts.shape[0] != counts.shape[1]:
        raise ValueError(
            f"nf.vis.render.confusion_matrix: data['values'] must be square, got shape {list(counts.shape)}"
        )
    n = counts.shape[0]
    tick = data.get("tick_labels", data.get("tickLabels"))
    names = labels("render.confusion_matrix", "tick_labels", tick, n, "classes") or [f"Class {i}" for i in range(n)]
    cmap = colormap("render.confusion_matrix", options["color_map"], "blues")
    shaded = np.ones((n, n), dtype=bool)
    if not options["shade_diagonal"] and np.any(counts[~np.eye(n, dtype=bool)] != 0):
        np.fill_diagonal(shaded, False)
    if options["width"] is None:
        options["width"] = options["height"] * 1.15
    surf = surface("render.confusion_matrix", container, options=options)
    ax = surf.axes[0]
    scaled = np.where(shaded, counts, np.nan)
    cmap = cmap.with_extremes(bad="white")
    image = ax.imshow(scaled, cmap=cmap, aspect="auto", interpolation="nearest")
    surf.figure.colorbar(image, ax=ax, label="count")
    if options["show_text_overlay"]:
        low, high = np.nanmin(scaled), np.nanmax(scaled)
        for i in range(n):
            for j in range(n):
                dark = shaded[i, j] and high > low and (counts[i, j] - low) / (high - low) > 0.6
                ax.text(j, i, format_number(float(counts[i, j])), ha="center", va="center",
                        color="white" if dark else "black", fontsize=options["font_size"])  # fmt: skip
    ax.set_xticks(range(n), names, rotation=45 if n > 6 else 0)
    ax.set_yticks(range(n), names)
    ax.set_xlabel(options["x_label"] or "prediction", fontsize=options["font_size"])
    ax.set_ylabel(options["y_label"] or "label", fontsize=options["font_size"])
    return surf.finish()
