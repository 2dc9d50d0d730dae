"""The webgpu kernels, one module per kernel family; importing this package registers them all.

Every module here except ``common`` and ``forward`` registers its GPU kernels with ``@gpu_kernel(name)``;
``forward`` then registers, for every cpu kernel without a GPU program, a kernel that runs the cpu kernel on
the CPU values (see its docstring).
"""

import importlib
import pkgutil

for _info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
    if _info.name not in ("common", "forward") and not _info.name.startswith("_"):
        importlib.import_module(f"{__name__}.{_info.name}")

from . import forward  # noqa: E402  (after the GPU kernels: it fills the gaps)

forward.register_forwarders()
