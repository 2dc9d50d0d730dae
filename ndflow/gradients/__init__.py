"""Autodiff: the API (``grad``, ``grads``, ...) and one gradient module per kernel family.

Gradient modules register with ``register_gradient(kernel_name, fn, inputs_to_save=...)`` on
import; every module of this package is imported, so a new family needs no edit here.
"""

import importlib
import pkgutil

from .api import custom_grad, grad, grads, value_and_grad, value_and_grads, variable_grads

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name != "api" and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")

__all__ = ["custom_grad", "grad", "grads", "value_and_grad", "value_and_grads", "variable_grads"]
