"""The served models and their versions: where each model's versions are (``MODEL/1/``, ``MODEL/2/``, or a
plain folder, ``model.json`` or URL as version 1), loading the highest, polling the folder for a new version and
switching to it once it has loaded and warmed up (requests in flight finish on the old one, which is then
disposed), and each version's status for TensorFlow Serving's model status API.

A version that fails to load (at start or on a reload) is reported in its status with the error; the version
already serving keeps serving. It is tried again when its files change."""

from __future__ import annotations

import logging
import os
import re
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from .errors import ServingError, not_found
from .runner import Servable, load_servable, model_json_of

LOG = logging.getLogger("ndflow.serving")
_URL = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://")


class LoadError(Exception):
    """A model none of whose versions could be loaded when the server starts."""


def versions_of(path: str) -> dict[int, str]:
    """Version -> ``model.json`` (or URL) of the model at ``path``: numbered subfolders that hold a
    ``model.json``; else the folder's own ``model.json``, a ``.json`` file, or a URL, as version 1."""
    if _URL.match(path) and not path.startswith("file://"):
        return {1: path}
    local = path[len("file://") :] if path.startswith("file://") else path
    if os.path.isfile(local):
        return {1: local}
    if not os.path.isdir(local):
        return {}
    found = {}
    for entry in os.listdir(local):
        if entry.isdigit():
            inner = model_json_of(os.path.join(local, entry))
            if inner is not None:
                found[int(entry)] = inner
    if not found and not any(e.isdigit() for e in os.listdir(local)):
        inner = model_json_of(local)
        if inner is not None:
            found[1] = inner
    return found


def _stamp(model_json: str) -> float:
    """When the files of a version last changed (a failed version is retried once they change)."""
    if _URL.match(model_json):
        return 0.0
    folder = os.path.dirname(model_json) or "."
    try:
        return max(os.stat(os.path.join(folder, f)).st_mtime for f in os.listdir(folder))
    except (OSError, ValueError):
        return 0.0


@dataclass
class VersionStatus:
    """One version's state as TensorFlow Serving reports it (``LOADING``, ``AVAILABLE``, ``END``)."""

    version: int
    state: str = "LOADING"
    error_code: str = "OK"
    error_message: str = ""

    def body(self) -> dict[str, object]:
        return {"version": str(self.version), "state": self.state,
                "status": {"error_code": self.error_code, "error_message": self.error_message}}  # fmt: skip


@dataclass
class ModelEntry:
    name: str
    path: str
    current: Servable | None = None
    statuses: dict[int, VersionStatus] = field(default_factory=dict)
    tried: dict[int, float] = field(default_factory=dict)


