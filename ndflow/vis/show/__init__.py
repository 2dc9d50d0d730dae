"""tfjs-vis's ``show``: views of models and training (``history``, ``fit_callbacks``, ``model_summary``, ``layer``,
``per_class_accuracy``, ``confusion_matrix``, ``values_distribution``), drawn with matplotlib."""

from .history import history
from .live import FitCallbacks, fit_callbacks
from .model import layer, model_summary
from .quality import confusion_matrix, per_class_accuracy, values_distribution

__all__ = [
    "FitCallbacks", "confusion_matrix", "fit_callbacks", "history", "layer", "model_summary", "per_class_accuracy",
    "values_distribution",
]  # fmt: skip
