"""deeplearn.js 0.x's ``CheckpointLoader``: weights dumped by its checkpoint dumper scripts.

A checkpoint is a folder (or URL) holding ``manifest.json``, which maps each variable name to
``{"filename": ..., "shape": [...]}``, and one file per variable of raw little-endian float32 values. The
methods are coroutines, as deeplearn.js's returned Promises: ``variables = await loader.getAllVariables()``.
Local folders, ``file://`` and ``http(s)://`` URLs are read (network reads block while they run).
"""

from __future__ import annotations

import json
import urllib.parse
from pathlib import Path
from typing import Any

import numpy as np

from ..core import util
from .ndarray import NDArray

MANIFEST_FILE = "manifest.json"


class CheckpointLoader:
    """Reads a deeplearn.js checkpoint: its manifest and its variables as ``NDArray``s (cached once loaded)."""

    def __init__(self, urlPath: str | Path) -> None:  # noqa: N803 - deeplearn.js's name
        path = str(urlPath)
        self.urlPath = path if path.endswith("/") else path + "/"
        self.checkpointManifest: dict[str, dict[str, Any]] | None = None
        self.variables: dict[str, NDArray] | None = None

    # -- reading ---------------------------------------------------------------------------------
    def _read(self, name: str, what: str) -> bytes:
        location = self.urlPath + name
        if urllib.parse.urlparse(location).scheme in ("http", "https", "file"):
            try:
                response = util.fetch(location)
            except ConnectionError as exc:
                raise FileNotFoundError(f"CheckpointLoader: could not fetch {what} at {location}: {exc}") from None
            if not response.ok:
                raise FileNotFoundError(f"CheckpointLoader: {what} not found at {location} (HTTP {response.status})")
            return response.array_buffer()
        try:
            return Path(location).read_bytes()
        except OSError as exc:
            raise FileNotFoundError(f"CheckpointLoader: {what} not found at {location}: {exc.strerror}") from None

    def _load_manifest(self) -> dict[str, dict[str, Any]]:
        if self.checkpointManifest is None:
            raw = self._read(MANIFEST_FILE, MANIFEST_FILE)
            try:
                manifest = json.loads(raw)
            except ValueError as exc:
                raise ValueError(f"CheckpointLoader: {self.urlPath}{MANIFEST_FILE} is not JSON: {exc}") from None
            if not isinstance(manifest, dict) or not all(
                isinstance(v, dict) and isinstance(v.get("filename"), str) and isinstance(v.get("shape"), list)
                for v in manifest.values()
            ):
                raise ValueError(
                    f"CheckpointLoader: {self.urlPath}{MANIFEST_FILE} must map each variable name to "
                    '{"filename": str, "shape": [int, ...]}'
                )
            self.checkpointManifest = manifest
        return self.checkpointManifest

    def _load_variable(self, varName: str) -> NDArray:  # noqa: N803
        manifest = self._load_manifest()
        if varName not in manifest:
            raise KeyError(f"CheckpointLoader: cannot load non-existent variable {varName!r}")
        entry = manifest[varName]
        raw = self._read(entry["filename"], f"variable {varName!r}")
        shape = [int(d) for d in entry["shape"]]
        size = util.size_from_shape(shape)
        if len(raw) != 4 * size:
            raise ValueError(
                f"CheckpointLoader: variable {varName!r} ({entry['filename']}) has {len(raw)} bytes, expected "
                f"{4 * size} (float32 of shape {shape})"
            )
        return NDArray.make(shape, {"values": np.frombuffer(raw, "<f4")}, "float32")

    # -- deeplearn.js API ------------------------------------------------------------------------
    async def getCheckpointManifest(self) -> dict[str, dict[str, Any]]:  # noqa: N802
        """The manifest: variable name -> ``{"filename", "shape"}``."""
        return self._load_manifest()

    async def getAllVariables(self) -> dict[str, NDArray]:  # noqa: N802
        """Every variable of the manifest, loaded (once; later calls return the same arrays)."""
        if self.variables is None:
            loaded: dict[str, NDArray] = {}
            try:
                for name in self._load_manifest():
                    loaded[name] = self._load_variable(name)
            except BaseException:
                for array in loaded.values():
                    array.dispose()
                raise
            self.variables = loaded
        return self.variables

    async def getVariable(self, varName: str) -> NDArray:  # noqa: N802, N803
        """One variable, as a float32 ``NDArray`` of its manifest shape (a new array each call)."""
        return self._load_variable(varName)
