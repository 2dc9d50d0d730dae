"""Files in, Parquet out: the inputs of ``ndflow predict-dataset`` (images or ``.npy`` arrays named by a glob)
read into a model's input, and the results written as Parquet with pyarrow.

An image (PNG, JPEG, BMP, GIF, anything Pillow reads) is converted to the model input's channels (1: grayscale,
3: RGB, 4: RGBA), stretched to its height and width (bilinear) when the model fixes them, and its values 0..255
mapped as ``scale`` says for a float input (``'0-1'`` by default, ``'-1-1'``, ``'0-255'``); integer inputs take
0..255 as they are, as ``ndflow predict`` does. An ``.npy`` file is one sample (the input's shape without the
batch dimension). Each Parquet part is written to a hidden temporary file and renamed into place, so a task that
is killed and retried leaves no half-written part.
"""

from __future__ import annotations

import glob
import io
import os
import secrets
from collections.abc import Sequence
from typing import Any

import numpy as np

from ._extras import require
from .batch_formats import from_columns

#: ``scale`` values: the range that pixel values 0..255 are mapped onto (float inputs).
SCALES = ("0-1", "-1-1", "0-255")
INT_DTYPES = ("int32", "uint8", "int64")
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}


def expand_inputs(pattern: str) -> list[str]:
    """The files ``pattern`` names (a glob, ``**`` for sub-folders, or a folder: every file in it), sorted; a
    ``ValueError`` naming the pattern when there are none."""
    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"input_glob must be a non-empty string, got {pattern!r}")
    if os.path.isdir(pattern):
        pattern = os.path.join(pattern, "*")
    files = sorted(p for p in glob.glob(pattern, recursive=True) if os.path.isfile(p))
    if not files:
        raise ValueError(f"input_glob {pattern!r} matches no file")
    return files


def _check_scale(scale: str | None) -> None:
    if scale is not None and scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)} or None, got {scale!r}")


def _read(value: Any) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    with open(value, "rb") as f:
        return f.read()


def _image(data: bytes, where: str, shape: Sequence[int | None], channels: int | None) -> np.ndarray:
    Image = require("PIL.Image", "reading images")
    dims = list(shape)
    want = channels or (dims[-1] if len(dims) == 3 and dims[-1] in _MODES else 3)
    if want not in _MODES:
        raise ValueError(f"channels must be 1, 3 or 4, got {want!r}")
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except Exception as exc:  # noqa: BLE001 - Pillow raises many kinds for bytes that are not an image
        raise ValueError(f"{where}: not an image Pillow can read ({exc})") from None
    img = img.convert(_MODES[want])
    height, width = (dims[0], dims[1]) if len(dims) == 3 else (None, None)
    if height and width and height > 0 and width > 0 and img.size != (width, height):
        img = img.resize((width, height), Image.BILINEAR)
    arr = np.asarray(img, dtype=np.uint8)
    return arr[..., None] if arr.ndim == 2 else arr


def load_inputs(
    values: Sequence[Any],
    shape: Sequence[int | None] | None,
    dtype: str | None = "float32",
    channels: int | None = None,
    scale: str | None = None,
) -> np.ndarray:
    """Samples from files or bytes as one batch ``[n, ...shape]`` for an input of ``shape`` (its batch dimension
    first, unknown dimensions None or -1) and ``dtype``: ``.npy`` arrays as they are, images decoded (see the
    module docstring). All samples must come out with one shape."""
    _check_scale(scale)
    sample = [None if d is None or d < 0 else int(d) for d in list(shape or [])[1:]]
    rows: list[np.ndarray] = []
    for value in values:
        where = value if isinstance(value, str) else "bytes input"
        data = _read(value)
        if data[:6] == b"\x93NUMPY":
            arr = np.load(io.BytesIO(data), allow_pickle=False)
        else:
            arr = _image(data, where, sample or [None, None, None], channels)
        if sample and (
            arr.ndim != len(sample) or any(d is not None and d != a for d, a in zip(sample, arr.shape, strict=False))
        ):
            raise ValueError(f"{where}: a sample of shape {list(arr.shape)} does not fit the input's {list(shape)}")
        rows.append(arr)
    if not rows:
        return np.zeros([0, *(d or 0 for d in sample)], np.float32)
    if any(r.shape != rows[0].shape for r in rows):
        raise ValueError("the inputs of one batch differ in shape; give the model a fixed height and width")
    if dtype in INT_DTYPES:
        return np.stack(rows).astype(np.int32)
    return np.stack([_scaled(r, scale) for r in rows])


def _scaled(row: np.ndarray, scale: str | None) -> np.ndarray:
    """A float32 sample: pixels (uint8) mapped as ``scale`` says, anything else as it is."""
    out = row.astype(np.float32)
    if row.dtype == np.uint8:
        if scale in (None, "0-1"):
            out /= 255.0
        elif scale == "-1-1":
            out = out / 127.5 - 1.0
    return out


def write_parquet(table: Any, path: str) -> str:
    """Write a pyarrow ``Table`` to ``path`` through a temporary file renamed into place; returns ``path``."""
    pq = require("pyarrow.parquet", "writing Parquet")
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        pq.write_table(table, tmp)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    return path


def part_path(output: str, index: int) -> str:
    """The Parquet part ``index`` of the output folder ``output``."""
    return os.path.join(output, f"part-{index:05d}.parquet")


def predict_part(predictor: Any, paths: Sequence[str], output: str, index: int, batch_size: int = 64) -> int:
    """Run ``predictor`` over ``paths`` in batches and write the rows (``path`` and the outputs) as the Parquet
    part ``index`` of ``output``; returns the number of rows."""
    pa = require("pyarrow", "writing Parquet")
    tables = []
    for start in range(0, len(paths), batch_size):
        columns = {"path": np.asarray(paths[start : start + batch_size], dtype=object)}
        tables.append(from_columns("arrow", predictor(columns)))
    table = pa.concat_tables(tables) if tables else pa.table({"path": pa.array([], pa.string())})
    write_parquet(table, part_path(output, index))
    return table.num_rows


def chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    """``items`` in consecutive chunks of ``size`` (the last may be shorter)."""
    if isinstance(size, bool) or not isinstance(size, int) or size <= 0:
        raise ValueError(f"chunk size must be a positive integer, got {size!r}")
    return [items[i : i + size] for i in range(0, len(items), size)]


__all__ = ["SCALES", "chunks", "expand_inputs", "load_inputs", "part_path", "predict_part", "write_parquet"]
