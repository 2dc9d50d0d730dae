"""``nf.math``: TF.js's ``tf.math`` namespace (``tf.math.confusionMatrix``).

TF.js 4.22 puts one op there; ndflow defines it with the selection ops (it is also ``nf.confusion_matrix``)
and names it here so that ``tf.math.confusionMatrix(...)`` ports as ``nf.math.confusion_matrix(...)``.
"""

from __future__ import annotations

from .selection import confusion_matrix

__all__ = ["confusion_matrix"]
