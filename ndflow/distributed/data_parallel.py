"""Data-parallel training across processes with ``torch.distributed``: ``model.fit(..., distribution=
DataParallel())``.

Every process holds the whole model. ``fit`` calls the hooks below (``ndflow/layers/engine/training.py``):

- ``setup`` joins the process group (from torchrun's ``RANK``/``WORLD_SIZE``/``MASTER_ADDR``/``MASTER_PORT``, the
  arguments, or a group already made, as Ray Train's ``TorchTrainer`` makes one), resumes rank 0 from the latest
  checkpoint, and sends rank 0's weights, optimizer state, next epoch and shuffling seed to every process;
- ``epoch_rng`` / ``local_indices``: every process draws the same permutation (seeded by the agreed seed and
  the epoch, so a restarted job shuffles as the first run did) and takes its contiguous part of each global
  batch of ``batch_size`` samples; ``shard``: ``fit_dataset`` reads every ``world_size``-th batch;
- ``reduce``: after the gradients of a step are computed and before the optimizer applies them, one all-reduce
  sums ``n * gradient``, ``n * loss``, ``n * metric`` and ``n`` (this process's batch size) over the processes and
  divides by the total, which is the gradient of the global batch's mean loss: the weights after N steps equal
  one process's training on the same global batches, within float rounding;
- ``callbacks``: after each epoch, BatchNorm's moving statistics (all non-trainable weights) are averaged across
  the processes (``sync_batch_stats``) and rank 0 writes a checkpoint (``checkpoints.py``).

Batch statistics inside a step are per process (each normalizes its own part of the batch, as PyTorch's DDP
does without SyncBatchNorm). Dropout without a seed draws from a generator seeded by (seed, rank): different
masks on each process, the same masks when the job is run again with the same seed.
"""

from __future__ import annotations

import os
import time
from datetime import timedelta
from typing import Any

import numpy as np

from ..core.engine import ENGINE
from ..layers.engine.callbacks import BaseCallback
from ._extras import require
from .checkpoints import latest_checkpoint, restore_checkpoint, save_checkpoint

_ENV = ("RANK", "WORLD_SIZE")


def _env_int(name: str) -> int | None:
    value = os.environ.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"DataParallel: environment variable {name} must be an integer, got {value!r}") from None


