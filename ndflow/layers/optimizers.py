"""Optimizers by name for ``compile(optimizer='adam')``, with TF.js's defaults (tfjs-layers ``optimizers``)."""

from __future__ import annotations

from collections.abc import Callable

from ..train import Optimizer, adadelta, adagrad, adam, adamax, momentum, rmsprop, sgd
from .backend import epsilon

#: String optimizers with TF.js's defaults (``'momentum'`` is beyond TF.js: lr 0.01, momentum 0.9).
OPTIMIZERS: dict[str, Callable[[], Optimizer]] = {
    "Adagrad": lambda: adagrad(0.01),
    "Adadelta": lambda: adadelta(1, 0.95, epsilon()),
    "Adam": lambda: adam(0.001, 0.9, 0.999, epsilon()),
    "Adamax": lambda: adamax(0.002, 0.9, 0.999, epsilon(), 0),
    "RMSProp": lambda: rmsprop(0.001, 0.9, 0, epsilon()),
    "SGD": lambda: sgd(0.01),
    "Momentum": lambda: momentum(0.01, 0.9),
}


def get_optimizer(identifier: str) -> Optimizer:
    """A new optimizer for a name (``'sgd'``, ``'adam'``, ``'RMSProp'``, ...), with TF.js's defaults."""
    for name, make in OPTIMIZERS.items():
        if identifier in (name, name.lower()):
            return make()
    raise ValueError(f"Unknown optimizer {identifier!r}; known: {', '.join(n.lower() for n in OPTIMIZERS)}")


__all__ = ["OPTIMIZERS", "get_optimizer"]
