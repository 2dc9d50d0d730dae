"""tfjs-vis's option objects: ``{'xLabel': 'epoch', 'zoomToFit': True}`` as TF.js passes them, or the same in
snake_case as a dict or as keywords. Unknown names are an error that lists the ones the function takes."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..core.arguments import snake_case

#: Options every chart takes (tfjs-vis's ``VisOptions``) and ``path`` (where to save the figure).
VIS = {"width": None, "height": None, "x_label": None, "y_label": None, "font_size": None, "x_type": None,
       "y_type": None, "path": None}  # fmt: skip
#: tfjs-vis's ``XYPlotOptions`` on top of those.
XY = {**VIS, "x_axis_domain": None, "y_axis_domain": None, "zoom_to_fit": False, "series_colors": None}


def resolve(
    what: str, opts: Mapping[str, Any] | None, keywords: Mapping[str, Any], defaults: Mapping[str, Any]
) -> dict:
    """``defaults`` updated by ``opts`` then ``keywords`` (camelCase names taken as their snake_case spelling)."""
    if opts is not None and not isinstance(opts, Mapping):
        raise TypeError(f"nf.vis.{what}: opts: expected a dict of options, got {type(opts).__name__}")
    merged = dict(defaults)
    unknown = []
    for source in (opts or {}, keywords):
        for key, value in source.items():
            name = snake_case(str(key))
            if name not in defaults:
                unknown.append(str(key))
            else:
                merged[name] = value
    if unknown:
        raise TypeError(
            f"nf.vis.{what}: unknown option(s) {', '.join(map(repr, unknown))}; it takes {', '.join(sorted(defaults))}"
        )
    if merged.get("font_size") is not None:
        merged["font_size"] = float(merged["font_size"])
    return merged


def label_axes(ax: Any, options: Mapping[str, Any]) -> None:
    """Axis titles and font size from the options."""
    size = options.get("font_size")
    if options.get("x_label"):
        ax.set_xlabel(str(options["x_label"]), fontsize=size)
    if options.get("y_label"):
        ax.set_ylabel(str(options["y_label"]), fontsize=size)
    if size:
        ax.tick_params(labelsize=size)


def format_number(value: Any) -> str:
    """A number as tfjs-vis's tables show it (thousands separated, at most 4 decimals, no trailing zeros)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return str(value)
    if value != value or value in (float("inf"), float("-inf")):
        return str(value)
    text = f"{value:,.4f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text
