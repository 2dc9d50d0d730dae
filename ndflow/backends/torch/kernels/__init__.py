"""The torch kernels, one module per kernel family; importing this package registers them all.

Every module here except ``common`` registers its kernels with ``@torch_kernel(name)`` on import;
a new family module is picked up without editing this file.
"""

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name != "common" and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")