class Registry:
    """The models by name. Thread safe: ``poll`` runs in a worker thread while requests ``acquire`` and
    ``release`` servables in the event loop. ``on_retire(servable)`` is called when a version stops being
    served (its batcher can then be closed)."""

    def __init__(self, models: Mapping[str, str], warm_up: bool = True,
                 on_retire: Callable[[Servable], None] | None = None) -> None:  # fmt: skip
        if not models:
            raise ValueError("models: give at least one model (name -> path)")
        self.entries = {name: ModelEntry(name, str(path)) for name, path in models.items()}
        self.warm_up = warm_up
        self.on_retire = on_retire
        self._lock = threading.Lock()
        self._poll_lock = threading.Lock()
        self.closed = False

    # -- loading and reloading ------------------------------------------------------------------------------
    def load_all(self) -> None:
        """Load each model's highest version; a LoadError naming the models none of whose versions load."""
        self.poll()
        failed = []
        for entry in self.entries.values():
            if entry.current is None:
                errors = [f"version {s.version}: {s.error_message}" for s in entry.statuses.values() if s.error_message]
                why = "; ".join(errors) if errors else f"no model.json found at {entry.path} (nor in numbered folders)"
                failed.append(f"model '{entry.name}' ({entry.path}): {why}")
        if failed:
            self.close()
            raise LoadError("; ".join(failed))

    def poll(self) -> list[tuple[str, int]]:
        """Look for a higher version of every model and switch to it when it loads; the (model, version) pairs
        that started serving."""
        switched = []
        with self._poll_lock:
            for entry in self.entries.values():
                if self.closed:
                    break
                found = self._newer(entry)
                if found is not None and self._try_load(entry, *found):
                    switched.append((entry.name, found[0]))
        return switched

    def _newer(self, entry: ModelEntry) -> tuple[int, str] | None:
        versions = versions_of(entry.path)
        serving = entry.current.version if entry.current is not None else -1
        for version in sorted(versions, reverse=True):
            if version <= serving:
                return None
            stamp = _stamp(versions[version])
            if entry.tried.get(version) != stamp:
                entry.tried[version] = stamp
                return version, versions[version]
        return None

    def _try_load(self, entry: ModelEntry, version: int, path: str) -> bool:
        status = VersionStatus(version)
        with self._lock:
            entry.statuses[version] = status
        try:
            servable = load_servable(entry.name, version, path, warm_up=self.warm_up)
        except Exception as exc:  # noqa: BLE001  (any failure to load leaves the serving version in place)
            message = str(exc) if not isinstance(exc, ServingError) else exc.message
            LOG.error("model %s version %s failed to load from %s: %s", entry.name, version, path, message,
                      extra={"event": "load_failed", "model": entry.name, "version": version})  # fmt: skip
            with self._lock:
                status.state, status.error_code = "END", "UNKNOWN"
                status.error_message = f"failed to load {path}: {type(exc).__name__}: {message}"
            return False
        with self._lock:
            if self.closed:
                old, servable.retired = None, True
            else:
                old, entry.current = entry.current, servable
                status.state = "AVAILABLE"
                if old is not None:
                    old.retired = True
                    entry.statuses[old.version] = VersionStatus(old.version, "END")
        if self.closed:
            servable.dispose()
            return False
        if old is not None:
            self._retire(old)
        return True

    def _retire(self, servable: Servable) -> None:
        if self.on_retire is not None:
            self.on_retire(servable)
        with self._lock:
            idle = servable.leases == 0
        if idle:
            servable.dispose()

    # -- requests -------------------------------------------------------------------------------------------
    def acquire(self, name: str, version: int | None = None) -> Servable:
        """The servable for a request (the latest version, or ``version``), leased until ``release``."""
        entry = self.entries.get(name)
        if entry is None:
            raise not_found(f"Servable not found for request: Latest({name})" if version is None else
                            f"Servable not found for request: Specific({name}, {version})")  # fmt: skip
        with self._lock:
            servable = entry.current
            if servable is None or (version is not None and servable.version != version):
                what = f"Latest({name})" if version is None else f"Specific({name}, {version})"
                raise not_found(f"Servable not found for request: {what}")
            servable.leases += 1
        return servable

    def release(self, servable: Servable) -> None:
        with self._lock:
            servable.leases -= 1
            idle = servable.retired and servable.leases == 0
        if idle:
            servable.dispose()

    def status(self, name: str, version: int | None = None) -> dict[str, object]:
        """TensorFlow Serving's GetModelStatus body for ``name`` (one version, or all it knows)."""
        entry = self.entries.get(name)
        if entry is None:
            raise not_found(f"Could not find any versions of model {name}")
        with self._lock:
            statuses = dict(entry.statuses)
        if version is not None:
            if version not in statuses:
                raise not_found(f"Could not find version {version} of model {name}")
            return {"model_version_status": [statuses[version].body()]}
        return {"model_version_status": [statuses[v].body() for v in sorted(statuses, reverse=True)]}

    def ready(self) -> bool:
        """Every model has a version loaded and warmed up."""
        with self._lock:
            return not self.closed and all(e.current is not None and e.current.warmed for e in self.entries.values())

    def servables(self) -> list[Servable]:
        with self._lock:
            return [e.current for e in self.entries.values() if e.current is not None]

    def close(self) -> None:
        """Stop serving: retire every version (each is disposed once its requests have finished)."""
        with self._poll_lock, self._lock:
            self.closed = True
            current = []
            for entry in self.entries.values():
                if entry.current is not None:
                    entry.current.retired = True
                    current.append(entry.current)
                    entry.current = None
        for servable in current:
            self._retire(servable)
