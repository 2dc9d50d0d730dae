"""The server's settings (:class:`ServeConfig`) and how models are named from their paths."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]*$")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://")
#: The environment variable that hands the settings to each worker process of ``ndflow serve --workers N``.
CONFIG_ENV = "NDFLOW_SERVE_CONFIG"


def default_name(path: str) -> str:
    """A model's name from its path: the folder's name, or the ``.json`` file's name without ``.json``."""
    stripped = path.rstrip("/")
    base = stripped.rsplit("/", 1)[-1] or stripped
    if base.endswith(".json"):
        base = base[: -len(".json")]
        if base == "model" and "/" in stripped:  # FOLDER/model.json -> FOLDER
            base = stripped.rsplit("/", 2)[-2]
    base = base.split("@")[0] if _URL.match(path) else base
    return re.sub(r"[^A-Za-z0-9_.\-]", "_", base) or "model"


def model_map(models: Mapping[str, Any] | Iterable[Any]) -> dict[str, str]:
    """``{name: path}`` from a mapping, or from paths and ``NAME=PATH`` strings (names from the paths)."""
    if isinstance(models, Mapping):
        pairs = [(str(k), str(v)) for k, v in models.items()]
    else:
        if isinstance(models, str | os.PathLike):
            models = [models]
        pairs = []
        for item in models:
            text = os.fspath(item)
            name, sep, path = text.partition("=")
            if sep and _NAME.match(name) and not _URL.match(text) and not os.path.exists(text):
                pairs.append((name, path))
            else:
                pairs.append((default_name(text), text))
    out: dict[str, str] = {}
    for name, path in pairs:
        if not _NAME.match(name):
            raise ValueError(f"models: the model name {name!r} must be letters, digits, '_', '.' or '-'")
        if name in out:
            raise ValueError(f"models: two models are named {name!r} ({out[name]} and {path}); name them NAME=PATH")
        out[name] = path
    if not out:
        raise ValueError("models: give at least one model")
    return out


@dataclass
class ServeConfig:
    """What ``ndflow serve`` and :func:`ndflow.serving.app` take.

    ``max_batch``: the most rows merged into one run (below 2: no batching); ``batch_timeout_ms``: how long the
    oldest request of a batch waits for others; ``max_body_bytes``: the request size limit (413 above it);
    ``request_timeout_s``: the time a predict request may take (504 after it); ``poll_s``: how often the model
    folders are looked at for a new version (0: never); ``threads``: the threads that run the models;
    ``backend``: the ndflow backend (None: the default); ``tune_gc``: once the models are loaded, move every object
    alive then out of the garbage collector's scans (``gc.freeze``) and collect the youngest generation every 20,000
    allocations instead of 700 (a decoded JSON request makes thousands of lists: with the default settings the
    collections it triggers, scanning the models' and libraries' objects, took longer than the model's run).
    These are the process's settings: an app embedded in a program whose collector must stay as it was passes
    ``tune_gc=False``."""

    models: dict[str, str] = field(default_factory=dict)
    max_batch: int = 32
    batch_timeout_ms: float = 5.0
    max_body_bytes: int = 64 * 1024 * 1024
    request_timeout_s: float = 30.0
    poll_s: float = 2.0
    threads: int | None = None
    warm_up: bool = True
    backend: str | None = None
    tune_gc: bool = True

    def __post_init__(self) -> None:
        self.models = model_map(self.models)
        checks = [("max_batch", self.max_batch >= 0), ("batch_timeout_ms", self.batch_timeout_ms >= 0),
                  ("max_body_bytes", self.max_body_bytes > 0), ("request_timeout_s", self.request_timeout_s > 0),
                  ("poll_s", self.poll_s >= 0), ("threads", self.threads is None or self.threads >= 1)]  # fmt: skip
        for name, ok in checks:
            if not ok:
                raise ValueError(f"{name}: invalid value {getattr(self, name)!r}")

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> ServeConfig:
        return cls(**json.loads(text))
