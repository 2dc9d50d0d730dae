"""Public ops, one module per family. Each converts its inputs, validates, and runs a kernel.

Every family module lists its public ops in ``__all__`` and, optionally, the ones that are also
``Tensor`` methods in ``CHAINED``. Families named after a TF.js namespace (``image``, ``linalg``,
``losses``, ...) stay namespaces (``nf.image.resize_bilinear``); the others are re-exported at
the top level (``nf.add``). New family modules are picked up without editing this file.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from types import ModuleType

from ..core.arguments import takes_snake_case_keywords, with_keyword_hint
from . import tensor_methods

NAMESPACES = frozenset({"fused", "image", "linalg", "losses", "math", "signal", "sparse", "spectral", "string"})
_HELPERS = frozenset({"convert", "tensor_methods"})

__all__: list[str] = []
families = {}
_hinted: dict[object, object] = {}
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name.startswith("_") or _info.name in _HELPERS:
        continue
    _module = importlib.import_module(f"{__name__}.{_info.name}")
    families[_info.name] = _module
    for _name in _module.__all__:  # `dataFormat=` gets "use 'data_format'" (ops run through C dispatch: there)
        _fn = getattr(_module, _name)
        if _fn in _hinted.values() or not (inspect.isfunction(_fn) and takes_snake_case_keywords(_fn)):
            continue
        if _fn not in _hinted:  # one wrapper per op, whichever families re-export it
            _hinted[_fn] = with_keyword_hint(_fn)
        setattr(_module, _name, _hinted[_fn])
    if _info.name in NAMESPACES:
        continue
    for _name in _module.__all__:
        _existing = globals().get(_name)
        if _existing is not None and not isinstance(_existing, ModuleType) and _existing is not getattr(_module, _name):
            raise ImportError(f"ndflow.ops: '{_name}' is defined by two families (second: {_info.name})")
        globals()[_name] = getattr(_module, _name)
        __all__.append(_name)

tensor_methods.attach(families.values())
