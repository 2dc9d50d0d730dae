"""One loaded model version (a :class:`Servable`): loading a graph or layers model from a folder, a ``model.json``
or a URL, its signature as clients see it, warming it up, and running it on numpy inputs in a worker thread.

Every run opens its own scope and ends it before returning, so the tensors of a request (inputs,
intermediates, outputs) are all disposed, whether the model succeeds or raises: ``memory()`` is back where it
was after each request."""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ..core.engine import ENGINE
from .codec import Signature, TensorSpec
from .errors import ServingError

LOG = logging.getLogger("ndflow.serving")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://")


def _shape(dims: Any) -> tuple[int, ...] | None:
    if dims is None:
        return None
    return tuple(-1 if d is None or int(d) < 0 else int(d) for d in dims)


def _signature(kind: str, model: Any) -> Signature:
    if kind == "graph":
        inputs = [TensorSpec(key, f"{info.name}:0", _shape(info.shape), info.dtype or "float32")
                  for key, info in zip(model.input_nodes, model.inputs, strict=True)]  # fmt: skip
        outputs = [TensorSpec(key, info.name if ":" in info.name else f"{info.name}:0", _shape(info.shape),
                              info.dtype or "float32")
                   for key, info in zip(model.output_nodes, model.outputs, strict=True)]  # fmt: skip
        return Signature(tuple(inputs), tuple(outputs))
    in_names = list(getattr(model, "input_names", None) or [t.name for t in model.inputs])
    out_names = list(getattr(model, "output_names", None) or [t.name.split("/")[0] for t in model.outputs])
    inputs = [TensorSpec(n, t.name, _shape(t.shape), t.dtype or "float32")
              for n, t in zip(in_names, model.inputs, strict=True)]  # fmt: skip
    outputs = [TensorSpec(n, t.name, _shape(t.shape), t.dtype or "float32")
               for n, t in zip(out_names, model.outputs, strict=True)]  # fmt: skip
    return Signature(tuple(inputs), tuple(outputs))


