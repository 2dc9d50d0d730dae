"""Model files on disk: plain paths and ``file://`` URLs (as tfjs-node's ``file://`` handler, with shards).

Loading takes a folder (its ``model.json``) or the path of a model.json; weight files are read only from the
folder that holds the model.json: a manifest path that would leave it (``..``, absolute, a URL, a symlink
pointing out) raises a ValueError before anything is read. Saving takes a folder (created when missing) or a
``.json`` file path and writes the model.json beside ``group1-shard{i}of{n}.bin`` shards of at most 4 MiB,
durably (``durable.py``: temporary files, fsync, renames with model.json last, old shards removed after).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .durable import save_model_files
from .handlers import (
    check_group_data,
    check_group_sizes,
    check_weight_path,
    register_load_router,
    register_save_router,
    url_scheme,
)
from .model_json import artifacts_for_model_json, dumps_model_json, model_json_for_artifacts, parse_model_json
from .types import ModelArtifacts, SaveResult, concatenate_buffers, model_artifacts_info
from .weights import DEFAULT_SHARD_SIZE_BYTES, shard_weights, weights_byte_length

MODEL_JSON_FILENAME = "model.json"
FILE_SCHEME = "file://"


def _strip_scheme(path: str | os.PathLike[str]) -> str:
    p = os.fspath(path)
    return p[len(FILE_SCHEME) :] if p.lower().startswith(FILE_SCHEME) else p


def resolve_in_folder(folder: str | os.PathLike[str], path: str, source: str = "model.json") -> str:
    """The real path of a weight file named relative to ``folder``; ValueError when it would leave the folder
    (``..``, absolute, a URL, a symlink pointing out) or does not exist."""
    root = os.path.realpath(os.fspath(folder))
    clean = check_weight_path(path, source)
    full = os.path.realpath(os.path.join(root, clean))
    if os.path.commonpath([root, full]) != root or full == root:
        raise ValueError(f"{source}: weight path {path!r} resolves outside the model's folder {root}")
    if not os.path.isfile(full):
        raise ValueError(f"{source}: weight file {path!r} is missing (looked for {full})")
    return full


def read_files_in_folder(
    folder: str | os.PathLike[str], paths: Sequence[str], source: str = "model.json"
) -> list[bytes]:
    """Read weight files named relative to ``folder``, all checked (inside it, present) before any is read."""
    resolved = [resolve_in_folder(folder, path, source) for path in paths]
    out = []
    for full in resolved:
        with open(full, "rb") as f:
            out.append(f.read())
    return out


class FileSystem:
    """Load/save handler for a folder or model.json path (TF.js-node's ``NodeFileSystem``, sharded as the converter)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
        on_progress: Callable[[float], None] | None = None,
    ) -> None:
        p = _strip_scheme(path)
        if not p:
            raise ValueError("file system handler: the path must not be empty")
        self.path = p
        self.shard_size_bytes = shard_size_bytes
        self.on_progress = on_progress

    def __repr__(self) -> str:
        return f"FileSystem({self.path!r})"

    def _model_json_path(self) -> str:
        if os.path.isdir(self.path):
            return os.path.join(self.path, MODEL_JSON_FILENAME)
        return self.path

    def load(self) -> ModelArtifacts:
        """Read model.json and its weight shards (validated against the specs) into ModelArtifacts."""
        json_path = self._model_json_path()
        if not os.path.isfile(json_path):
            raise FileNotFoundError(f"no model.json at {json_path!r} (pass a model folder or a model.json path)")
        with open(json_path, "rb") as f:
            model_json = parse_model_json(f.read(), json_path)
        manifest = model_json.get("weightsManifest")
        if manifest is None:
            return artifacts_for_model_json(model_json)
        folder = os.path.dirname(os.path.abspath(json_path))
        files = [[resolve_in_folder(folder, p, json_path) for p in g["paths"]] for g in manifest]  # before any read
        for i, group in enumerate(manifest):  # sizes against the specs, also before any read
            check_group_sizes(i, group, [os.stat(full).st_size for full in files[i]], json_path)
        total = sum(len(g) for g in files) or 1
        specs, parts, done = [], [], 0
        for i, group in enumerate(manifest):
            buffers = []
            for full in files[i]:
                with open(full, "rb") as f:
                    buffers.append(f.read())
                done += 1
                if self.on_progress is not None:
                    self.on_progress(done / total)
            data = b"".join(buffers)
            check_group_data(i, group, data, json_path)
            specs.extend(group["weights"])
            parts.append(data)
        return artifacts_for_model_json(model_json, specs, b"".join(parts))

    def save(self, artifacts: ModelArtifacts) -> SaveResult:
        """Write model.json and ``group1-shard{i}of{n}.bin`` files (folder created when missing), durably: a killed
        or failed save leaves the previous model or the new one (see ``durable``); shards get a ``.<8 hex>``
        suffix where a file of the plain name is already in the folder."""
        if isinstance(artifacts, Mapping):
            artifacts = ModelArtifacts.from_dict(artifacts)
        if self.path.lower().endswith(".json"):
            folder, json_name = os.path.dirname(self.path) or ".", os.path.basename(self.path)
        else:
            folder, json_name = self.path, MODEL_JSON_FILENAME
        if os.path.exists(folder) and not os.path.isdir(folder):
            raise ValueError(f"cannot save a model to {folder!r}: it exists and is not a folder")
        manifest, files = None, {}
        if artifacts.weight_specs is not None:
            data = concatenate_buffers(artifacts.weight_data)
            need = weights_byte_length(artifacts.weight_specs, data, "weight data to save")
            if need != len(data):
                raise ValueError(f"weight data to save has {len(data)} bytes but its specs describe {need}")
            manifest, files = shard_weights(artifacts.weight_specs, data, self.shard_size_bytes)

        def make_json(names: dict[str, str]) -> str:
            renamed = None
            if manifest is not None:
                renamed = [{**g, "paths": [names[p] for p in g["paths"]]} for g in manifest]
            return dumps_model_json(model_json_for_artifacts(artifacts, renamed))

        save_model_files(folder, json_name, files, make_json)
        return SaveResult(model_artifacts_info=model_artifacts_info(artifacts))


def file_system(
    path: str | os.PathLike[str],
    shard_size_bytes: int = DEFAULT_SHARD_SIZE_BYTES,
    on_progress: Callable[[float], None] | None = None,
) -> FileSystem:
    """A handler that loads from / saves to a local folder or model.json path (``file://`` optional)."""
    return FileSystem(path, shard_size_bytes, on_progress)


def file_system_router(url: Any, load_options: Mapping[str, Any] | None = None) -> FileSystem | None:
    """Route ``file://...`` URLs and plain paths (no ``scheme://``) to the file system handler."""
    if isinstance(url, os.PathLike):
        url = os.fspath(url)
    if not isinstance(url, str) or not url:
        return None
    if url_scheme(url) not in (None, "file"):
        return None
    on_progress = (load_options or {}).get("on_progress")
    return FileSystem(url, on_progress=on_progress)


register_load_router(file_system_router)
register_save_router(file_system_router)
