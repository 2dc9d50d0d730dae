"""``predict_files``: the model over files (images or ``.npy``) on an engine, the results as Parquet in a folder:
``'local'`` (a plain loop in this process), ``'ray'`` (Ray Data, ``ray_data.py``) or ``'dask'``
(``dask_engine.py``). Every engine writes one row per file: its ``path`` and the model's outputs."""

from __future__ import annotations

import os
from typing import Any

from .batch_predictor import predictor
from .dataset_files import chunks, expand_inputs, predict_part

ENGINES = ("local", "ray", "dask")


def predict_files(
    model: str | os.PathLike[str],
    inputs: str | list[str],
    output: str | os.PathLike[str],
    *,
    engine: str = "local",
    workers: int = 1,
    batch_size: int = 64,
    address: str | None = None,
    **options: Any,
) -> int:
    """Run ``model`` over ``inputs`` (a glob, a folder or a list of files) on ``engine`` with ``workers`` workers
    and write Parquet into the folder ``output``; returns the number of rows. ``options`` go to the predictor
    (``scale``, ``channels``, ``backend``, ...)."""
    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {engine!r}")
    for name, value in (("workers", workers), ("batch_size", batch_size)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    paths = expand_inputs(inputs) if isinstance(inputs, str) else [os.fspath(p) for p in inputs]
    if not paths:
        raise ValueError("inputs: no file to run the model on")
    output = os.fspath(output)
    if os.path.isfile(output):
        raise ValueError(f"output {output!r} is a file; give a folder for the Parquet parts")
    os.makedirs(output, exist_ok=True)
    model = os.fspath(model)
    if engine == "ray":
        from .ray_data import predict_files_ray

        return predict_files_ray(paths, model, output, workers=workers, batch_size=batch_size, address=address,
                                 **options)  # fmt: skip
    if engine == "dask":
        from .dask_engine import predict_files_dask

        return predict_files_dask(paths, model, output, workers=workers, batch_size=batch_size, address=address,
                                  **options)  # fmt: skip
    p = predictor(model, **options)
    return sum(predict_part(p, part, output, i, batch_size) for i, part in enumerate(chunks(paths, batch_size * 4)))


__all__ = ["ENGINES", "predict_files"]
