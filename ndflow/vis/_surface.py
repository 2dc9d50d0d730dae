"""Where a plot goes: tfjs-vis's "surface" (a visor tab or a DOM element) becomes a matplotlib figure here.

Every ``nf.vis`` function takes, in tfjs-vis's first place, a *container*:

- ``None``: a new figure;
- a path (``str`` or ``os.PathLike``): a new figure, saved there (PNG, SVG, PDF: matplotlib picks the format
  from the suffix);
- a matplotlib ``Figure`` (or ``SubFigure``): cleared and drawn on;
- a matplotlib ``Axes`` (or a list of them, one per panel): drawn on, for plots of as many panels;
- a tfjs-vis surface ``{'name': ..., 'tab': ...}``: a new figure titled with the name.

The container may also be left out (``show.history(history, ['loss'])``): the data then come first and the
plot goes on a new figure. Every function returns the matplotlib ``Figure`` and, when a path was given (as the
container or as the ``path`` option), saves it there. Figures are made with ``matplotlib.figure.Figure``, not
``pyplot``: nothing opens a window or collects in pyplot's list of figures; in a notebook the returned figure
shows itself.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

#: Pixels per inch of the figures made here (``width``/``height`` options are in pixels, as in tfjs-vis).
DPI = 100
#: Size of one panel when the options give none (tfjs-vis sizes a chart to its container).
DEFAULT_WIDTH, DEFAULT_HEIGHT = 480, 320
_MISSING: Any = object()


def matplotlib_module(what: str) -> Any:
    """``matplotlib``, or one ImportError naming the extra that installs it."""
    try:
        import matplotlib
        import matplotlib.figure  # noqa: F401
    except ImportError:
        raise ImportError(f"nf.vis.{what} needs matplotlib: pip install 'ndflow[vis]'") from None
    return matplotlib


def _is_matplotlib_object(value: Any) -> bool:
    module = type(value).__module__ or ""
    return module.startswith("matplotlib.") and any(
        cls.__name__ in ("Figure", "SubFigure", "Axes", "FigureBase") for cls in type(value).__mro__
    )


def is_container(value: Any) -> bool:
    """Whether ``value`` is something to draw on (see the module's docstring) rather than data."""
    if value is None or isinstance(value, str | os.PathLike):
        return True
    if isinstance(value, dict):
        return "name" in value and not ({"values", "headers", "history"} & value.keys())
    if isinstance(value, list | tuple) and value and all(_is_matplotlib_object(v) for v in value):
        return True
    return _is_matplotlib_object(value)


def split_container(what: str, container: Any, args: Sequence[Any]) -> tuple[Any, list[Any]]:
    """``(container, args)`` for a call made either as tfjs-vis does (container first) or with the data first.

    ``args`` are the parameters after the container, the last one being optional; with the data first, every
    value moves one place to the right and the container is None."""
    given = [None if a is _MISSING else a for a in args]
    if isinstance(container, int | float | complex):  # never data here
        raise TypeError(
            f"nf.vis.{what}: container: expected None, a path, a matplotlib Figure or Axes, or a surface "
            f"{{'name': ...}}, got {type(container).__name__}"
        )
    if is_container(container):
        return container, given
    if given and given[-1] is not None:
        return container, given  # all places taken: the caller's check reports the odd container
    return None, [container, *given[:-1]]


class Surface:
    """A figure and the panels (axes) of one plot, with where to save it."""

    def __init__(self, figure: Any, axes: list[Any], path: str | None) -> None:
        self.figure = figure
        self.axes = axes
        self.path = path

    def finish(self) -> Any:
        """Save the figure where asked; return it."""
        if self.path is not None:
            self.figure.savefig(self.path, dpi=self.figure.dpi)
        return self.figure


def new_figure(what: str, width_px: float, height_px: float) -> Any:
    """A matplotlib Figure of that size in pixels, outside pyplot."""
    matplotlib_module(what)
    from matplotlib.figure import Figure

    return Figure(figsize=(width_px / DPI, height_px / DPI), dpi=DPI, layout="constrained")


def surface(
    what: str,
    container: Any,
    rows: int = 1,
    cols: int = 1,
    options: dict[str, Any] | None = None,
    height_ratios: Sequence[float] | None = None,
) -> Surface:
    """The figure and a ``rows x cols`` grid of axes for ``container``; ``options`` give ``width``/``height`` (per
    panel, in pixels) and ``path`` (where to save)."""
    matplotlib_module(what)
    options = options or {}
    width = float(options.get("width") or DEFAULT_WIDTH)
    height = float(options.get("height") or DEFAULT_HEIGHT)
    path = options.get("path")
    title = None
    if isinstance(container, dict):
        title, container = str(container["name"]), None
    if container is None or isinstance(container, str | os.PathLike):
        if container is not None:
            path = os.fspath(container)
        figure = new_figure(what, width * cols, height * rows)
        axes = list(figure.subplots(rows, cols, squeeze=False, height_ratios=height_ratios).ravel())
    elif isinstance(container, list | tuple):
        if len(container) != rows * cols:
            raise ValueError(
                f"nf.vis.{what}: container: expected {rows * cols} Axes (one per panel), got {len(container)}"
            )
        axes = list(container)
        for ax in axes:
            ax.clear()
        figure = axes[0].figure
    elif hasattr(container, "subplots"):  # a Figure or SubFigure
        figure = container
        figure.clear()
        axes = list(figure.subplots(rows, cols, squeeze=False, height_ratios=height_ratios).ravel())
    elif hasattr(container, "plot"):  # one Axes
        if rows * cols != 1:
            raise ValueError(
                f"nf.vis.{what}: container: this plot has {rows * cols} panels; give a Figure, a path, None or a "
                f"list of {rows * cols} Axes, got one Axes"
            )
        container.clear()
        axes, figure = [container], container.figure
    else:
        raise TypeError(
            f"nf.vis.{what}: container: expected None, a path, a matplotlib Figure or Axes, or a surface "
            f"{{'name': ...}}, got {type(container).__name__}"
        )
    if title is not None:
        figure.suptitle(title)
    return Surface(figure, axes, None if path is None else os.fspath(path))
