"""Batch inference on Dask: a predictor over the blocks of a ``dask.array`` (``map_blocks``) or the partitions of
a ``dask.bag`` / ``dask.dataframe`` (``map_partitions``). The predictor pickles as its settings; each worker
process loads the model on its first task and keeps it for the next ones (``predictor.py``).

    import dask.array as da
    import ndflow.distributed as nfd

    images = da.from_zarr("faces.zarr")                                # [n, 128, 128, 3] uint8
    scores = nfd.map_blocks(images, "blazeface/model.json")           # [n, ...] float32, lazily
    scores.to_zarr("scores.zarr")
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ._extras import require
from .batch_predictor import Predictor, predictor


def _as_predictor(model: Any, options: dict[str, Any]) -> Predictor:
    if isinstance(model, Predictor):
        if options:
            raise ValueError("map_blocks/map_partitions: options go to nf.distributed.predictor(), not with one")
        return model
    return predictor(model, **options)


def map_blocks(array: Any, model: Any, **options: Any) -> Any:
    """The model's (first) output over a ``dask.array`` of samples ``[n, ...]``: one block of rows at a time (the
    other axes are made one chunk each). ``model``: a path / URL, or a :func:`predictor`."""
    da = require("dask.array", "nf.distributed.map_blocks (Dask)")
    if not isinstance(array, da.Array):
        raise TypeError(f"map_blocks: array must be a dask.array.Array, got {type(array).__name__}")
    if array.ndim < 1:
        raise ValueError("map_blocks: array must have a first axis of samples")
    p = _as_predictor(model, options)
    loaded = p.loaded()  # the output's shape and dtype (the model is loaded once in this process too)
    name = loaded.output_names[0]
    if name not in loaded.output_shapes:
        loaded.output_shapes[name] = list(p(np.zeros([1, *array.shape[1:]], array.dtype)).shape[1:])
    tail = loaded.output_shapes[name]
    array = array.rechunk({k: -1 for k in range(1, array.ndim)})
    return array.map_blocks(
        p, dtype=np.float32, chunks=(array.chunks[0], *((d,) for d in tail)),
        drop_axis=list(range(1, array.ndim)), new_axis=list(range(1, len(tail) + 1)),
    )  # fmt: skip


def map_partitions(collection: Any, model: Any, meta: Any = None, **options: Any) -> Any:
    """The predictor over each partition of a ``dask.bag`` (a list of records in, records out) or a
    ``dask.dataframe`` (a DataFrame in, a DataFrame out; ``meta`` as Dask's, default: computed on a one-row
    partition in this process). ``model``: a path / URL, or a :func:`predictor`. A DataFrame column of per-row
    arrays needs ``dask.config.set({'dataframe.convert-string': False})`` when it is made, or Dask stores the
    arrays as text."""
    p = _as_predictor(model, options)
    module = type(collection).__module__
    if module.startswith("dask.bag"):
        return collection.map_partitions(lambda records: p(list(records)))
    if module.startswith("dask.dataframe") or module.startswith("dask_expr"):
        if meta is None:
            meta = p(collection.head(1, npartitions=-1)).iloc[:0]
        return collection.map_partitions(p, meta=meta)
    raise TypeError(
        "map_partitions: collection must be a dask.bag.Bag or a dask.dataframe.DataFrame, got "
        f"{type(collection).__name__}"
    )


def predict_files_dask(
    paths: list[str],
    model: str,
    output: str,
    *,
    workers: int = 1,
    batch_size: int = 64,
    address: str | None = None,
    **options: Any,
) -> int:
    """``ndflow predict-dataset --engine dask``: the files in parts of ``batch_size * 4`` paths, each part read,
    run and written as one Parquet file of the folder ``output`` by a worker; returns the number of rows.
    ``address``: a Dask scheduler (``tcp://host:8786``); default: a local cluster of ``workers`` processes of
    one thread each."""
    dask = require("dask", "ndflow predict-dataset --engine dask")
    distributed = require("distributed", "ndflow predict-dataset --engine dask")
    from .dataset_files import chunks, predict_part

    p = predictor(model, **options)
    parts = chunks(paths, batch_size * 4)
    cluster = None
    if address is None:
        cluster = distributed.LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
            memory_limit=0,
        )  # fmt: skip
    client = distributed.Client(address or cluster)
    try:
        tasks = [dask.delayed(predict_part)(p, part, output, i, batch_size) for i, part in enumerate(parts)]
        return int(sum(dask.compute(*tasks)))
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


__all__ = ["map_blocks", "map_partitions", "predict_files_dask"]
