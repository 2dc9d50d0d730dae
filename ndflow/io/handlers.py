"""IO handlers: the protocol, the URL routers (TF.js ``router_registry.ts``) and the weights loader.

A load router is ``router(url, load_options) -> handler | None``, a save router ``router(url) -> handler | None``.
``file://`` and plain paths go to ``ndflow.io.file_system``, ``http://``/``https://`` to ``ndflow.io.http``;
``register_load_router``/``register_save_router`` add more schemes.
"""

from __future__ import annotations

import os
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..core.tensor import Tensor
from .types import IOHandler, LoadHandler, ModelArtifacts, SaveHandler, SaveResult, WeightsManifestGroup
from .weights import arrays_to_tensors, decode_arrays, group_byte_range, weight_byte_length, weights_byte_length

__all__ = [
    "IOHandler", "LoadHandler", "ModelArtifacts", "SaveHandler", "SaveResult", "check_group_data", "check_group_sizes",
    "check_weight_path", "get_load_handlers", "get_save_handlers", "load_weights", "register_load_router",
    "register_save_router", "resolve_load_handler", "resolve_save_handler", "weights_loader_factory",
]  # fmt: skip

LoadRouter = Callable[[Any, Mapping[str, Any] | None], Any]
SaveRouter = Callable[[Any], Any]

_load_routers: list[LoadRouter] = []
_save_routers: list[SaveRouter] = []

_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.\-]*://")


def url_scheme(url: str) -> str | None:
    """The ``scheme`` of ``scheme://...`` (lower case), or None for a plain path."""
    m = _SCHEME.match(url)
    return m.group(0)[:-3].lower() if m else None


def register_load_router(router: LoadRouter) -> None:
    """Add a load router: ``router(url, load_options)`` returns a handler for the URLs it knows, else None."""
    _load_routers.append(router)


def register_save_router(router: SaveRouter) -> None:
    """Add a save router: ``router(url)`` returns a handler for the URLs it knows, else None."""
    _save_routers.append(router)


def get_load_handlers(url: Any, load_options: Mapping[str, Any] | None = None) -> list[Any]:
    """Every load handler that a registered router returns for ``url`` (TF.js ``io.getLoadHandlers``)."""
    return [h for h in (router(url, load_options) for router in list(_load_routers)) if h is not None]


def get_save_handlers(url: Any) -> list[Any]:
    """Every save handler that a registered router returns for ``url`` (TF.js ``io.getSaveHandlers``)."""
    return [h for h in (router(url) for router in list(_save_routers)) if h is not None]


def resolve_load_handler(path_or_handler: Any, load_options: Mapping[str, Any] | None = None) -> Any:
    """A handler with ``load()`` for a URL/path (exactly one router must match) or a handler passed as is."""
    if hasattr(path_or_handler, "load") and not isinstance(path_or_handler, str | os.PathLike):
        return path_or_handler
    handlers = get_load_handlers(path_or_handler, load_options)
    if not handlers:
        raise ValueError(f"Cannot find any load handlers for URL '{path_or_handler}'")
    if len(handlers) > 1:
        raise ValueError(f"Found more than one ({len(handlers)}) load handlers for URL '{path_or_handler}'")
    return handlers[0]


def resolve_save_handler(path_or_handler: Any) -> Any:
    """A handler with ``save()`` for a URL/path (exactly one router must match) or a handler passed as is."""
    if hasattr(path_or_handler, "save") and not isinstance(path_or_handler, str | os.PathLike):
        return path_or_handler
    handlers = get_save_handlers(path_or_handler)
    if not handlers:
        raise ValueError(f"Cannot find any save handlers for URL '{path_or_handler}'")
    if len(handlers) > 1:
        raise ValueError(f"Found more than one ({len(handlers)}) save handlers for URL '{path_or_handler}'")
    return handlers[0]


# -- weight paths ------------------------------------------------------------------------------------


