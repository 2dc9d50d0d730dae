"""``nf.vis``: tfjs-vis's API on matplotlib (``pip install 'ndflow[vis]'``).

- ``nf.vis.show``: ``history``, ``fit_callbacks`` (live curves during ``fit``), ``model_summary``, ``layer``,
  ``per_class_accuracy``, ``confusion_matrix``, ``values_distribution``;
- ``nf.vis.render``: ``line_chart``, ``scatterplot``, ``barchart``, ``histogram``, ``heatmap``,
  ``confusion_matrix``, ``table``;
- ``nf.vis.metrics``: ``accuracy``, ``confusion_matrix``, ``per_class_accuracy`` (ndflow ops; no matplotlib).

tfjs-vis draws on a "surface" (a tab of its visor, or a DOM element) given first; here the first argument is
where to draw: ``None`` (a new figure), a path (a new figure saved there), a matplotlib ``Figure`` or ``Axes``, or
a tfjs-vis surface ``{'name': ..., 'tab': ...}`` (a new figure titled with the name). It may be left out, the data
then coming first. Options are tfjs-vis's, in snake_case or as TF.js's camelCase dict, plus ``path`` (where to
save). Every drawing function returns the matplotlib ``Figure``. See docs/visualize.md.

Importing ``nf.vis`` does not import matplotlib: the first drawing does (an ImportError naming the extra if it is
missing).
"""

from . import metrics, render, show

__all__ = ["metrics", "render", "show"]