class DataParallel:
    """Average gradients across processes (see the module docstring).

    Args:
        backend: ``'gloo'`` or ``'nccl'`` (default: NCCL when ndflow runs on the torch backend with CUDA, else gloo).
        init_method: ``torch.distributed``'s rendezvous URL (default ``'env://'``: torchrun's variables).
        rank: this process's rank (default: ``$RANK``, or 0).
        world_size: the number of processes (default: ``$WORLD_SIZE``, or 1: no process group, no torch).
        checkpoint_dir: where rank 0 writes a checkpoint after every ``checkpoint_every`` epochs and from which
            a restarted job resumes (a folder every process can see for the resume to reach all of them: rank 0
            reads it and sends it to the others).
        checkpoint_every: epochs between checkpoints.
        keep_checkpoints: how many checkpoint folders to keep.
        seed: the shuffling and dropout seed (default: drawn by rank 0, kept in the checkpoints).
        sync_batch_stats: average the non-trainable weights (BatchNorm's moving mean and variance) across the
            processes after each epoch.
        timeout_s: how long a collective call waits for the other processes.
    """

    def __init__(
        self,
        backend: str | None = None,
        *,
        init_method: str | None = None,
        rank: int | None = None,
        world_size: int | None = None,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        checkpoint_every: int = 1,
        keep_checkpoints: int = 2,
        seed: int | None = None,
        sync_batch_stats: bool = True,
        timeout_s: float = 1800.0,
    ) -> None:
        if backend is not None and backend not in ("gloo", "nccl", "mpi"):
            raise ValueError(f"DataParallel: backend must be 'gloo', 'nccl' or 'mpi', got {backend!r}")
        rank = _env_int("RANK") if rank is None else rank
        world_size = _env_int("WORLD_SIZE") if world_size is None else world_size
        world_size = 1 if world_size is None else world_size
        rank = 0 if rank is None else rank
        for name, value, low in (("world_size", world_size, 1), ("rank", rank, 0)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"DataParallel: {name} must be an integer >= {low}, got {value!r}")
        if rank >= world_size:
            raise ValueError(f"DataParallel: rank must be < world_size ({world_size}), got {rank}")
        for name, value in (("checkpoint_every", checkpoint_every), ("keep_checkpoints", keep_checkpoints)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"DataParallel: {name} must be a positive integer, got {value!r}")
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
            raise ValueError(f"DataParallel: seed must be a non-negative integer, got {seed!r}")
        self.backend = backend
        self.init_method = init_method
        self.rank = rank
        self.world_size = world_size
        self.checkpoint_dir = None if checkpoint_dir is None else os.fspath(checkpoint_dir)
        self.checkpoint_every = checkpoint_every
        self.keep_checkpoints = keep_checkpoints
        self.seed = seed
        self.sync_batch_stats = bool(sync_batch_stats)
        self.timeout_s = float(timeout_s)
        self.stats = {"steps": 0, "comm_s": 0.0, "reduce_s": 0.0, "bytes": 0}
        self._dist: Any = None
        self._owns_group = False
        self._model: Any = None
        self._resumed_from: str | None = None

    # -- the process group --------------------------------------------------------------------------------------
    @property
    def resumed_from(self) -> str | None:
        """The checkpoint folder the last ``setup`` resumed from (on rank 0), or None."""
        return self._resumed_from

    def _device(self) -> Any:
        return "cuda" if self._backend_name() == "nccl" else "cpu"

    def _backend_name(self) -> str:
        if self.backend is not None:
            return self.backend
        if ENGINE.get_backend() == "torch":
            torch = require("torch", "nf.distributed.DataParallel")
            if torch.cuda.is_available():
                return "nccl"
        return "gloo"

    def connect(self) -> Any:
        """Join (or adopt) the process group; None when this is the only process and no group exists."""
        if self._dist is not None:
            return self._dist
        if self.world_size == 1 and self.init_method is None:
            try:
                import torch.distributed as dist
            except ImportError:
                return None
            if not (dist.is_available() and dist.is_initialized()):
                return None
        dist = require("torch.distributed", "nf.distributed.DataParallel")
        if not dist.is_initialized():
            init = self.init_method or "env://"
            if init == "env://" and self.world_size > 1:
                missing = [v for v in ("MASTER_ADDR", "MASTER_PORT") if not os.environ.get(v)]
                if missing:
                    raise RuntimeError(
                        f"DataParallel: world_size is {self.world_size} but {', '.join(missing)} is not set; launch "
                        "with torchrun (python -m torch.distributed.run --nproc_per_node N script.py) or pass "
                        "init_method='tcp://HOST:PORT'"
                    )
            timeout = timedelta(seconds=self.timeout_s)
            attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
            if init == "env://" and attempt not in ("", "0"):
                # torchrun restarted the job: the store may still hold the last attempt's addresses, so this
                # attempt's group keeps its keys apart
                store, _, _ = next(dist.rendezvous(init, self.rank, self.world_size, timeout=timeout))
                store = dist.PrefixStore(f"ndflow-attempt-{attempt}", store)
                dist.init_process_group(
                    self._backend_name(), store=store, rank=self.rank, world_size=self.world_size, timeout=timeout
                )
            else:
                dist.init_process_group(
                    self._backend_name(), init_method=init, rank=self.rank, world_size=self.world_size,
                    timeout=timeout,
                )  # fmt: skip
            self._owns_group = True
        self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
        self._dist = dist
        return dist

    def close(self) -> None:
        """Leave the process group if ``connect`` made it."""
        if self._dist is not None and self._owns_group and self._dist.is_initialized():
            self._dist.destroy_process_group()
        self._dist = None
        self._owns_group = False

    def _all_reduce(self, buffer: np.ndarray, op: str = "sum") -> np.ndarray:
        dist = self._dist
        torch = require("torch", "nf.distributed.DataParallel")
        t = torch.from_numpy(np.ascontiguousarray(buffer))
        if self._device() == "cuda":
            t = t.cuda()
        start = time.perf_counter()
        dist.all_reduce(t, op=dist.ReduceOp.MAX if op == "max" else dist.ReduceOp.SUM)
        self.stats["comm_s"] += time.perf_counter() - start
        self.stats["bytes"] += buffer.nbytes
        return t.cpu().numpy()

    # -- the hooks fit calls ------------------------------------------------------------------------------------
    def setup(self, model: Any, initial_epoch: int = 0) -> int:
        """Join the processes, resume from the latest checkpoint, start every process from rank 0's weights,
        optimizer state and seed; returns the epoch to start at."""
        dist = self.connect()
        self._model = model
        header: dict[str, Any] = {"epoch": int(initial_epoch), "seed": self.seed}
        payload: Any = None
        if self.rank == 0:
            latest = latest_checkpoint(self.checkpoint_dir)
            if latest is not None:
                restore_checkpoint(model, latest["path"])
                self._resumed_from = latest["path"]
                header = {"epoch": max(int(initial_epoch), latest["epoch"]), "seed": latest["seed"]}
            if header["seed"] is None:
                header["seed"] = int(np.random.default_rng().integers(0, 2**31 - 1))
            if dist is not None and self.world_size > 1:
                payload = _model_state(model)
        if dist is not None and self.world_size > 1:
            box = [header, payload]
            dist.broadcast_object_list(box, src=0)
            header, payload = box
            if self.rank != 0:
                _load_model_state(model, payload)
        self.seed = int(header["seed"])
        _seed_dropout(self.seed, self.rank)
        return int(header["epoch"])

    def epoch_rng(self, epoch: int) -> np.random.Generator:
        """The generator that shuffles ``epoch``: the same on every process and in a restarted job."""
        return np.random.default_rng([self.seed or 0, int(epoch)])

    def local_indices(self, indices: np.ndarray) -> np.ndarray:
        """This process's contiguous part of a global batch's sample indices (may be empty for a tiny batch)."""
        if self.world_size == 1:
            return indices
        return np.array_split(indices, self.world_size)[self.rank]

    def shard(self, dataset: Any) -> Any:
        """This process's part of ``dataset``: every ``world_size``-th batch from the ``rank``-th."""
        if self.world_size == 1:
            return dataset
        if callable(getattr(dataset, "shard", None)):
            return dataset.shard(self.world_size, self.rank)
        if isinstance(dataset, list | tuple):
            return list(dataset[self.rank :: self.world_size])
        raise TypeError(
            "fit_dataset with distribution=: dataset must be an nf.data.Dataset (sharded with .shard) or a list of "
            f"batches, got {type(dataset).__name__}"
        )

    def agree_more(self, has_batch: bool) -> bool:
        """Whether any process still has a batch this step (every process asks, once per step)."""
        if self._dist is None or self.world_size == 1:
            return has_batch
        return bool(self._all_reduce(np.array([1.0 if has_batch else 0.0], np.float32), "max")[0] > 0)

    def reduce(self, value: Any, grads: Any, metrics: list[Any], n: int, variables: list[Any]) -> tuple[Any, Any, Any]:
        """The batch-size-weighted averages across the processes of the loss ``value``, the gradients by variable
        name and the ``metrics`` of a step on ``n`` samples (None everywhere when ``n`` is 0); the inputs are
        disposed and new tensors returned."""
        if self._dist is None or self.world_size == 1:
            if n == 0:
                raise ValueError("fit: a training step without samples (the batch is empty)")
            return value, grads, metrics
        from .. import ops

        start = time.perf_counter()
        sizes = [int(np.prod(v.shape)) for v in variables]
        parts: list[np.ndarray] = []
        flags = np.zeros(len(variables), np.float32)
        for k, (v, size) in enumerate(zip(variables, sizes, strict=True)):
            g = grads.get(v.name) if grads else None
            if g is None:
                parts.append(np.zeros(size, np.float32))
            else:
                flags[k] = 1.0
                parts.append(np.asarray(g.data_sync(), np.float32).reshape(-1) * np.float32(n))
        scalars = [value, *metrics]
        head = np.array([0.0 if s is None else float(s.data_sync()[0]) * n for s in scalars] + [float(n)], np.float32)
        buffer = np.concatenate([*parts, flags, head])
        for t in [value, *metrics, *(grads or {}).values()]:
            if t is not None and not t.is_disposed:
                t.dispose()
        total = self._all_reduce(buffer)
        count = max(float(total[-1]), 1.0)
        out: dict[str, Any] = {}
        offset = 0
        flag_sums = total[sum(sizes) : sum(sizes) + len(variables)]
        for k, (v, size) in enumerate(zip(variables, sizes, strict=True)):
            if flag_sums[k] > 0:
                out[v.name] = ops.tensor((total[offset : offset + size] / count).reshape(v.shape), list(v.shape))
            offset += size
        tail = total[offset + len(variables) : -1] / count
        loss = ops.scalar(float(tail[0]))
        new_metrics = [ops.scalar(float(m)) for m in tail[1:]]
        self.stats["steps"] += 1
        self.stats["reduce_s"] += time.perf_counter() - start
        return loss, out, new_metrics

    def callbacks(self) -> list[BaseCallback]:
        """What runs after each epoch: the BatchNorm statistics averaged, rank 0's checkpoint."""
        return [_EpochEnd(self)]

    # -- after an epoch -----------------------------------------------------------------------------------------
    def sync_non_trainable(self, model: Any) -> None:
        """Average the non-trainable float weights (BatchNorm's moving statistics) across the processes."""
        if self._dist is None or self.world_size == 1:
            return
        weights = list(model.weights)
        fixed = {id(w) for w in model.non_trainable_weights}
        chosen = [k for k, w in enumerate(weights) if id(w) in fixed and w.read().dtype == "float32"]
        if not chosen:
            return
        values = [np.asarray(weights[k].read().data_sync(), np.float32) for k in chosen]
        total = self._all_reduce(np.concatenate([v.reshape(-1) for v in values])) / self.world_size
        current = model.get_weights()
        try:
            arrays = [np.asarray(t.numpy()) for t in current]
        finally:
            for t in current:
                t.dispose()
        offset = 0
        for k, v in zip(chosen, values, strict=True):
            arrays[k] = total[offset : offset + v.size].reshape(arrays[k].shape)
            offset += v.size
        model.set_weights(arrays)

    def checkpoint(self, model: Any, epoch: int) -> str | None:
        """Rank 0 writes the checkpoint to resume at ``epoch``; its folder (None elsewhere or without a folder)."""
        if self.rank != 0 or self.checkpoint_dir is None:
            return None
        return save_checkpoint(model, self.checkpoint_dir, epoch, int(self.seed or 0), self.keep_checkpoints)


