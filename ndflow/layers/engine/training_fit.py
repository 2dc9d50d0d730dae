"""``fit``'s coroutines for ``LayersModel`` (mixed into ``TrainingMixin``, training.py): the data and validation split
standardized, the callbacks configured, then the epochs and their batches at a ``Pace``, each batch gathered and
trained in its own scope. With a ``distribution`` (``nf.distributed.DataParallel``) the processes join before the
first epoch, shuffle alike and each trains its part of every global batch."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

import numpy as np

from ... import ops
from ...core.engine import ENGINE
from ...core.globals import keep
from ...core.tensor import Tensor
from .callbacks import History, configure_callbacks, dispose_tensors_in_logs, standardize_callbacks
from .pacing import Pace, check_yield_every
from .training_utils import check_batch_size, dispose_made, epoch_batches, split_at


class FitLoopMixin:
    """``_fit`` / ``_fit_loop`` / ``_train_batch``: what ``fit`` and ``fit_async`` run (training_api.py)."""

    # -- fit / evaluate: coroutines paced by a Pace (the public methods are in training_api.py) ---------------
    async def _fit(
        self,
        pace: Pace,
        x: Any,
        y: Any,
        batch_size: int | None,
        epochs: int,
        verbose: int,
        callbacks: Any,
        validation_split: float,
        validation_data: Sequence[Any] | None,
        shuffle: bool | str,
        class_weight: Any,
        sample_weight: Any,
        initial_epoch: int,
        steps_per_epoch: int | None,
        validation_steps: int | None,
        yield_every: str | float | None,
        callback_model: Any,
        distribution: Any = None,
    ) -> History:
        """``fit`` at ``pace`` (see ``training_api.TrainingApiMixin.fit``)."""
        if self.is_training:
            raise RuntimeError("fit: cannot start training because another fit() call is ongoing.")
        self.is_training = True
        made: list[Tensor] = []
        try:
            batch_size = 32 if batch_size is None else batch_size
            check_batch_size(batch_size)
            for name, value in (("epochs", epochs), ("initial_epoch", initial_epoch)):
                if isinstance(value, bool) or not isinstance(value, int | np.integer) or value < 0:
                    raise ValueError(f"fit: {name} must be a non-negative integer, got {value!r}")
            check_yield_every(yield_every, "fit")
            inputs, targets, weights = self._standardize_user_data(
                x, y, sample_weight, class_weight, False, batch_size, "fit", made
            )
            val_ins: list[Tensor] | None = None
            if validation_data is not None and len(validation_data) > 0:
                if len(validation_data) == 3:
                    raise NotImplementedError("fit: validation_data including sample weights is not supported yet.")
                if len(validation_data) != 2:
                    raise ValueError(
                        "fit: validation_data must contain 2 items (val_x, val_y) or 3 (val_x, val_y, "
                        f"val_sample_weight); got {len(validation_data)}"
                    )
                val_x, val_y = self._standardize_user_data_xy(
                    validation_data[0], validation_data[1], True, batch_size, "fit: validation_data", made
                )
                val_ins = val_x + val_y
            elif validation_split and 0 < validation_split < 1:
                n = inputs[0].shape[0]
                cut = split_at(n, validation_split)

                def part(ts: list[Tensor | None], start: int, end: int) -> list[Tensor | None]:
                    out = [
                        None
                        if t is None
                        else ops.slice(t, [start] + [0] * (t.rank - 1), [end - start] + [-1] * (t.rank - 1))
                        for t in ts
                    ]  # noqa: E501
                    made.extend(t for t in out if t is not None)
                    return out

                val_ins = part(inputs, cut, n) + part(targets, cut, n)
                inputs, targets, weights = part(inputs, 0, cut), part(targets, 0, cut), part(weights, 0, cut)
            elif validation_split:
                raise ValueError(f"fit: validation_split must be in [0, 1), got {validation_split!r}")
            if validation_steps is not None and steps_per_epoch is None:
                raise ValueError(
                    "fit: can only use validation_steps when doing step-wise training, i.e., steps_per_epoch "
                    "must be set."
                )
            ins = [*inputs, *targets, *weights]
            self.check_trainable_weights_consistency()
            fit_callbacks = standardize_callbacks(callbacks, yield_every)
            if distribution is not None:  # join the processes, resume, start from rank 0's weights
                initial_epoch = distribution.setup(self, initial_epoch)
                fit_callbacks += distribution.callbacks()
            train_function = self.make_train_function(distribution)
            out_labels = self.get_deduped_metrics_names()
            if val_ins is not None:
                val_function = self.make_test_function()
                callback_metrics = out_labels + [f"val_{n}" for n in out_labels]
            else:
                val_function = None
                callback_metrics = list(out_labels)
            return await self._fit_loop(
                pace, train_function, ins, out_labels, batch_size, epochs, verbose, fit_callbacks, val_function,
                val_ins, shuffle, callback_metrics, initial_epoch, steps_per_epoch, validation_steps,
                callback_model or self, distribution,
            )  # fmt: skip
        finally:
            self.is_training = False
            dispose_made(made)

    async def _fit_loop(
        self,
        pace: Pace,
        f: Callable[[list[Tensor | None]], list[Tensor]],
        ins: list[Tensor | None],
        out_labels: list[str],
        batch_size: int,
        epochs: int,
        verbose: int,
        callbacks: list[Any],
        val_f: Callable[[list[Tensor]], list[Tensor]] | None,
        val_ins: list[Tensor] | None,
        shuffle: bool | str,
        callback_metrics: list[str],
        initial_epoch: int,
        steps_per_epoch: int | None,
        validation_steps: int | None,
        callback_model: Any,
        distribution: Any = None,
    ) -> History:
        do_validation = val_f is not None and val_ins is not None
        num_samples = ins[0].shape[0]
        callback_list, history = configure_callbacks(
            callbacks, verbose, epochs, initial_epoch, None if steps_per_epoch else num_samples, steps_per_epoch,
            batch_size, do_validation, callback_metrics,
        )  # fmt: skip
        callback_list.set_model(callback_model)
        self.history = history
        callback_model.history = history
        rng = np.random.default_rng()
        pending: list[np.ndarray] = []  # steps_per_epoch mode: batches carry over between epochs
        try:
            await pace.hooks(callback_list, "on_train_begin", None)
            self.stop_training_ = False
            for epoch in range(initial_epoch, epochs):
                await pace.hooks(callback_list, "on_epoch_begin", None, epoch)
                epoch_logs: dict[str, Any] = {}
                if distribution is not None:  # the same order on every process, also after a restart
                    rng = distribution.epoch_rng(epoch)
                try:
                    if steps_per_epoch is not None:  # beyond TF.js: endless passes over the data
                        while len(pending) < steps_per_epoch and num_samples:
                            pending.extend(epoch_batches(num_samples, batch_size, shuffle, rng))
                        batches, pending = pending[:steps_per_epoch], pending[steps_per_epoch:]
                    else:
                        batches = epoch_batches(num_samples, batch_size, shuffle, rng)
                    for batch_index, indices in enumerate(batches):
                        batch_logs: dict[str, Any] = {}
                        await pace.hooks(callback_list, "on_batch_begin", batch_logs, batch_index)
                        if distribution is not None:  # this process's part of the global batch
                            indices = distribution.local_indices(indices)
                        try:
                            validate = do_validation and batch_index == len(batches) - 1
                            ENGINE.tidy(  # not the public tidy: it would inspect the partial's signature
                                None,
                                partial(
                                    self._train_batch, f, ins, indices, batch_index, out_labels, batch_logs,
                                    epoch_logs if validate else None, val_f, val_ins, batch_size, validation_steps,
                                ),
                                (), {},
                            )  # fmt: skip
                            await pace.hooks(callback_list, "on_batch_end", batch_logs, batch_index)
                        finally:
                            dispose_tensors_in_logs(batch_logs)
                        if self.stop_training_:
                            break
                        await pace.batch_end()
                    await pace.hooks(callback_list, "on_epoch_end", epoch_logs, epoch)
                finally:
                    dispose_tensors_in_logs(epoch_logs)
                if self.stop_training_:
                    break
                await pace.epoch_end()
            await pace.hooks(callback_list, "on_train_end", None)
            history.sync_data()
            return history
        finally:
            callback_list.release()  # totals a callback holds when a step or callback raised

    def _train_batch(
        self,
        f: Callable[[list[Tensor | None]], list[Tensor]],
        ins: list[Tensor | None],
        indices: np.ndarray,
        batch_index: int,
        out_labels: list[str],
        batch_logs: dict[str, Any],
        epoch_logs: dict[str, Any] | None,
        val_f: Any,
        val_ins: Any,
        batch_size: int,
        validation_steps: int | None,
    ) -> None:
        """One step on the samples ``indices`` (logs kept for the callbacks); then validation if ``epoch_logs``."""
        ids = ENGINE.make_tensor(indices.astype(np.int32), (len(indices),), "int32")
        batch_logs["batch"] = batch_index
        batch_logs["size"] = len(indices)
        outs = f([None if a is None else ops.gather(a, ids) for a in ins])
        for label, out in zip(out_labels, outs, strict=True):
            batch_logs[label] = keep(out)
        if epoch_logs is not None:
            val_outs = self.test_loop(val_f, val_ins, batch_size, validation_steps)
            for label, out in zip(out_labels, val_outs, strict=False):
                epoch_logs[f"val_{label}"] = keep(out)


__all__ = ["FitLoopMixin"]
