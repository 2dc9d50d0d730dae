"""``show.fit_callbacks``: callbacks for ``fit`` that redraw the training curves while it runs, as tfjs-vis's.

Where the curves go, decided at the first redraw:

- in a Jupyter notebook (an IPython kernel is running): the figure is shown under the cell and updated in place;
- where matplotlib has an interactive backend (a desktop session with Qt, Tk, ...): in a window, kept open;
- otherwise (a script, CI; matplotlib's Agg backend): nowhere on screen.

In every case, when a path is given (as the container or as the ``path`` option), the PNG there is written again
after each redraw, so an image viewer that reloads the file follows the training too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping
from typing import Any

from ...core.arguments import snake_case
from .._options import resolve
from .._surface import DEFAULT_HEIGHT, DEFAULT_WIDTH, DPI, matplotlib_module, new_figure
from .history import HISTORY_DEFAULTS, draw_history, group_metrics

FIT_DEFAULTS = {**HISTORY_DEFAULTS, "callbacks": None, "min_interval_ms": 200}
_NON_GUI = {"agg", "cairo", "pdf", "pgf", "ps", "svg", "template", "module://matplotlib_inline.backend_inline"}


def _interactive_backend() -> bool:
    import matplotlib

    backend = str(matplotlib.get_backend()).lower()
    if backend in _NON_GUI or "inline" in backend:
        return False
    try:
        from matplotlib.backends import BackendFilter, backend_registry

        return backend in backend_registry.list_builtin(BackendFilter.INTERACTIVE)
    except ImportError:  # matplotlib < 3.9
        from matplotlib import rcsetup

        return backend in [b.lower() for b in rcsetup.interactive_bk]


def _notebook() -> Any:
    """The running IPython kernel's shell, or None."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell if shell is not None and "IPKernelApp" in getattr(shell, "config", {}) else None


class FitCallbacks(dict):
    """The callbacks (``{'on_epoch_end': fn, 'on_batch_end': fn, 'on_train_end': fn}``) to pass to ``fit``, and
    what they draw: ``figure`` (the matplotlib Figure), ``path`` (the PNG written after each redraw, or None),
    ``renders`` (how many redraws so far) and ``logs`` (the values seen, per callback and metric)."""

    figure: Any
    path: str | None
    renders: int
    logs: dict[str, dict[str, list[float]]]


class _LivePlot:
    def __init__(self, container: Any, metrics: list[str], options: dict[str, Any], hooks: list[str]) -> None:
        self.metrics, self.options, self.hooks = metrics, options, hooks
        self.path = options.get("path")
        self.figure = None
        if isinstance(container, str | os.PathLike):
            self.path = os.fspath(container)
        elif container is not None and not isinstance(container, Mapping):
            if not hasattr(container, "subplots"):
                raise TypeError(
                    "nf.vis.show.fit_callbacks: container: expected None, a path, a matplotlib Figure or a surface "
                    f"{{'name': ...}}, got {type(container).__name__}"
                )
            self.figure = container
        self.title = container.get("name") if isinstance(container, Mapping) else None
        self.owned = self.figure is None
        self.logs: dict[str, dict[str, list[float]]] = {hook: {} for hook in hooks}
        self.mode: str | None = None
        self.handle: Any = None
        self.last = -float("inf")
        self.renders = 0

    def record(self, hook: str, logs: Mapping[str, Any] | None) -> None:
        for metric in self.metrics:
            value = (logs or {}).get(metric)
            if value is not None:
                self.logs[hook].setdefault(metric, []).append(float(value))

    def _start(self, rows: int, cols: int) -> None:
        width = float(self.options.get("width") or DEFAULT_WIDTH) * cols
        height = float(self.options.get("height") or DEFAULT_HEIGHT) * rows
        shell = _notebook()
        if shell is not None:
            self.mode = "notebook"
        elif _interactive_backend():
            self.mode = "window"
        else:
            self.mode = "file"
        if self.figure is None:
            if self.mode == "window":
                from matplotlib import pyplot

                self.figure = pyplot.figure(figsize=(width / DPI, height / DPI), dpi=DPI, layout="constrained")
                pyplot.show(block=False)
            else:
                self.figure = new_figure("show.fit_callbacks", width, height)

    def draw(self, hook: str, force: bool = False) -> None:
        now = time.perf_counter()
        if not force and "batch" in hook and (now - self.last) * 1000 < float(self.options["min_interval_ms"] or 0):
            return
        shown = [(h, [m for m in self.metrics if m in self.logs[h]]) for h in self.hooks]
        shown = [(h, ms) for h, ms in shown if ms]
        if not shown:
            return
        rows, cols = len(shown), max(len(group_metrics(ms)) for _, ms in shown)
        if self.figure is None:
            self._start(rows, cols)
        elif self.mode is None:
            self._start(rows, cols)
        figure = self.figure
        if self.owned:
            figure.set_size_inches(
                float(self.options.get("width") or DEFAULT_WIDTH) * cols / DPI,
                float(self.options.get("height") or DEFAULT_HEIGHT) * rows / DPI,
            )
        figure.clear()
        grid = figure.subplots(rows, cols, squeeze=False)
        for r, (h, present) in enumerate(shown):
            panel = dict(self.options, x_label="Batch" if "batch" in h else "Epoch" if "epoch" in h else None)
            history = {m: self.logs[h][m] for m in present}
            draw_history(list(grid[r]), history, present, panel)
            for c in range(len(group_metrics(present)), cols):
                grid[r][c].set_axis_off()
            grid[r][0].annotate(h, (0, 1.12), xycoords="axes fraction", fontweight="bold", fontsize=9)
        if self.title:
            figure.suptitle(self.title)
        self._show()
        self.last = time.perf_counter()
        self.renders += 1

    def _show(self) -> None:
        figure = self.figure
        if self.mode == "notebook":
            from IPython.display import display

            if self.handle is None:
                self.handle = display(figure, display_id=True)
            else:
                self.handle.update(figure)
        elif self.mode == "window":
            figure.canvas.draw_idle()
            figure.canvas.flush_events()
        if self.path is not None:
            figure.savefig(self.path, dpi=figure.dpi)


