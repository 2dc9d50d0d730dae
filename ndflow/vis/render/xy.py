"""``render.line_chart`` and ``render.scatterplot``: series of ``{x, y}`` points, as tfjs-vis's."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from .._options import XY, label_axes, resolve
from .._surface import _MISSING, split_container, surface
from ._data import xy_series

_XY_DEFAULTS = {**XY, "x_label": "x", "y_label": "y", "font_size": 11}


def _scale(ax: Any, axis: str, values: list[np.ndarray], options: Mapping[str, Any]) -> None:
    """tfjs-vis's axis domain: ``zoom_to_fit`` fits the data; else the given domain; else from zero."""
    domain = options.get(f"{axis}_axis_domain")
    setter = ax.set_ylim if axis == "y" else ax.set_xlim
    if options.get("zoom_to_fit"):
        return
    if domain is not None:
        if len(domain) != 2:
            raise ValueError(f"{axis}_axis_domain must be [low, high], got {domain!r}")
        setter(float(domain[0]), float(domain[1]))
        return
    finite = np.concatenate([v[np.isfinite(v)] for v in values]) if values else np.empty(0)
    if finite.size:
        low, high = min(0.0, float(finite.min())), max(0.0, float(finite.max()))
        if low == high:
            high = low + 1.0
        pad = (high - low) * 0.02
        setter(low - (pad if low < 0 else 0), high + (pad if high > 0 else 0))


def plot_lines(ax: Any, xs: list, ys: list, names: list[str], options: Mapping[str, Any]) -> None:
    """Draw line series on ``ax`` with tfjs-vis's scales, labels and legend."""
    colors = options.get("series_colors")
    if colors is not None and len(colors) != len(names):
        raise ValueError(f"series_colors has {len(colors)} color(s) for {len(names)} data series; give one each")
    for i, (x, y, name) in enumerate(zip(xs, ys, names, strict=True)):
        ax.plot(x, y, label=name, color=None if colors is None else colors[i], marker="." if len(x) < 2 else None)
    _scale(ax, "y", ys, options)
    label_axes(ax, options)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=options.get("font_size"))


def line_chart(container: Any, data: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """A line chart of ``data = {'values': [{'x': .., 'y': ..}, ...] or a list of such lists, 'series': [names]}``.

    Options (tfjs-vis's ``XYPlotOptions``, snake_case or camelCase): ``width``, ``height`` (pixels), ``x_label``
    (default ``'x'``), ``y_label`` (``'y'``), ``font_size`` (11), ``zoom_to_fit`` (fit the y axis to the data
    instead of starting it at zero), ``x_axis_domain``/``y_axis_domain`` (``[low, high]``), ``series_colors``,
    ``path`` (save the figure there). Returns the matplotlib Figure."""
    container, (data, opts) = split_container("render.line_chart", container, [data, opts])
    options = resolve("render.line_chart", opts, options, _XY_DEFAULTS)
    xs, ys, names = xy_series("render.line_chart", data)
    surf = surface("render.line_chart", container, options=options)
    try:
        plot_lines(surf.axes[0], xs, ys, names, options)
    except ValueError as exc:
        raise ValueError(f"nf.vis.render.line_chart: {exc}") from None
    return surf.finish()


def scatterplot(container: Any, data: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """A scatter plot of ``data = {'values': [{'x': .., 'y': ..}, ...] or a list of such lists, 'series': [names]}``.

    Takes the options of :func:`line_chart`; ``zoom_to_fit``, ``x_axis_domain`` and ``y_axis_domain`` apply to both
    axes as in tfjs-vis. Returns the matplotlib Figure."""
    container, (data, opts) = split_container("render.scatterplot", container, [data, opts])
    options = resolve("render.scatterplot", opts, options, _XY_DEFAULTS)
    xs, ys, names = xy_series("render.scatterplot", data)
    colors = options.get("series_colors")
    if colors is not None and len(colors) != len(names):
        raise ValueError(
            f"nf.vis.render.scatterplot: series_colors has {len(colors)} color(s) for {len(names)} data series"
        )
    surf = surface("render.scatterplot", container, options=options)
    ax = surf.axes[0]
    markers = "osD^v<>ph*"
    for i, (x, y, name) in enumerate(zip(xs, ys, names, strict=True)):
        color = None if colors is None else colors[i]
        ax.scatter(
            x, y, label=name, s=18, marker=markers[i % len(markers)], facecolors="none", edgecolors=color or f"C{i}"
        )
    try:
        _scale(ax, "x", xs, options)
        _scale(ax, "y", ys, options)
    except ValueError as exc:
        raise ValueError(f"nf.vis.render.scatterplot: {exc}") from None
    label_axes(ax, options)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=options.get("font_size"))
    return surf.finish()


#: tfjs-vis's spelling.
linechart = line_chart
