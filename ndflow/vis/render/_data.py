"""Checks and conversions of the data tfjs-vis's charts take (``{values: [{x, y}], series}``, ``[{index, value}]``,
number arrays, matrices), with one clear error for a wrong shape."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ...core.tensor import Tensor


def _number(what: str, where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | np.number):
        raise TypeError(f"nf.vis.{what}: {where} must be a number, got {type(value).__name__} {value!r}")
    return float(value)


def xy_series(what: str, data: Any) -> tuple[list[np.ndarray], list[np.ndarray], list[str]]:
    """``(xs, ys, names)`` per series from ``{'values': [{x, y}, ...] or [[{x, y}, ...], ...], 'series': [...]}``.

    A point may also be an ``(x, y)`` pair."""
    if not isinstance(data, Mapping) or "values" not in data:
        raise TypeError(
            f"nf.vis.{what}: data must be a dict {{'values': [{{'x': .., 'y': ..}}, ...], 'series': [...]}}, "
            f"got {type(data).__name__}"
        )
    values = data["values"]
    if not isinstance(values, Sequence) or isinstance(values, str) or len(values) == 0:
        raise ValueError(f"nf.vis.{what}: data['values'] must be a non-empty list of points or of lists of points")
    nested = isinstance(values[0], Sequence) and not (
        len(values[0]) == 2 and not isinstance(values[0][0], Mapping | Sequence)
    )
    groups = list(values) if nested else [values]
    xs, ys = [], []
    for s, points in enumerate(groups):
        if not isinstance(points, Sequence) or isinstance(points, str):
            raise TypeError(f"nf.vis.{what}: data['values'][{s}] must be a list of points, got {type(points).__name__}")
        x, y = [], []
        for i, point in enumerate(points):
            where = "data['values']" + (f"[{s}]" if nested else "") + f"[{i}]"
            if isinstance(point, Mapping):
                if "x" not in point or "y" not in point:
                    raise ValueError(f"nf.vis.{what}: {where} must have 'x' and 'y', got keys {sorted(point)}")
                px, py = point["x"], point["y"]
            elif isinstance(point, Sequence) and len(point) == 2:
                px, py = point
            else:
                raise TypeError(f"nf.vis.{what}: {where} must be {{'x': .., 'y': ..}} or an (x, y) pair, got {point!r}")
            x.append(_number(what, where + "['x']", px))
            y.append(float("nan") if py is None else _number(what, where + "['y']", py))
        xs.append(np.asarray(x))
        ys.append(np.asarray(y))
    series = data.get("series")
    if series is None:
        names = [f"Series {i + 1}" for i in range(len(groups))]
    else:
        names = [str(name) for name in series]
        if len(names) != len(groups):
            raise ValueError(
                f"nf.vis.{what}: data['series'] has {len(names)} name(s) for {len(groups)} data series; give one each"
            )
    return xs, ys, names


def numbers(what: str, arg: str, data: Any, key: str | None = None) -> np.ndarray:
    """A flat float array from a tensor, a numpy array, a list of numbers or (``key`` given) of ``{key: number}``."""
    if isinstance(data, Tensor):
        if data.is_disposed:
            raise ValueError(f"nf.vis.{what}: {arg} is a disposed tensor")
        return np.asarray(data.data_sync(), dtype=np.float64).ravel()
    if isinstance(data, np.ndarray):
        if data.dtype.kind not in "biuf":
            raise TypeError(f"nf.vis.{what}: {arg} must hold numbers, got dtype {data.dtype}")
        return data.astype(np.float64).ravel()
    if not isinstance(data, Sequence) or isinstance(data, str):
        raise TypeError(
            f"nf.vis.{what}: {arg} must be a list of numbers, an array or a tensor, got {type(data).__name__}"
        )
    out = np.empty(len(data))
    for i, item in enumerate(data):
        if key is not None and isinstance(item, Mapping):
            if key not in item:
                raise ValueError(f"nf.vis.{what}: {arg}[{i}] has no {key!r} field (keys {sorted(item)})")
            item = item[key]
        out[i] = float("nan") if item is None else _number(what, f"{arg}[{i}]", item)
    return out


def matrix(what: str, arg: str, data: Any) -> np.ndarray:
    """A 2D float array from a tensor, a numpy array or a list of equal-length lists of numbers."""
    if isinstance(data, Tensor):
        if data.is_disposed:
            raise ValueError(f"nf.vis.{what}: {arg} is a disposed tensor")
        array = np.asarray(data.data_sync(), dtype=np.float64).reshape(data.shape)
    else:
        if isinstance(data, Sequence) and any(
            not isinstance(row, Sequence | np.ndarray) or len(row) != len(data[0]) for row in data
        ):
            raise ValueError(f"nf.vis.{what}: {arg} must be a list of rows of equal length (a matrix)")
        try:
            array = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError):
            raise TypeError(f"nf.vis.{what}: {arg} must be a matrix of numbers") from None
    if array.ndim != 2 or array.size == 0:
        raise ValueError(f"nf.vis.{what}: {arg} must be a non-empty 2D matrix, got shape {list(array.shape)}")
    return array


def labels(what: str, arg: str, values: Any, count: int, along: str) -> list[str] | None:
    """Tick labels, checked to be ``count`` long."""
    if values is None:
        return None
    names = [str(v) for v in values]
    if len(names) != count:
        raise ValueError(f"nf.vis.{what}: {arg} has {len(names)} label(s), the matrix {count} {along}")
    return names
