"""A batch predictor for engines that run a function over batches of rows: Ray Data's ``map_batches``, Dask's
``map_blocks`` / ``map_partitions``, or a plain loop.

``Predictor(model, ...)`` loads a graph or layers model (a folder, a ``model.json``, ``file://``, ``npm://`` or
``http(s)://``) once per process, runs it once on zeros (warm-up: the first call's plans and compiled kernels are
made then), and is then called on batches: a dict of numpy columns, a pandas ``DataFrame``, a pyarrow ``Table``, a
numpy array or a list of records (``batch_formats``), each giving back the same kind with the model's outputs as
new columns. Each batch runs in one ``nf.tidy``, so a worker holds the same number of tensors after every batch.
A column of file paths or bytes is read as images or ``.npy`` samples (``dataset_files``).

As a Ray Data callable class: ``ds.map_batches(Predictor, fn_constructor_kwargs={'model': url}, concurrency=2)``
(one model per actor). ``predictor(url, ...)`` is the same object made lazily: it pickles as its settings only,
and the process that calls it first loads the model into a per-process cache, so a Dask worker loads it once
however many tasks it runs.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from ..core.engine import ENGINE
from ..core.globals import tidy
from .batch_formats import batch_kind, from_columns, num_rows, to_columns
from .dataset_files import INT_DTYPES, _check_scale, _scaled, load_inputs

_CACHE: dict[str, LoadedModel] = {}
_CACHE_LOCK = threading.Lock()


class LoadedModel:
    """A graph or layers model with its inputs' names, shapes and dtypes, run on numpy arrays in one tidy."""

    def __init__(self, kind: str, model: Any) -> None:
        self.kind = kind
        self.model = model
        if kind == "graph":
            self.inputs = [(i.name, list(i.shape or []), i.dtype or "float32") for i in model.inputs]
            self.output_names = [o.name for o in model.outputs]
            self.needs_async = bool(model.needs_async())
        else:
            names = list(getattr(model, "input_names", None) or [])
            self.inputs = [
                (names[k] if k < len(names) else f"input_{k}", list(t.shape), t.dtype or "float32")
                for k, t in enumerate(model.inputs)
            ]
            self.output_names = list(getattr(model, "output_names", None) or []) or [
                f"output_{k}" for k in range(len(model.outputs))
            ]
            self.needs_async = False
        self.output_shapes: dict[str, list[int]] = {}

    def run(self, feeds: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        """The outputs (numpy) for one batch of inputs; every tensor made on the way is freed. A model whose batch
        dimension is fixed (BlazeFace's 1) runs on the batch in slices of that size."""
        fixed = self.inputs[0][1][0] if self.inputs and self.inputs[0][1] else None
        n = len(feeds[0]) if feeds else 0
        if fixed is not None and fixed > 0 and n != fixed:
            if n % fixed:
                raise ValueError(f"the model takes batches of {fixed}; a batch of {n} does not split into them")
            parts = [self._run([f[i : i + fixed] for f in feeds]) for i in range(0, n, fixed)]
            return {k: np.concatenate([p[k] for p in parts]) for k in parts[0]}
        return self._run(feeds)

    def _run(self, feeds: Sequence[np.ndarray]) -> dict[str, np.ndarray]:
        from .. import ops

        def step() -> dict[str, np.ndarray]:
            tensors = [
                ops.tensor(a, list(a.shape), "int32" if dtype in INT_DTYPES else dtype)
                for a, (_, _, dtype) in zip(feeds, self.inputs, strict=True)
            ]
            if self.kind == "layers":
                out = self.model.predict(tensors[0] if len(tensors) == 1 else tensors, batch_size=max(1, len(feeds[0])))
                outs = out if isinstance(out, list | tuple) else [out]
            else:
                named = {name: t for (name, _, _), t in zip(self.inputs, tensors, strict=True)}
                if self.needs_async:
                    out = asyncio.run(self.model.execute_async(named, self.output_names))
                else:
                    out = self.model.execute(named, self.output_names)
                outs = out if isinstance(out, list) else [out]
            return {n: np.asarray(t.numpy()) for n, t in zip(self.output_names, outs, strict=True)}

        return tidy(step)

    def warm_up(self) -> bool:
        """Run once on zeros when every input's shape is known but the batch; whether it ran."""
        feeds = []
        for _, shape, dtype in self.inputs:
            dims = [1, *shape[1:]] if shape else []
            if not shape or any(d is None or d < 0 for d in dims):
                return False
            feeds.append(np.zeros(dims, np.int32 if dtype in INT_DTYPES else np.float32))
        outs = self.run(feeds)
        self.output_shapes = {k: list(v.shape[1:]) for k, v in outs.items()}
        return True


def load_model(model: str | os.PathLike[str], load_options: Mapping[str, Any] | None = None) -> LoadedModel:
    """A graph or layers model from a folder, a ``model.json`` path or a URL (``file://``, ``npm://``,
    ``http(s)://``), whichever its topology is."""
    from ..layers.model_loading import load_any_model

    try:
        return LoadedModel(*load_any_model(model, load_options))
    except FileNotFoundError as exc:
        raise FileNotFoundError(f"model: {exc}") from None
    except ValueError as exc:
        if "is not a model.json" in str(exc):
            raise ValueError(f"model: {exc}") from None
        raise


def _is_paths(values: Any) -> bool:
    return isinstance(values, list) and bool(values) and isinstance(values[0], str)


def _rss_mb() -> float:
    """This process's resident memory in MiB (the peak where /proc is absent)."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20
    except (OSError, ValueError, IndexError):
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


class Predictor:
    """Run a model over batches (see the module docstring).

    Args:
        model: the model's folder, ``model.json`` path or URL (``file://``, ``npm://``, ``http(s)://``).
        input_columns: the column feeding each model input (a name, or a list in the model's input order).
            Default: the columns named as the inputs, else (one input) ``image``, ``path`` or the only column.
        output_columns: names for the model's outputs (default: the model's output names).
        keep_columns: input columns copied to the result (default: every column that feeds no input, and a
            column of file paths).
        scale: how pixel values 0..255 of images and uint8 arrays map onto a float input: ``'0-1'`` (default),
            ``'-1-1'`` or ``'0-255'``.
        channels: 1, 3 or 4 channels for images (default: the model input's).
        backend: the ndflow backend to run on in the worker (default: the best available).
        warmup: run the model once on zeros when it is loaded.
        load_options: options for the model's loader (``nf.load_graph_model``'s).
        stats_column: when set, add the columns ``<stats_column>_pid``, ``_rss_mb`` and ``_tensors`` (the
            worker's process id, resident memory and live tensors after the batch) to every row.
        eager: load the model now (a Ray actor) rather than on the first call.
    """

    def __init__(
        self,
        model: str | os.PathLike[str],
        *,
        input_columns: str | Sequence[str] | None = None,
        output_columns: Sequence[str] | None = None,
        keep_columns: Sequence[str] | None = None,
        scale: str | None = None,
        channels: int | None = None,
        backend: str | None = None,
        warmup: bool = True,
        load_options: Mapping[str, Any] | None = None,
        stats_column: str | None = None,
        eager: bool = True,
    ) -> None:
        if not isinstance(model, str | os.PathLike) or not os.fspath(model):
            raise TypeError(f"model must be a path or URL of a model.json, got {type(model).__name__}")
        _check_scale(scale)
        if channels is not None and channels not in (1, 3, 4):
            raise ValueError(f"channels must be 1, 3 or 4, got {channels!r}")
        if isinstance(input_columns, str):
            input_columns = [input_columns]
        self.config: dict[str, Any] = {
            "model": os.fspath(model),
            "input_columns": None if input_columns is None else list(input_columns),
            "output_columns": None if output_columns is None else list(output_columns),
            "keep_columns": None if keep_columns is None else list(keep_columns),
            "scale": scale,
            "channels": channels,
            "backend": backend,
            "warmup": bool(warmup),
            "load_options": dict(load_options or {}),
            "stats_column": stats_column,
        }
        self._loaded: LoadedModel | None = None
        if eager:
            self.loaded()

    # -- pickling: the settings only; the model is loaded again (once) in the process that unpickles --------------
    def __getstate__(self) -> dict[str, Any]:
        return {"config": self.config}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.config = state["config"]
        self._loaded = None

    def __repr__(self) -> str:
        return f"Predictor({self.config['model']!r})"

    def loaded(self) -> LoadedModel:
        """The model, loaded (and warmed up) once per process and settings."""
        if self._loaded is None:
            cfg = self.config
            key = json.dumps([cfg["model"], cfg["backend"], cfg["load_options"], cfg["warmup"]], sort_keys=True)
            with _CACHE_LOCK:
                if key not in _CACHE:
                    if cfg["backend"] is not None:
                        ENGINE.set_backend(cfg["backend"])
                    loaded = load_model(cfg["model"], cfg["load_options"])
                    if cfg["warmup"]:
                        loaded.warm_up()
                    _CACHE[key] = loaded
                self._loaded = _CACHE[key]
        return self._loaded

    def output_names(self) -> list[str]:
        """The names of the output columns."""
        names = self.config["output_columns"] or self.loaded().output_names
        if len(names) != len(self.loaded().output_names):
            raise ValueError(
                f"output_columns has {len(names)} name(s) and the model {len(self.loaded().output_names)} output(s)"
            )
        return list(names)

    def _input_names(self, columns: Mapping[str, Any]) -> list[str]:
        model = self.loaded()
        wanted = self.config["input_columns"]
        if wanted is None:
            names = [name for name, _, _ in model.inputs]
            if all(n in columns for n in names):
                wanted = names
            elif len(names) == 1:
                found = [c for c in ("", "image", "path") if c in columns] or (
                    list(columns)[:1] if len(columns) == 1 else []
                )
                wanted = found[:1]
        if not wanted or len(wanted) != len(model.inputs):
            raise ValueError(
                f"input_columns: the model has {len(model.inputs)} input(s) "
                f"({', '.join(n for n, _, _ in model.inputs)}); say which of the columns {list(columns)} feed them"
            )
        missing = [c for c in wanted if c not in columns]
        if missing:
            raise ValueError(f"input_columns: the batch has no column {missing[0]!r} (its columns: {list(columns)})")
        return list(wanted)

    def _feed(self, values: Any, shape: list[Any], dtype: str, name: str) -> np.ndarray:
        if isinstance(values, list):  # paths or bytes
            return load_inputs(values, shape, dtype, self.config["channels"], self.config["scale"])
        arr = np.asarray(values)
        if arr.dtype.kind not in "biuf":
            raise TypeError(f"column {name!r}: expected numbers, file paths or bytes, got an array of {arr.dtype}")
        if dtype in INT_DTYPES:
            return arr.astype(np.int32, copy=False)
        if arr.dtype == np.uint8:  # pixels: mapped as images are
            return _scaled(arr, self.config["scale"])
        return arr.astype(np.float32, copy=False)

    def predict_columns(self, columns: Mapping[str, Any]) -> dict[str, Any]:
        """Named columns in, named columns out (the kept columns, then the outputs)."""
        model = self.loaded()
        inputs = self._input_names(columns)
        keep = self.config["keep_columns"]
        if keep is None:  # the other columns, and a column of file paths (it names each row)
            keep = [c for c in columns if c != "" and (c not in inputs or _is_paths(columns[c]))]
        for c in keep:
            if c not in columns:
                raise ValueError(f"keep_columns: the batch has no column {c!r} (its columns: {list(columns)})")
        names = self.output_names()
        n = num_rows(dict(columns))
        if n == 0:
            outs = {k: np.zeros([0, *model.output_shapes.get(k, [])], np.float32) for k in model.output_names}
        else:
            feeds = [
                self._feed(columns[c], shape, dtype, c)
                for c, (_, shape, dtype) in zip(inputs, model.inputs, strict=True)
            ]
            outs = model.run(feeds)
        result: dict[str, Any] = {c: columns[c] for c in keep}
        result.update((name, outs[k]) for name, k in zip(names, model.output_names, strict=True))
        stats = self.config["stats_column"]
        if stats:
            result[f"{stats}_pid"] = np.full(n, os.getpid(), np.int64)
            result[f"{stats}_rss_mb"] = np.full(n, _rss_mb(), np.float64)
            result[f"{stats}_tensors"] = np.full(n, ENGINE.memory().num_tensors, np.int64)
        return result

    def __call__(self, batch: Any) -> Any:
        """The model's outputs for ``batch``, in the batch's own kind (see ``batch_formats``)."""
        kind = batch_kind(batch)
        return from_columns(kind, self.predict_columns(to_columns(batch, kind)))


def predictor(model: str | os.PathLike[str], **options: Any) -> Predictor:
    """A :class:`Predictor` that loads its model on first use in each process (Dask functions, plain loops):
    ``predictor(url)(batch)``; for Ray Data's callable class form pass :class:`Predictor` itself."""
    return Predictor(model, eager=False, **options)


def clear_cache() -> None:
    """Dispose the models this process has loaded for predictors."""
    with _CACHE_LOCK:
        for loaded in _CACHE.values():
            loaded.model.dispose()
        _CACHE.clear()


__all__ = ["LoadedModel", "Predictor", "clear_cache", "load_model", "predictor"]
