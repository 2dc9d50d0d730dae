"""``nf.node.tensor_board``: tfjs-node's TensorBoard callback for ``fit``, ``fit_dataset`` and their ``_async``
forms (needs the ``tensorboard`` extra: ``pip install 'ndflow[tensorboard]'``).

What it writes, as tfjs-node: the training values go to ``<logdir>/train``, the validation ones (``val_*`` in the
logs) to ``<logdir>/val`` under the same name without ``val_``, so TensorBoard draws both runs on one chart.
At each epoch's end every loss and metric is written as ``epoch_<name>`` at step ``epoch + 1``; with
``update_freq='batch'`` each batch's values are written too, as ``batch_<name>`` at the step that counts the
batches this callback has seen (1, 2, ... across epochs and across ``fit`` calls). The writers flush when
training ends (and as :func:`~ndflow.node.summary_file_writer` flushes on its own: every 10 events or 2 minutes).

Writing never stops training: the first failing write is reported once on the ``ndflow`` logger and the
training goes on. A log directory that cannot be written is refused when the callback is made.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from ..layers.engine.callbacks import BaseCallback, Logs
from ..layers.engine.tfjs_args import tfjs_config
from .summary_writer import SummaryFileWriter, check_logdir, load_protos, make_log_dir, summary_file_writer

logger = logging.getLogger("ndflow")

#: Log entries that are bookkeeping, not values to plot.
SKIPPED_KEYS = frozenset({"batch", "size", "num_steps"})
VAL_PREFIX = "val_"


class TensorBoardCallback(BaseCallback):
    """Writes the losses and metrics of a training to TensorBoard event files (tfjs-node's
    ``TensorBoardCallback``); made by :func:`tensor_board`."""

    def __init__(self, logdir: str = "./logs", update_freq: str = "epoch") -> None:
        super().__init__()
        what = "tensor_board"
        load_protos(f"nf.node.{what}")
        logdir = check_logdir(logdir, what)
        if update_freq is None:
            update_freq = "epoch"
        if update_freq not in ("batch", "epoch"):
            raise ValueError(f"{what}: update_freq must be 'batch' or 'epoch', got {update_freq!r}")
        make_log_dir(logdir, what)
        self.logdir = logdir
        self.update_freq = update_freq
        self.batches_seen = 0
        self.train_writer: SummaryFileWriter | None = None
        self.val_writer: SummaryFileWriter | None = None
        self.failed = False

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Count the batch; with ``update_freq='batch'`` write its values as ``batch_<name>``."""
        self.batches_seen += 1
        if self.update_freq != "epoch":
            self._guarded(self._log_values, logs, "batch_", self.batches_seen)

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Write the epoch's values as ``epoch_<name>`` at step ``epoch + 1``."""
        self._guarded(self._log_values, logs, "epoch_", epoch + 1)

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Flush both writers."""
        for writer in (self.train_writer, self.val_writer):
            if writer is not None and not writer.closed:
                self._guarded(writer.flush)

    def _log_values(self, logs: Logs | None, prefix: str, step: int) -> None:
        for key, value in (logs or {}).items():
            if key in SKIPPED_KEYS or value is None:
                continue
            if key.startswith(VAL_PREFIX):
                self.val_writer = summary_file_writer(os.path.join(self.logdir, "val"))
                self.val_writer.scalar(prefix + key[len(VAL_PREFIX) :], value, step)
            else:
                self.train_writer = summary_file_writer(os.path.join(self.logdir, "train"))
                self.train_writer.scalar(prefix + key, value, step)

    def _guarded(self, fn: Any, *args: Any) -> None:
        try:
            fn(*args)
        except Exception as e:  # a write must never interrupt training
            if not self.failed:
                self.failed = True
                logger.warning(
                    "tensor_board: writing the TensorBoard logs to %r failed (%s: %s); training goes on, and "
                    "further write errors of this callback are not reported",
                    self.logdir,
                    type(e).__name__,
                    e,
                )

    def __repr__(self) -> str:
        return f"TensorBoardCallback(logdir={self.logdir!r}, update_freq={self.update_freq!r})"


@tfjs_config("update_freq", "tensor_board")
def tensor_board(
    logdir: str | os.PathLike[str] = "./logs", update_freq: str | Mapping[str, Any] = "epoch"
) -> TensorBoardCallback:
    """A callback that logs the losses and metrics of ``fit`` / ``fit_dataset`` to TensorBoard (tfjs-node's
    ``tf.node.tensorBoard``).

    Args:
        logdir: the directory of the logs (made if missing): ``<logdir>/train`` and ``<logdir>/val``.
        update_freq: ``'epoch'`` (default) writes each epoch's values; ``'batch'`` also each batch's. TF.js's
            ``{'updateFreq': 'batch'}`` is accepted in its place.

    Raises:
        OSError: ``logdir`` cannot be written.
        ImportError: tensorboardX is missing (``pip install 'ndflow[tensorboard]'``).

    Example::

        model.fit(xs, ys, epochs=10, validation_data=(val_xs, val_ys),
                  callbacks=nf.node.tensor_board('/tmp/fit_logs_1'))
        # then: tensorboard --logdir /tmp/fit_logs_1
    """
    return TensorBoardCallback(check_logdir(logdir, "tensor_board"), update_freq)  # type: ignore[arg-type]


__all__ = ["TensorBoardCallback", "tensor_board"]
