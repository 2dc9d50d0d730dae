"""``render.table``: headers and rows drawn as a table, as tfjs-vis's."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from .._options import format_number, resolve
from .._surface import _MISSING, split_container, surface

_DEFAULTS = {"font_size": 14, "width": None, "height": None, "path": None}


def check_table(what: str, data: Any) -> tuple[list[str], list[list[Any]]]:
    """``(headers, rows)`` from ``{'headers': [...], 'values': [[...], ...]}``."""
    if not isinstance(data, Mapping):
        raise TypeError(
            f"nf.vis.{what}: data must be a dict {{'headers': [...], 'values': [[...], ...]}}, "
            f"got {type(data).__name__}"
        )
    if data.get("headers") is None:
        raise ValueError(f"nf.vis.{what}: data must have a 'headers' property")
    if data.get("values") is None:
        raise ValueError(f"nf.vis.{what}: data must have a 'values' property")
    headers, rows = [str(h) for h in data["headers"]], data["values"]
    if not isinstance(rows, Sequence) or any(not isinstance(r, Sequence) or isinstance(r, str) for r in rows):
        raise TypeError(f"nf.vis.{what}: data['values'] must be a list of rows (lists)")
    for i, row in enumerate(rows):
        if len(row) > len(headers):
            raise ValueError(f"nf.vis.{what}: data['values'][{i}] has {len(row)} cells for {len(headers)} headers")
    return headers, [list(r) for r in rows]


def draw_table(ax: Any, headers: list[str], rows: list[list[Any]], font_size: float | None) -> None:
    """Draw the table on ``ax`` (its frame and ticks hidden); numbers formatted as tfjs-vis does."""
    ax.set_axis_off()
    cells = [[format_number(v) for v in row] + [""] * (len(headers) - len(row)) for row in rows]
    table = ax.table(cellText=cells or None, colLabels=headers, loc="upper center", cellLoc="left", colLoc="left")
    table.auto_set_font_size(False)
    table.set_fontsize(font_size or 10)
    table.auto_set_column_width(list(range(len(headers))))
    for (row, _), cell in table.get_celld().items():
        cell.set_edgecolor("#cccccc")
        cell.visible_edges = "B"
        if row == 0:
            cell.set_text_props(fontweight="bold")
            cell.set_facecolor("#f2f2f2")
    table.scale(1, 1.3)


def rows_height(rows: int, font_size: float | None) -> float:
    """Pixels a table of ``rows`` rows (plus the header) needs."""
    return (rows + 1) * (font_size or 10) * 2.4 + 20


def table(container: Any, data: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any) -> Any:
    """A table of ``data = {'headers': [...], 'values': [[...], ...]}`` (one list per row).

    Options: ``font_size`` (14), ``width``, ``height`` (pixels; the height defaults to fit the rows), ``path``.
    Returns the matplotlib Figure."""
    container, (data, opts) = split_container("render.table", container, [data, opts])
    options = resolve("render.table", opts, options, _DEFAULTS)
    headers, rows = check_table("render.table", data)
    if options["height"] is None:
        options["height"] = rows_height(len(rows), options["font_size"])
    if options["width"] is None:
        options["width"] = max(320, 130 * len(headers))
    surf = surface("render.table", container, options=options)
    draw_table(surf.axes[0], headers, rows, options["font_size"])
    return surf.finish()