class _EpochEnd(BaseCallback):
    """DataParallel's work after an epoch."""

    def __init__(self, parallel: DataParallel) -> None:
        super().__init__()
        self.parallel = parallel

    def on_epoch_end(self, epoch: int, logs: Any = None) -> None:
        p = self.parallel
        model = p._model
        if model is None:
            return
        if p.sync_batch_stats:
            p.sync_non_trainable(model)
        if (epoch + 1) % p.checkpoint_every == 0:
            p.checkpoint(model, epoch + 1)


def _model_state(model: Any) -> dict[str, Any]:
    """Rank 0's weights and optimizer state as numpy arrays (sent once, at the start)."""
    weights = model.get_weights()
    try:
        arrays = [np.asarray(t.numpy()) for t in weights]
    finally:
        for t in weights:
            t.dispose()
    optimizer = getattr(model, "optimizer", None)
    opt: list[tuple[str, np.ndarray, str]] = []
    if optimizer is not None:
        named = optimizer.get_weights()
        try:
            opt = [(str(w["name"]), np.asarray(w["tensor"].numpy()), w["tensor"].dtype) for w in named]
        finally:
            for w in named:
                w["tensor"].dispose()
    return {"weights": arrays, "optimizer": opt}


def _load_model_state(model: Any, state: dict[str, Any]) -> None:
    from .. import ops

    model.set_weights(state["weights"])
    optimizer = getattr(model, "optimizer", None)
    if optimizer is not None and state["optimizer"]:
        named = [{"name": n, "tensor": ops.tensor(a, list(a.shape), d)} for n, a, d in state["optimizer"]]
        try:
            optimizer.set_weights(named)
        finally:
            for w in named:
                w["tensor"].dispose()


def _seed_dropout(seed: int, rank: int) -> None:
    """Unseeded random ops (dropout's masks) draw from a generator seeded by (seed, rank) on this process."""
    from ..ops import random_streams

    random_streams._ENTROPY = np.random.default_rng([int(seed), int(rank), 0x0D])


__all__ = ["DataParallel"]