def check_weight_path(path: Any, source: str = "weightsManifest") -> str:
    """A manifest weight path as a clean relative path inside the model's folder; ValueError for anything that
    could leave it: absolute paths, drive letters, ``..``, URLs, backslashes, NUL bytes."""
    if not isinstance(path, str) or not path.strip():
        raise ValueError(f"{source}: weight path {path!r} must be a non-empty relative file name")
    problem = None
    if "\x00" in path:
        problem = "contains a NUL byte"
    elif _SCHEME.match(path) or path.startswith("//"):
        problem = "is a URL, not a path relative to the model"
    elif path.startswith(("/", "\\")) or re.match(r"^[a-zA-Z]:", path):
        problem = "is absolute"
    elif "\\" in path:
        problem = "contains a backslash"
    elif ".." in path.split("/"):
        problem = "contains '..'"
    elif ":" in path.split("/")[0]:
        problem = "has a scheme or drive prefix"
    if problem is not None:
        raise ValueError(f"{source}: weight path {path!r} {problem}; weight files must lie in the model's folder")
    clean = posixpath.normpath(path)
    if clean in (".", "") or clean.startswith("../"):
        raise ValueError(f"{source}: weight path {path!r} does not name a file in the model's folder")
    return clean


def check_group_data(group_index: int, group: WeightsManifestGroup, data: bytes, source: str = "model.json") -> None:
    """Raise a ValueError when a group's shard bytes do not match what its weight specs describe."""
    paths = ", ".join(group["paths"]) or "no files"
    where = f"{source}: weights group {group_index + 1} ({paths})"
    need = weights_byte_length(group["weights"], data, where)
    if need != len(data):
        raise ValueError(
            f"{where}: the shard files hold {len(data)} bytes but the specs describe {need} bytes "
            "(a shard has the wrong byte length, or a weight's shape/dtype does not match the data)"
        )


def check_group_sizes(
    group_index: int,
    group: WeightsManifestGroup,
    sizes: Sequence[int | None],
    source: str = "model.json",
) -> None:
    """Before any read: raise a ValueError naming the shard files, their sizes and the size the specs describe
    when a group's files (their sizes from ``os.stat`` or ``Content-Length``; None when unknown) cannot hold
    exactly its weights."""
    low, high = group_byte_range(group["weights"])
    paths = list(group["paths"])
    known = [(p, n) for p, n in zip(paths, sizes, strict=False) if n is not None]
    where = f"{source}: weights group {group_index + 1}"
    expected = f"{low} bytes" if high is not None else f"at least {low} bytes"
    for path, n in known:  # one shard alone larger than the whole group
        if high is not None and n > high:
            raise ValueError(
                f"{where}: weight file {path!r} has {n} bytes, but the weight specs of its group describe {expected} "
                "in all; refusing to read it"
            )
    if len(known) == len(paths):
        total = sum(n for _, n in known)
        if total < low or (high is not None and total != high):
            files = ", ".join(f"{p!r} ({n} bytes)" for p, n in known) or "no files"
            specs = group["weights"]
            names = ", ".join(f"'{w['name']}' (shape {list(w['shape'])}, {w['dtype']})" for w in specs[:3])
            more = f" and {len(specs) - 3} more" if len(specs) > 3 else ""
            raise ValueError(
                f"{where}: weight files {files} hold {total} bytes, but the weight specs ({names}{more}) describe "
                f"{expected}; refusing to read them"
            )


# -- loading weights from a manifest -----------------------------------------------------------------

FetchWeights = Callable[[list[str]], Sequence[bytes]]
FetchSizes = Callable[[list[str]], Sequence[int | None]]


