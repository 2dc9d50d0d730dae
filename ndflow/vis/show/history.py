"""``show.history``: the curves of a training history, one panel per metric with its ``val_`` twin, as
tfjs-vis's (accuracy panels span 0..1 unless ``zoom_to_fit_accuracy``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from .._options import XY, resolve
from .._surface import _MISSING, split_container, surface
from ..render.xy import plot_lines

HISTORY_DEFAULTS = {**XY, "x_label": "Iteration", "y_label": "Value", "font_size": 11, "zoom_to_fit_accuracy": False}


def _float(value: Any) -> float:
    if value is None:
        return math.nan
    if hasattr(value, "data_sync"):  # a scalar tensor left in a log
        return float(value.data_sync()[0])
    return float(value)


def metric_values(history: Any, metric: str, index: int) -> np.ndarray:
    """The values of ``metric`` in a History, ``{'history': {...}}``, a dict of lists, a list of logs, or a list
    with one list of logs per metric (tfjs-vis's ``HistoryLike``)."""
    if isinstance(history, Sequence) and not isinstance(history, str):
        logs = history[index] if history and isinstance(history[0], Sequence) else history
        return np.asarray([_float(log.get(metric)) for log in logs])
    return np.asarray([_float(v) for v in _history_dict(history)[metric]])


def _history_dict(history: Any) -> Mapping[str, Sequence[Any]]:
    inner = getattr(history, "history", None)
    if inner is None and isinstance(history, Mapping):
        inner = history.get("history", history) if isinstance(history.get("history"), Mapping) else history
    return inner if isinstance(inner, Mapping) else {}


def _available(history: Any) -> list[str]:
    if isinstance(history, Sequence) and not isinstance(history, str):
        names: set[str] = set()
        for item in history:
            for log in item if isinstance(item, Sequence) else [item]:
                if isinstance(log, Mapping):
                    names.update(k for k in log if k not in ("batch", "size"))
        return sorted(names)
    return sorted(_history_dict(history))


def check_history(what: str, history: Any, metrics: Any) -> list[str]:
    """The metric names, checked against what ``history`` holds; one clear error otherwise."""
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, Sequence) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise ValueError(f"nf.vis.{what}: metrics must be a non-empty list of metric names, got {metrics!r}")
    is_list = isinstance(history, Sequence) and not isinstance(history, str)
    if not is_list and not isinstance(history, Mapping) and not isinstance(getattr(history, "history", None), Mapping):
        raise TypeError(
            f"nf.vis.{what}: history must be a History (what fit returns), a dict of lists or a list of logs, "
            f"got {type(history).__name__}"
        )
    if is_list:
        if any(not isinstance(log, Mapping | Sequence) for log in history):
            raise TypeError(f"nf.vis.{what}: history, as a list, must hold logs (dicts) or lists of logs")
        empty = len(history) == 0 or all(isinstance(h, Sequence) and len(h) == 0 for h in history)
    else:
        empty = all(len(v) == 0 for v in _history_dict(history).values())
    if empty:
        raise ValueError(f"nf.vis.{what}: the history is empty (no epoch was recorded): nothing to plot")
    available = _available(history)
    nested = is_list and isinstance(history[0], Sequence)
    if nested and len(history) < len(metrics):
        raise ValueError(f"nf.vis.{what}: history has {len(history)} list(s) of logs for {len(metrics)} metrics")
    for i, metric in enumerate(metrics):
        logs = history[i] if nested else history if is_list else None
        present = metric in available if logs is None else any(isinstance(x, Mapping) and metric in x for x in logs)
        if not present:
            there = ", ".join(map(repr, available)) or "nothing"
            raise ValueError(f"nf.vis.{what}: metric {metric!r} is not in the history; it has {there}")
    return list(metrics)


def group_metrics(metrics: list[str]) -> dict[str, list[str]]:
    """Panels: each metric with its ``val_`` twin (tfjs-vis puts ``val_x`` on ``x``'s panel)."""
    plots: dict[str, list[str]] = {}
    for metric in metrics:
        plots.setdefault(metric.replace("val_", "", 1) if metric.startswith("val_") else metric, []).append(metric)
    return plots


def draw_history(axes: list[Any], history: Any, metrics: list[str], options: Mapping[str, Any]) -> None:
    """One panel per group of ``metrics`` on ``axes``."""
    for ax, (name, series) in zip(axes, group_metrics(metrics).items(), strict=False):
        ys = [metric_values(history, m, metrics.index(m)) for m in series]
        xs = [np.arange(len(y)) for y in ys]
        panel = dict(options)
        if all("acc" in s for s in series):
            if panel.get("zoom_to_fit_accuracy"):
                panel["zoom_to_fit"] = True
            else:
                panel["y_axis_domain"], panel["zoom_to_fit"] = [0, 1], False
        plot_lines(ax, xs, ys, series, panel)
        ax.set_title(name, fontsize=options.get("font_size"))


def history(
    container: Any,
    history: Any = _MISSING,
    metrics: Any = _MISSING,
    opts: Mapping[str, Any] | None = None,
    **options: Any,
) -> Any:
    """Curves of ``metrics`` (e.g. ``['loss', 'val_loss', 'acc']``) from a training ``history``: what ``fit``
    returns, its ``.history`` dict, ``{'history': {...}}``, a list of epoch logs, or a list with one list of logs
    per metric. ``val_x`` shares ``x``'s panel.

    Options: those of ``render.line_chart`` (``x_label`` defaults to ``'Iteration'``, ``y_label`` to ``'Value'``;
    ``width``/``height`` are per panel) and ``zoom_to_fit_accuracy`` (accuracy panels otherwise span 0..1).
    Returns the matplotlib Figure."""
    container, (history, metrics, opts) = split_container("show.history", container, [history, metrics, opts])
    options = resolve("show.history", opts, options, HISTORY_DEFAULTS)
    metrics = check_history("show.history", history, metrics)
    panels = len(group_metrics(metrics))
    surf = surface("show.history", container, rows=1, cols=panels, options=options)
    try:
        draw_history(surf.axes, history, metrics, options)
    except ValueError as exc:
        raise ValueError(f"nf.vis.show.history: {exc}") from None
    return surf.finish()