def fit_callbacks(
    container: Any, metrics: Any = None, opts: Mapping[str, Any] | None = None, **options: Any
) -> FitCallbacks:
    """Callbacks for ``model.fit(..., callbacks=...)`` that plot ``metrics`` (e.g. ``['loss', 'acc']``) live: one row
    per callback (``on_batch_end``: per batch; ``on_epoch_end``: per epoch, with the ``val_`` values), one panel per
    metric and its ``val_`` twin. Where it shows: see the module's docstring.

    Options: ``callbacks`` (which ones: default ``['on_epoch_end', 'on_batch_end']``; TF.js's ``'onEpochEnd'``
    spelling too), ``min_interval_ms`` (200: per-batch redraws closer together than this are skipped; the last
    one always happens when training ends), ``path`` (the PNG to write after each redraw), and those of
    ``show.history``. The container may be left out (``fit_callbacks(['loss'])``)."""
    if isinstance(container, list | tuple) and container and all(isinstance(m, str) for m in container):
        if isinstance(metrics, Mapping) and opts is None:  # fit_callbacks(['loss'], {'xLabel': ...})
            metrics, opts = None, metrics
        if metrics is None:
            container, metrics = None, container
    matplotlib_module("show.fit_callbacks")
    options = resolve("show.fit_callbacks", opts, options, FIT_DEFAULTS)
    if isinstance(metrics, str):
        metrics = [metrics]
    if not isinstance(metrics, list | tuple) or not metrics or not all(isinstance(m, str) for m in metrics):
        raise ValueError(
            f"nf.vis.show.fit_callbacks: metrics must be a non-empty list of metric names, got {metrics!r}"
        )
    names = options["callbacks"] or ["on_epoch_end", "on_batch_end"]
    hooks = [snake_case(str(n)) for n in ([names] if isinstance(names, str) else names)]
    bad = [n for n in hooks if n not in ("on_epoch_end", "on_batch_end")]
    if bad:
        raise ValueError(f"nf.vis.show.fit_callbacks: callbacks may be 'on_epoch_end' and 'on_batch_end', got {bad}")
    plot = _LivePlot(container, list(metrics), options, hooks)
    callbacks = FitCallbacks()

    def make(hook: str) -> Any:
        def callback(_: int, logs: Mapping[str, Any] | None = None) -> None:
            plot.record(hook, logs)
            plot.draw(hook)
            callbacks.figure, callbacks.renders = plot.figure, plot.renders

        return callback

    def at_train_end(logs: Mapping[str, Any] | None = None) -> None:
        if plot.renders == 0 or any("batch" in h for h in hooks):
            plot.draw(hooks[-1], force=True)
        callbacks.figure, callbacks.renders = plot.figure, plot.renders

    for hook in hooks:
        callbacks[hook] = make(hook)
    callbacks["on_train_end"] = at_train_end
    callbacks.figure, callbacks.path, callbacks.renders, callbacks.logs = plot.figure, plot.path, 0, plot.logs
    return callbacks
