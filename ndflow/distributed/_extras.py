"""The optional engines of ``nf.distributed``, imported only when used: a missing one is one clear error."""

from __future__ import annotations

import importlib
from types import ModuleType

#: The pip extra that installs each optional module.
EXTRAS = {
    "ray": "ray",
    "ray.data": "ray",
    "ray.train": "ray",
    "dask": "dask",
    "dask.array": "dask",
    "dask.bag": "dask",
    "dask.dataframe": "dask",
    "distributed": "dask",
    "pyarrow": "ray",
    "pyarrow.parquet": "ray",
    "pandas": "dask",
    "torch": "distributed",
    "torch.distributed": "distributed",
    "PIL": "image",
}


def require(module: str, what: str) -> ModuleType:
    """``import module``, or an ``ImportError`` saying that ``what`` needs it and which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        extra = EXTRAS.get(module, EXTRAS.get(module.split(".")[0], module))
        hint = "pyarrow (in the ray and dask extras)" if module.startswith("pyarrow") else module
        raise ImportError(f"{what} needs {hint}: pip install 'ndflow[{extra}]' ({exc})") from None


__all__ = ["EXTRAS", "require"]
