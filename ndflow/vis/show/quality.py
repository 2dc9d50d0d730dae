"""``show.per_class_accuracy``, ``show.confusion_matrix`` and ``show.values_distribution``: a classifier's
evaluation and a tensor's values, as tfjs-vis shows them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.tensor import Tensor
from .._options import VIS, resolve
from .._surface import _MISSING, split_container
from ..metrics import tensor_stats
from ..render import matrix as render_matrix
from ..render.bars import histogram
from ..render.table import table

_TABLE_DEFAULTS = {"font_size": 14, "width": None, "height": None, "path": None}


def per_class_accuracy(
    container: Any,
    class_accuracy: Any = _MISSING,
    class_labels: Sequence[str] | None = None,
    opts: Mapping[str, Any] | None = None,
    **options: Any,
) -> Any:
    """A table of ``class_accuracy`` (what ``nf.vis.metrics.per_class_accuracy`` returns: one
    ``{'accuracy', 'count'}`` per class): class, accuracy, number of samples. ``class_labels`` name the classes
    (default their index). Options: those of ``render.table``. Returns the matplotlib Figure."""
    if not _is_accuracy_list(class_accuracy) and _is_accuracy_list(container):  # data first
        container, class_accuracy, class_labels = (
            None,
            container,
            class_accuracy if class_accuracy is not _MISSING else None,
        )
    options = resolve("show.per_class_accuracy", opts, options, _TABLE_DEFAULTS)
    if not _is_accuracy_list(class_accuracy):
        raise TypeError(
            "nf.vis.show.per_class_accuracy: class_accuracy must be a list of {'accuracy': .., 'count': ..} "
            f"(nf.vis.metrics.per_class_accuracy's result), got {class_accuracy!r:.80}"
        )
    if class_labels is not None and len(class_labels) != len(class_accuracy):
        raise ValueError(
            f"nf.vis.show.per_class_accuracy: class_labels has {len(class_labels)} name(s) for "
            f"{len(class_accuracy)} classes"
        )
    rows = [
        [str(class_labels[i]) if class_labels is not None else str(i), float(c["accuracy"]), int(c["count"])]
        for i, c in enumerate(class_accuracy)
    ]
    data = {"headers": ["Class", "Accuracy", "# Samples"], "values": rows}
    return table(container, data, {k: v for k, v in options.items() if v is not None})


def _is_accuracy_list(value: Any) -> bool:
    return (
        isinstance(value, Sequence)
        and not isinstance(value, str)
        and len(value) > 0
        and all(isinstance(c, Mapping) and "accuracy" in c and "count" in c for c in value)
    )


def confusion_matrix(
    container: Any,
    confusion_matrix: Any = _MISSING,
    class_labels: Sequence[str] | None = None,
    opts: Mapping[str, Any] | None = None,
    **options: Any,
) -> Any:
    """A confusion matrix (what ``nf.vis.metrics.confusion_matrix`` returns: ``matrix[label][prediction]``, a list
    of lists or a 2D tensor) with ``class_labels`` on its axes; ``render.confusion_matrix`` draws it and takes the
    same options. Returns the matplotlib Figure."""
    container, (confusion_matrix, class_labels, opts) = split_container(
        "show.confusion_matrix", container, [confusion_matrix, class_labels, opts]
    )
    if isinstance(confusion_matrix, Mapping):
        data = dict(confusion_matrix)
    else:
        data = {"values": confusion_matrix}
    if class_labels is not None:
        data["tick_labels"] = list(class_labels)
    return render_matrix.confusion_matrix(container, data, opts, **options)


def values_distribution(
    container: Any, tensor: Any = _MISSING, opts: Mapping[str, Any] | None = None, **options: Any
) -> Any:
    """A histogram of every value of ``tensor`` with its statistics (count, min, max, zeros, NaNs, infinities)
    above it. Options: those of ``render.histogram`` (height 150 by default). Returns the matplotlib Figure."""
    container, (tensor, opts) = split_container("show.values_distribution", container, [tensor, opts])
    options = resolve(
        "show.values_distribution", opts, options, {**VIS, "font_size": 11, "max_bins": 12, "color": None}
    )
    if not isinstance(tensor, Tensor):
        raise TypeError(f"nf.vis.show.values_distribution: tensor must be a Tensor, got {type(tensor).__name__}")
    if tensor.is_disposed:
        raise ValueError("nf.vis.show.values_distribution: tensor is disposed")
    stats = tensor_stats(tensor)
    options["height"] = options["height"] or 150
    return histogram(container, tensor, {k: v for k, v in options.items() if v is not None}, stats=stats)
