"""Optimizers, as TF.js's ``tf.train``: ``nf.train.sgd(0.1).minimize(lambda: loss)``.

Factories ``sgd``, ``momentum``, ``adagrad``, ``adadelta``, ``adam``, ``adamax``, ``rmsprop`` (TF.js's
``tf.train.*``) and the classes behind them, registered by TF.js class name for ``deserialize``.
"""

from __future__ import annotations

from .adadelta import AdadeltaOptimizer, adadelta
from .adagrad import AdagradOptimizer, adagrad
from .adam import AdamOptimizer, adam
from .adamax import AdamaxOptimizer, adamax
from .momentum import MomentumOptimizer, momentum
from .optimizer import OPTIMIZER_CLASSES, Optimizer, OptimizerVariable, deserialize, serialize
from .rmsprop import RMSPropOptimizer, rmsprop
from .sgd import SGDOptimizer, sgd

__all__ = [
    "OPTIMIZER_CLASSES", "AdadeltaOptimizer", "AdagradOptimizer", "AdamOptimizer", "AdamaxOptimizer",
    "MomentumOptimizer", "Optimizer", "OptimizerVariable", "RMSPropOptimizer", "SGDOptimizer",
    "adadelta", "adagrad", "adam", "adamax", "deserialize", "momentum", "rmsprop", "serialize", "sgd",
]  # fmt: skip
