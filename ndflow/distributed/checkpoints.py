"""Checkpoints of a data-parallel training: written by rank 0 after an epoch, read back when a job restarts.

A checkpoint is a folder ``epoch-NNNNN`` holding the model with its optimizer's state, written by ``model.save``
(durable: a save killed half-way leaves the previous files or the new ones, never a mix), and ``latest.json``
names the newest complete one, with the next epoch to run and the shuffling seed; it is replaced atomically
(a temporary file, fsync, rename) only after the folder is complete. The oldest folders beyond ``keep`` go.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from typing import Any

LATEST = "latest.json"
_FOLDER = re.compile(r"^epoch-(\d{5,})$")


def _write_json(path: str, data: dict[str, Any]) -> None:
    folder = os.path.dirname(path)
    tmp = os.path.join(folder, f".{os.path.basename(path)}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        with open(tmp, "w") as f:
            json.dump(data, f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def save_checkpoint(model: Any, directory: str, epoch: int, seed: int, keep: int = 2) -> str:
    """Save ``model`` (weights and optimizer state) as the checkpoint before ``epoch`` (the next epoch to run);
    returns its folder."""
    os.makedirs(directory, exist_ok=True)
    name = f"epoch-{epoch:05d}"
    folder = os.path.join(directory, name)
    model.save(folder, include_optimizer=True)
    _write_json(os.path.join(directory, LATEST), {"epoch": int(epoch), "path": name, "seed": int(seed)})
    folders = sorted(f for f in os.listdir(directory) if _FOLDER.match(f) and f != name)
    for old in folders[: max(0, len(folders) - (keep - 1))]:
        shutil.rmtree(os.path.join(directory, old), ignore_errors=True)
    return folder


def latest_checkpoint(directory: str | None) -> dict[str, Any] | None:
    """``{'epoch', 'path' (the folder), 'seed'}`` of the newest checkpoint in ``directory``, or None."""
    if not directory:
        return None
    try:
        with open(os.path.join(directory, LATEST)) as f:
            info = json.load(f)
    except (OSError, ValueError):
        return None
    if not isinstance(info, dict) or not _FOLDER.match(str(info.get("path", ""))):
        raise ValueError(f"checkpoint_dir: {os.path.join(directory, LATEST)} is not a checkpoint index")
    return {"epoch": int(info["epoch"]), "path": os.path.join(directory, info["path"]), "seed": int(info["seed"])}


def restore_checkpoint(model: Any, folder: str) -> None:
    """Load a checkpoint's weights into ``model`` and its optimizer state into ``model.optimizer``, in the order
    they were saved (a restarted process may name its layers differently: the order is the model's own)."""
    from ..core.globals import dispose
    from ..io import decode_weights, resolve_load_handler
    from ..layers.engine.saving import OPTIMIZER_WEIGHT_GROUP

    artifacts = resolve_load_handler(os.path.join(folder, "model.json")).load()
    specs = list(artifacts.weight_specs or [])
    tensors = decode_weights(artifacts.weight_data, specs)
    try:
        weights = [tensors[s["name"]] for s in specs if s.get("group") != OPTIMIZER_WEIGHT_GROUP]
        if len(weights) != len(model.weights):
            raise ValueError(
                f"checkpoint {folder}: it holds {len(weights)} weights and the model has {len(model.weights)}; "
                "is it a checkpoint of this model?"
            )
        model.set_weights(weights)
        state = [
            {"name": s["name"], "tensor": tensors[s["name"]]} for s in specs if s.get("group") == OPTIMIZER_WEIGHT_GROUP
        ]
        if state and getattr(model, "optimizer", None) is not None:
            model.optimizer.set_weights(state)
    finally:
        dispose(list(tensors.values()))


__all__ = ["LATEST", "latest_checkpoint", "restore_checkpoint", "save_checkpoint"]
