"""TF.js's alternative layer names, as snake_case aliases of the same factories.

TF.js 4.22 exports ``avgPool2d`` and ``avgPooling2d`` beside ``averagePooling2d``, ``maxPool2d`` beside
``maxPooling2d``, ``globalMaxPool2d`` beside ``globalMaxPooling2d`` (see its ``exports_layers``); ported code uses
both, so ``nf.layers.avg_pool2d`` is ``nf.layers.average_pooling2d`` under another name, and so on.
"""

from __future__ import annotations

from .factory import alias
from .pooling import (
    average_pooling1d,
    average_pooling2d,
    average_pooling3d,
    global_max_pooling1d,
    global_max_pooling2d,
    max_pooling1d,
    max_pooling2d,
)

avg_pool1d = alias(average_pooling1d, "avg_pool1d", "avgPool1d")
avg_pooling1d = alias(average_pooling1d, "avg_pooling1d", "avgPooling1d")
avg_pool2d = alias(average_pooling2d, "avg_pool2d", "avgPool2d")
avg_pooling2d = alias(average_pooling2d, "avg_pooling2d", "avgPooling2d")
avg_pool3d = alias(average_pooling3d, "avg_pool3d", "avgPool3d")
avg_pooling3d = alias(average_pooling3d, "avg_pooling3d", "avgPooling3d")
global_max_pool1d = alias(global_max_pooling1d, "global_max_pool1d", "globalMaxPool1d")
global_max_pool2d = alias(global_max_pooling2d, "global_max_pool2d", "globalMaxPool2d")
max_pool1d = alias(max_pooling1d, "max_pool1d", "maxPool1d")
max_pool2d = alias(max_pooling2d, "max_pool2d", "maxPool2d")

#: alias name -> the factory name it stands for (TF.js 4.22's list).
ALIASES: dict[str, str] = {
    "avg_pool1d": "average_pooling1d", "avg_pooling1d": "average_pooling1d",
    "avg_pool2d": "average_pooling2d", "avg_pooling2d": "average_pooling2d",
    "avg_pool3d": "average_pooling3d", "avg_pooling3d": "average_pooling3d",
    "global_max_pool1d": "global_max_pooling1d", "global_max_pool2d": "global_max_pooling2d",
    "max_pool1d": "max_pooling1d", "max_pool2d": "max_pooling2d",
}  # fmt: skip

__all__ = [
    "ALIASES", "avg_pool1d", "avg_pool2d", "avg_pool3d", "avg_pooling1d", "avg_pooling2d", "avg_pooling3d",
    "global_max_pool1d", "global_max_pool2d", "max_pool1d", "max_pool2d",
]  # fmt: skip
