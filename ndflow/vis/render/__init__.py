"""tfjs-vis's ``render``: charts of data (``line_chart``, ``scatterplot``, ``barchart``, ``histogram``, ``heatmap``,
``confusion_matrix``, ``table``), drawn with matplotlib. Each takes a container first (see ``nf.vis``), the data,
and tfjs-vis's options (a dict, camelCase or snake_case, or keywords); each returns the matplotlib Figure."""

from .bars import barchart, histogram
from .matrix import confusion_matrix, heatmap
from .table import table
from .xy import line_chart, linechart, scatterplot

__all__ = ["barchart", "confusion_matrix", "heatmap", "histogram", "line_chart", "linechart", "scatterplot", "table"]
