"""``render.barchart`` and ``render.histogram`` (with tfjs-vis's summary statistics above it)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._options import VIS, format_number, label_axes, resolve
from .._surface import _MISSING, split_container, surface
from ._data import numbers
from .table import draw_table, rows_height

_BAR_DEFAULTS = {**VIS, "x_label": "", "y_label": "", "font_size": 11, "color": None}
_HIST_DEFAULTS = {**VIS, "font_size": 11, "max_bins": 12, "stats": None, "color": None}
BAR_COLOR, HIST_COLOR = "#4C78A0", "#001B44"


def barchart(container: Any, data: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """A bar chart of ``data = [{'index': .., 'value': ..}, ...]``.

    Options: ``width``, ``height``, ``x_label``, ``y_label`` (default none), ``font_size`` (11), ``color`` (one
    color, or one per bar), ``path``. Returns the matplotlib Figure."""
    container, (data, opts) = split_container("render.barchart", container, [data, opts])
    options = resolve("render.barchart", opts, options, _BAR_DEFAULTS)
    if not isinstance(data, Sequence) or isinstance(data, str) or not data:
        raise ValueError("nf.vis.render.barchart: data must be a non-empty list of {'index': .., 'value': ..}")
    for i, item in enumerate(data):
        if not isinstance(item, Mapping) or "index" not in item or "value" not in item:
            raise ValueError(f"nf.vis.render.barchart: data[{i}] must be {{'index': .., 'value': ..}}, got {item!r}")
    values = numbers("render.barchart", "data", data, key="value")
    index = [str(item["index"]) for item in data]
    color = options["color"] or BAR_COLOR
    if isinstance(color, Sequence) and not isinstance(color, str):
        color = [color[i % len(color)] for i in range(len(values))]
    surf = surface("render.barchart", container, options=options)
    ax = surf.axes[0]
    ax.bar(range(len(values)), values, color=color, tick_label=index)
    ax.axhline(0, color="#888888", linewidth=0.8)
    label_axes(ax, options)
    ax.grid(True, axis="y", alpha=0.3)
    return surf.finish()


def array_stats(values: np.ndarray) -> dict[str, float]:
    """tfjs-vis's summary statistics of numbers: ``num_vals``, ``min``, ``max``, ``num_zeros``, ``num_nans``,
    ``num_infs``."""
    finite_or_inf = values[~np.isnan(values)]
    return {
        "num_vals": int(values.size),
        "min": float(finite_or_inf.min()) if finite_or_inf.size else float("nan"),
        "max": float(finite_or_inf.max()) if finite_or_inf.size else float("nan"),
        "num_zeros": int((values == 0).sum()),
        "num_nans": int(np.isnan(values).sum()),
        "num_infs": int(np.isinf(values).sum()),
    }


_STAT_COLUMNS = (("num_vals", "Num Vals"), ("min", "Min"), ("max", "Max"), ("num_zeros", "# Zeros"),
                 ("num_nans", "# NaNs"), ("num_infs", "# Infinity"))  # fmt: skip


def stats_row(stats: Mapping[str, Any]) -> tuple[list[str], list[str]]:
    """Headers and cells of the statistics table (counts with their percentage, as tfjs-vis shows them)."""
    stats = {k if "_" in k or k in ("min", "max") else {"numVals": "num_vals", "numZeros": "num_zeros",
             "numNans": "num_nans", "numInfs": "num_infs"}.get(k, k): v for k, v in stats.items()}  # fmt: skip
    headers, cells = [], []
    total = stats.get("num_vals")
    for key, title in _STAT_COLUMNS:
        if stats.get(key) is None:
            continue
        value = stats[key]
        text = format_number(value)
        if key.startswith("num_") and key != "num_vals" and total and value:
            text += f" ({100 * value / total:.4g}%)"
        headers.append(title)
        cells.append(text)
    return headers, cells


def draw_histogram(ax: Any, values: np.ndarray, max_bins: int, color: str) -> None:
    """Bars of the finite values' counts in at most ``max_bins`` bins."""
    finite = values[np.isfinite(values)]
    if finite.size:
        edges = np.histogram_bin_edges(finite, bins=int(max_bins))
        ax.hist(finite, bins=edges, color=color, edgecolor="white", linewidth=0.5)
    ax.set_ylabel("Count of Records")
    ax.grid(True, axis="y", alpha=0.3)


def histogram(container: Any, data: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """A histogram of ``data`` (a list of numbers, of ``{'value': ..}``, a numpy array or a tensor), with a table of
    summary statistics above it (count, min, max, zeros, NaNs, infinities; NaNs and infinities are left out of the
    bars).

    Options: ``stats`` (``False``: no table; a dict of precomputed ``num_vals``, ``min``, ...), ``max_bins`` (12),
    ``color``, ``width``, ``height``, ``x_label``, ``y_label``, ``font_size`` (11), ``path``. Returns the Figure."""
    container, (data, opts) = split_container("render.histogram", container, [data, opts])
    options = resolve("render.histogram", opts, options, _HIST_DEFAULTS)
    values = numbers("render.histogram", "data", data, key="value")
    max_bins = options["max_bins"]
    if isinstance(max_bins, bool) or not isinstance(max_bins, int | np.integer) or max_bins < 1:
        raise ValueError(f"nf.vis.render.histogram: max_bins must be a positive int, got {max_bins!r}")
    stats = options["stats"]
    if stats is not False and stats is not None and not isinstance(stats, Mapping):
        raise TypeError(f"nf.vis.render.histogram: stats must be False or a dict, got {type(stats).__name__}")
    show_stats = stats is not False
    rows = 2 if show_stats else 1
    panel = float(options.get("height") or 320)
    table_px = rows_height(1, options["font_size"])
    ratios = [table_px, panel] if show_stats else None
    options = {**options, "height": (panel + table_px) / 2 if show_stats else panel}
    if show_stats and not options.get("width"):
        options["width"] = 640  # room for the six statistics
    surf = surface("render.histogram", container, rows=rows, options=options, height_ratios=ratios)
    if show_stats:
        headers, cells = stats_row(stats or array_stats(values))
        draw_table(surf.axes[0], headers, [cells], options["font_size"])
    ax = surf.axes[-1]
    draw_histogram(ax, values, int(max_bins), options["color"] or HIST_COLOR)
    label_axes(ax, options)
    return surf.finish()
