"""Durable model saves: a killed, crashed or failed save leaves the previous model or the new one, never a mix.

The protocol (see docs/security.md, "Durable saves"):

1. Read the folder's previous model.json (the file being replaced) and the shard paths its weightsManifest names.
2. Pick the new shard names: the plain TF.js names ``group1-shard{i}of{n}.bin`` when no file of that name is in
   the folder, else ``group1-shard{i}of{n}.<8 hex>.bin`` (TF.js reads paths from the manifest, so any name
   loads). A save never writes over an existing shard file, so renaming a new shard into place cannot change
   what the previous model.json loads, and an unrelated file beside the model is never touched.
3. Write every file to a hidden temporary name in the target folder (``.{name}.tmp-{pid}-{8 hex}``), flush and
   fsync it.
4. Rename the shards into place, fsync the folder, then ``os.replace`` the model.json (the commit point) and
   fsync the folder again.
5. Remove the previous save's shards that the new model.json does not name: only paths the previous model.json
   named, inside the folder; nothing else is ever removed.

On any exception before the commit the temporary files and the shards already renamed in are removed and the
exception re-raised (a full disk raises ``OSError(ENOSPC)`` naming the folder); the previous model is intact.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import warnings
from collections.abc import Callable, Mapping

from .handlers import check_weight_path

_SUFFIX_TRIES = 16


def previous_weight_paths(json_path: str) -> list[str]:
    """The clean weight paths the model.json at ``json_path`` names (empty when absent or not a model.json)."""
    try:
        with open(json_path, "rb") as f:
            model_json = json.loads(f.read())
    except (OSError, ValueError, RecursionError):
        return []
    manifest = model_json.get("weightsManifest") if isinstance(model_json, Mapping) else None
    paths: list[str] = []
    for group in manifest if isinstance(manifest, list) else []:
        for path in group.get("paths", []) if isinstance(group, Mapping) else []:
            try:
                paths.append(check_weight_path(path, json_path))
            except ValueError:
                continue  # never touch a path that could leave the folder
    return paths


def _unique_name(folder: str, name: str, taken: set[str]) -> str:
    """``name`` when no file of that name is in ``folder``, else ``stem.<8 hex>.bin``."""
    if name not in taken and not os.path.lexists(os.path.join(folder, name)):
        return name
    stem, dot, ext = name.rpartition(".")
    for _ in range(_SUFFIX_TRIES):
        candidate = f"{stem}.{secrets.token_hex(4)}{dot}{ext}" if dot else f"{name}.{secrets.token_hex(4)}"
        if candidate not in taken and not os.path.lexists(os.path.join(folder, candidate)):
            return candidate
    raise ValueError(f"cannot save a model to {folder!r}: no free file name for shard {name!r}")


def _write_file(path: str, data: bytes) -> None:
    """Create ``path`` (which must not exist), write ``data``, flush and fsync it."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0), 0o644)
    try:
        view = memoryview(data)
        while view:
            n = os.write(fd, view)
            view = view[n:]
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_folder(folder: str) -> None:
    """fsync a folder so renames in it are durable (a no-op where folders cannot be opened, e.g. Windows)."""
    try:
        fd = os.open(folder, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _remove(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def save_model_files(
    folder: str, json_name: str, shards: Mapping[str, bytes], make_json: Callable[[dict[str, str]], str]
) -> dict[str, str]:
    """Durably write ``shards`` ({plain TF.js name: bytes}) and the model.json ``json_name`` in ``folder``.

    ``make_json(names)`` gets {plain name: name chosen} and returns the model.json text naming the chosen files.
    Returns the chosen names."""
    os.makedirs(folder, exist_ok=True)
    json_path = os.path.join(folder, json_name)
    if os.path.isdir(json_path):
        raise ValueError(f"cannot save a model to {json_path!r}: it is a folder")
    old_paths = previous_weight_paths(json_path)
    names: dict[str, str] = {}
    for plain in shards:
        names[plain] = _unique_name(folder, plain, set(names.values()) | {json_name})
    text = make_json(names).encode("utf-8")
    token, pid = secrets.token_hex(4), os.getpid()
    temps = {name: os.path.join(folder, f".{name}.tmp-{pid}-{token}") for name in [*names.values(), json_name]}
    placed: list[str] = []
    try:
        for plain, name in names.items():
            _write_file(temps[name], shards[plain])
        _write_file(temps[json_name], text)
        for name in names.values():
            final = os.path.join(folder, name)
            if os.path.lexists(final):  # appeared since the names were chosen: never overwrite it
                raise ValueError(f"cannot save a model to {folder!r}: {name!r} appeared during the save")
            os.replace(temps[name], final)
            placed.append(final)
        fsync_folder(folder)
        os.replace(temps[json_name], json_path)  # the commit point
    except BaseException as e:
        for path in [*temps.values(), *placed]:
            try:
                _remove(path)
            except OSError:
                pass
        if isinstance(e, OSError) and e.errno == errno.ENOSPC:
            raise OSError(
                errno.ENOSPC,
                f"no space left on the device saving a model to folder {folder!r}; "
                "the previous model there is unchanged",
            ) from e
        raise
    fsync_folder(folder)
    new = set(names.values()) | {json_name}
    root = os.path.realpath(folder)
    for path in old_paths:
        if path in new:
            continue
        full = os.path.join(root, path)
        if os.path.commonpath([root, os.path.realpath(os.path.dirname(full))]) != root:
            continue
        try:
            _remove(full)
        except OSError as e:  # the new model is saved; a leftover old shard is harmless
            warnings.warn(
                f"saved the model to {folder!r} but could not remove the old shard {path!r}: {e}", stacklevel=3
            )
    fsync_folder(folder)
    return names
