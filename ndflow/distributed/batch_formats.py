"""The batch formats a batch predictor takes and gives back: a dict of numpy columns (Ray Data's ``"numpy"``
batches), a pandas ``DataFrame``, a pyarrow ``Table``, a plain numpy array (a ``dask.array`` block) or a list of
records (a ``dask.bag`` partition). A batch becomes named columns (``to_columns``) and the outputs go back into
the same kind (``from_columns``); pandas and pyarrow are imported only when such a batch arrives."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

#: The kinds of batch: ``numpy`` (a dict of columns), ``pandas``, ``arrow``, ``array``, ``records``.
KINDS = ("numpy", "pandas", "arrow", "array", "records")


def batch_kind(batch: Any) -> str:
    """Which of ``KINDS`` ``batch`` is; a ``TypeError`` naming the argument for anything else."""
    if isinstance(batch, np.ndarray):
        return "array"
    if isinstance(batch, Mapping):
        return "numpy"
    if isinstance(batch, list):
        return "records"
    module = type(batch).__module__.split(".")[0]
    if module == "pandas" and hasattr(batch, "columns"):
        return "pandas"
    if module == "pyarrow" and hasattr(batch, "column_names"):
        return "arrow"
    raise TypeError(
        "batch must be a dict of numpy columns, a pandas DataFrame, a pyarrow Table, a numpy array or a list of "
        f"records (dicts), got {type(batch).__name__}"
    )


def _stack(values: Any, name: str) -> Any:
    """A column as one array: numbers stay as they are, a column of per-row arrays is stacked; strings and bytes
    (file paths, encoded images) stay a list."""
    if isinstance(values, np.ndarray):
        arr = values
    else:
        try:
            arr = np.asarray(values)
        except ValueError:  # rows of different shapes
            arr = np.empty(len(values), dtype=object)
            arr[:] = list(values)
    if arr.dtype.kind in "US":
        return arr.tolist()
    if arr.dtype != object:
        return arr
    items = list(arr)
    if not items or isinstance(items[0], str | bytes | bytearray):
        return items
    try:
        return np.stack([np.asarray(v) for v in items])
    except ValueError as exc:
        raise ValueError(f"column {name!r}: the rows are arrays of different shapes ({exc})") from None


def _arrow_column(column: Any, name: str) -> Any:
    """A pyarrow column as a numpy array (nested lists of equal lengths become its trailing dimensions)."""
    import pyarrow as pa

    array = column.combine_chunks() if hasattr(column, "combine_chunks") else column
    kind = array.type
    if (
        pa.types.is_string(kind)
        or pa.types.is_large_string(kind)
        or pa.types.is_binary(kind)
        or (pa.types.is_large_binary(kind))
    ):
        return array.to_pylist()
    dims: list[int] = []
    n = len(array)
    while pa.types.is_list(array.type) or pa.types.is_large_list(array.type) or pa.types.is_fixed_size_list(array.type):
        if pa.types.is_fixed_size_list(array.type):
            dims.append(array.type.list_size)
        else:
            lengths = np.diff(np.asarray(array.offsets))
            if len(lengths) and (lengths != lengths[0]).any():
                raise ValueError(f"column {name!r}: its rows are lists of different lengths")
            dims.append(int(lengths[0]) if len(lengths) else 0)
        array = array.flatten()
    if isinstance(kind, pa.ExtensionType) and not dims:  # e.g. Ray Data's tensor columns
        return _stack(array.to_numpy(zero_copy_only=False), name)
    values = array.to_numpy(zero_copy_only=False)
    return _stack(values, name) if not dims else values.reshape([n, *dims])


def to_columns(batch: Any, kind: str) -> dict[str, Any]:
    """``batch`` (of ``kind``) as named columns: arrays, or lists of strings / bytes. An array batch is the single
    column ``""``."""
    if kind == "array":
        return {"": batch}
    if kind == "numpy":
        return {str(k): _stack(v, str(k)) for k, v in batch.items()}
    if kind == "pandas":
        return {str(k): _stack(batch[k].to_numpy(), str(k)) for k in batch.columns}
    if kind == "arrow":
        return {k: _arrow_column(batch.column(k), k) for k in batch.column_names}
    names = list(batch[0]) if batch else []
    for i, record in enumerate(batch):
        if not isinstance(record, Mapping):
            raise TypeError(f"batch: record {i} must be a dict, got {type(record).__name__}")
    return {k: _stack([r[k] for r in batch], k) for k in names}


def _arrow_array(values: Any) -> Any:
    import pyarrow as pa

    if isinstance(values, list):
        return pa.array(values)
    arr = np.ascontiguousarray(values)
    out = pa.array(arr.reshape(-1))
    for d in reversed(arr.shape[1:]):
        out = pa.FixedSizeListArray.from_arrays(out, d)
    return out


def from_columns(kind: str, columns: dict[str, Any]) -> Any:
    """Named output columns (arrays of ``[rows, ...]``, or lists) as a batch of ``kind``: a multi-dimensional
    column is a column of per-row arrays for pandas and records, and nested fixed-size lists for pyarrow (Parquet
    keeps them as lists). An array batch gives back the first output's array, or a dict when there are several."""
    if kind == "array":
        return next(iter(columns.values())) if len(columns) == 1 else dict(columns)
    if kind == "numpy":
        return dict(columns)
    if kind == "arrow":
        import pyarrow as pa

        return pa.table({k: _arrow_array(v) for k, v in columns.items()})
    per_row = {k: (list(v) if isinstance(v, np.ndarray) and v.ndim > 1 else v) for k, v in columns.items()}
    if kind == "pandas":
        import pandas as pd

        return pd.DataFrame(per_row)
    n = len(next(iter(per_row.values()))) if per_row else 0
    return [{k: v[i] for k, v in per_row.items()} for i in range(n)]


def num_rows(columns: dict[str, Any]) -> int:
    """The number of rows of named columns (0 when there are none)."""
    return len(next(iter(columns.values()))) if columns else 0


__all__ = ["KINDS", "batch_kind", "from_columns", "num_rows", "to_columns"]