def weights_loader_factory(
    fetch_weights: FetchWeights,
    fetch_sizes: FetchSizes | None = None,
) -> Callable[..., dict[str, Tensor]]:
    """A ``load(manifest, file_path_prefix='', weight_names=None)`` that fetches shards with ``fetch_weights(urls)``
    and decodes only the groups (and weights) asked for (TF.js ``weightsLoaderFactory``); ``fetch_sizes(urls)``
    (sizes, None when unknown) lets the shard sizes be compared with the specs before anything is read."""

    def load(
        manifest: Sequence[WeightsManifestGroup], file_path_prefix: str = "", weight_names: Sequence[str] | None = None
    ) -> dict[str, Tensor]:
        from .model_json import check_weights_manifest

        check_weights_manifest(list(manifest), "weights manifest")
        all_names = [spec["name"] for group in manifest for spec in group["weights"]]
        wanted = set(all_names) if weight_names is None else set(weight_names)
        missing = [n for n in (weight_names or []) if n not in set(all_names)]
        if missing:
            raise ValueError(
                f"Could not find weights in manifest with names: {', '.join(missing)}. "
                f"Manifest JSON has weights with names: {', '.join(all_names)}."
            )
        groups = [i for i, g in enumerate(manifest) if any(s["name"] in wanted for s in g["weights"])]
        urls: list[str] = []
        for i in groups:
            for path in manifest[i]["paths"]:
                clean = check_weight_path(path)
                urls.append(
                    file_path_prefix + ("" if not file_path_prefix or file_path_prefix.endswith("/") else "/") + clean
                )
        if fetch_sizes is not None:
            sizes, start = list(fetch_sizes(urls)), 0
            for i in groups:
                n = len(manifest[i]["paths"])
                check_group_sizes(i, manifest[i], sizes[start : start + n], "weights manifest")
                start += n
        buffers = list(fetch_weights(urls))
        if len(buffers) != len(urls):
            raise ValueError(f"fetch_weights returned {len(buffers)} buffers for {len(urls)} weight files")
        arrays, specs, start = {}, [], 0
        for i in groups:
            group = manifest[i]
            n = len(group["paths"])
            data = b"".join(bytes(b) for b in buffers[start : start + n])
            start += n
            check_group_data(i, group, data, "weights manifest")
            offset = 0
            for spec in group["weights"]:
                size = weight_byte_length(spec, data, offset)
                if spec["name"] in wanted:
                    arrays.update(decode_arrays(data[offset : offset + size], [spec], f"weight '{spec['name']}'"))
                    specs.append(spec)
                offset += size
        return arrays_to_tensors(arrays, specs)

    return load


def load_weights(
    manifest: Sequence[WeightsManifestGroup],
    file_path_prefix: str = "",
    weight_names: Sequence[str] | None = None,
    request_init: Mapping[str, Any] | None = None,
) -> dict[str, Tensor]:
    """Load (some of) a manifest's weights from shard files under ``file_path_prefix`` (a folder, ``file://`` or an
    ``http(s)://`` URL) to a dict name -> Tensor (TF.js ``io.loadWeights``)."""
    from .file_system import read_files_in_folder, resolve_in_folder
    from .http import fetch_bytes

    scheme = url_scheme(file_path_prefix or "")
    if scheme not in (None, "file", "http", "https"):
        raise ValueError(f"load_weights: unsupported URL scheme {scheme!r} in {file_path_prefix!r}")

    def fetch(urls: list[str]) -> list[bytes]:
        if scheme in ("http", "https"):
            return [fetch_bytes(u, request_init, what="weight file") for u in urls]
        folder = file_path_prefix[len("file://") :] if file_path_prefix.startswith("file://") else file_path_prefix
        rel = [u[len(file_path_prefix) :].lstrip("/") for u in urls]
        return read_files_in_folder(folder or ".", rel)

    def sizes(urls: list[str]) -> list[int | None]:
        if scheme in ("http", "https"):
            return [None] * len(urls)
        folder = file_path_prefix[len("file://") :] if file_path_prefix.startswith("file://") else file_path_prefix
        rel = [u[len(file_path_prefix) :].lstrip("/") for u in urls]
        return [os.stat(resolve_in_folder(folder or ".", r)).st_size for r in rel]

    return weights_loader_factory(fetch, sizes)(manifest, file_path_prefix, weight_names)
