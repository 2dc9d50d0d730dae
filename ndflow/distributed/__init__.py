"""``nf.distributed``: ndflow on engines that already run across machines (docs/scale-out.md).

- Batch inference: :class:`Predictor` / :func:`predictor` run a model over batches in Ray Data's
  ``map_batches`` (``ray_data.map_batches``) or Dask's ``map_blocks`` / ``map_partitions``
  (``dask_engine``); ``predict_files`` is ``ndflow predict-dataset``: images or ``.npy`` files in, Parquet out,
  on the engine ``'local'``, ``'ray'`` or ``'dask'``.
- Data-parallel training: ``model.fit(..., distribution=DataParallel())`` averages the gradients across the
  processes of a ``torch.distributed`` group (torchrun, or Ray Train's ``TorchTrainer``).

Nothing here is needed on one machine, and nothing is imported before it is used: the names below load their
module on first access, and Ray, Dask, pyarrow and torch load only when a function needs them (a missing one
is one ``ImportError`` naming the extra: ``pip install 'ndflow[ray]'``, ``'ndflow[dask]'``,
``'ndflow[distributed]'``).
"""

from __future__ import annotations

import importlib
from typing import Any

_NAMES = {
    "Predictor": "batch_predictor",
    "predictor": "batch_predictor",
    "load_model": "batch_predictor",
    "DataParallel": "data_parallel",
    "latest_checkpoint": "checkpoints",
    "predict_files": "engines",
    "map_batches": "ray_data",
    "map_blocks": "dask_engine",
    "map_partitions": "dask_engine",
    "expand_inputs": "dataset_files",
    "load_inputs": "dataset_files",
    "write_parquet": "dataset_files",
}

__all__ = sorted(_NAMES)


def __getattr__(name: str) -> Any:
    module = _NAMES.get(name)
    if module is None:
        raise AttributeError(f"module 'ndflow.distributed' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_NAMES))