class Servable:
    """A loaded version of a model. ``run`` is safe from several threads at once (docs/threads.md).

    ``batchable``: requests may be merged along the first axis (every input's batch dimension is unknown and,
    as the warm-up checked, every output's first dimension follows it). ``leases`` counts the requests using it;
    a retired servable is disposed when the last one ends (so a hot reload drops no request)."""

    def __init__(self, name: str, version: int, path: str, kind: str, model: Any) -> None:
        self.name, self.version, self.path, self.kind, self.model = name, version, path, kind, model
        self.signature = _signature(kind, model)
        self.needs_async = kind == "graph" and bool(model.needs_async())
        self.batchable = False
        self.warmed = False
        self.retired = False
        self.disposed = False
        self.leases = 0
        self.lock = threading.Lock()
        self.loaded_at = time.time()
        self.batcher: Any = None  # set by the app on the first batched request

    def __repr__(self) -> str:
        return f"Servable({self.name!r}, version={self.version}, {self.kind}, batchable={self.batchable})"

    # -- running --------------------------------------------------------------------------------------------
    def run(self, feeds: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """The outputs (by key, in the signature's order) for ``feeds`` (by input key); ServingError on failure."""
        from ..ops import tensor

        ENGINE.start_scope("ndflow.serving")
        try:
            made = {s.key: tensor(feeds[s.key], list(feeds[s.key].shape), s.dtype) for s in self.signature.inputs}
            outs = self._call(made)
            if len(outs) != len(self.signature.outputs):
                raise ServingError(f"the model gave {len(outs)} outputs, its signature has "
                                   f"{len(self.signature.outputs)}", "INTERNAL")  # fmt: skip
            return {s.key: np.array(t.numpy()) for s, t in zip(self.signature.outputs, outs, strict=True)}
        except ServingError:
            raise
        except (ValueError, TypeError, IndexError) as exc:
            shapes = ", ".join(f"'{k}' {list(v.shape)} {v.dtype}" for k, v in feeds.items())
            raise ServingError(f"the model failed on the inputs {shapes}: {exc}", "INVALID_ARGUMENT") from None
        except Exception as exc:  # noqa: BLE001  (a fault in the model is the request's 500, not the server's)
            LOG.exception("model %s version %s failed", self.name, self.version)
            raise ServingError(f"the model failed: {type(exc).__name__}: {exc}", "INTERNAL") from None
        finally:
            ENGINE.end_scope(None)

    def _call(self, made: dict[str, Any]) -> list[Any]:
        keys = [s.key for s in self.signature.outputs]
        if self.kind == "graph":
            if self.needs_async:
                out = asyncio.run(self.model.execute_async(made, keys))
            else:
                out = self.model.execute(made, keys)
            return list(out) if isinstance(out, list | tuple) else [out]
        xs = [made[s.key] for s in self.signature.inputs]
        rows = xs[0].shape[0] if xs and xs[0].shape else 1
        out = self.model.predict(xs[0] if len(xs) == 1 else xs, batch_size=max(1, int(rows)))
        return list(out) if isinstance(out, list | tuple) else [out]

    # -- warm-up --------------------------------------------------------------------------------------------
    def warm_up(self) -> None:
        """Run the model once (twice, with batches of 1 and 2, when its batch dimension is open) on zeros, which
        loads its kernels and decides ``batchable``. Inputs with other unknown dimensions are not warmed up
        (no size is known to be valid); they can still batch when every output's first dimension is open."""
        specs = self.signature.inputs
        open_batch = bool(specs) and all(s.shape is not None and len(s.shape) >= 1 and s.shape[0] < 0 for s in specs)
        concrete = bool(specs) and all(s.shape is not None and all(d >= 0 for d in s.shape[1:]) for s in specs)
        if not concrete:
            outs = self.signature.outputs
            self.batchable = open_batch and all(o.shape is not None and len(o.shape) >= 1 and o.shape[0] < 0
                                                for o in outs)  # fmt: skip
            self.warmed = True
            return
        follows = True
        for batch in (1, 2) if open_batch else (None,):
            feeds = {s.key: _zeros(s, batch) for s in specs}
            result = self.run(feeds)
            follows = follows and all(a.ndim >= 1 and a.shape[0] == batch for a in result.values())
        self.batchable = open_batch and follows
        self.warmed = True

    def dispose(self) -> None:
        with self.lock:
            if self.disposed:
                return
            self.disposed = True
        self.model.dispose()
        LOG.info("unloaded model %s version %s", self.name, self.version,
                 extra={"event": "unload", "model": self.name, "version": self.version})  # fmt: skip


def _zeros(spec: TensorSpec, batch: int | None) -> np.ndarray:
    assert spec.shape is not None
    dims = [batch if (i == 0 and batch is not None) else d for i, d in enumerate(spec.shape)]
    if spec.dtype == "string":
        out = np.empty(dims, dtype=object)
        out.fill("")
        return out
    return np.zeros(dims, dtype={"int32": np.int32, "bool": np.bool_}.get(spec.dtype, np.float32))


def load_servable(name: str, version: int, path: str, warm_up: bool = True) -> Servable:
    """Load ``path`` (a ``model.json`` or URL) as version ``version`` of model ``name``, and warm it up."""
    started = time.perf_counter()
    from ..layers.model_loading import load_any_model

    kind, model = load_any_model(path)
    try:
        servable = Servable(name, version, path, kind, model)
        if warm_up:
            servable.warm_up()
    except BaseException:
        model.dispose()
        raise
    LOG.info("loaded model %s version %s from %s in %.0f ms (%s, batchable=%s)", name, version, path,
             (time.perf_counter() - started) * 1000, kind, servable.batchable,
             extra={"event": "load", "model": name, "version": version, "path": path})  # fmt: skip
    return servable


def model_json_of(folder: str) -> str | None:
    """The ``model.json`` in ``folder`` (None if there is none)."""
    inner = os.path.join(folder, "model.json")
    return inner if os.path.isfile(inner) else None
