"""Training for ``LayersModel``: ``compile``, ``fit``, ``evaluate``, ``train_on_batch`` (TF.js's): the machinery.

The public methods with their signatures (``fit``, ``fit_async``, ``evaluate``, ...) are in ``training_api.py``;
they run the coroutines here (``_evaluate``, ``_test_loop``) and in ``training_fit.py`` (``_fit``) at a ``Pace``
(``pacing.py``): driven to the end without an event loop for the plain calls, awaited with turns for the event
loop for ``*_async``.

``compile(optimizer, loss, metrics)`` takes TF.js's string names (``'adam'``, ``'categoricalCrossentropy'``,
``'accuracy'``, ...) or objects; ``fit`` trains on tensors / arrays in batches and returns a ``History``
whose values are TF.js's for the same data, weights and (unshuffled) schedule. Every batch runs in one
``tidy``: only the optimizer's slot variables (made on the first step) outlive it, and the loss and
metric scalars live until the callbacks have seen them.

Beyond TF.js (each noted where it is done): ``sample_weight`` in ``fit`` / ``train_on_batch``,
``steps_per_epoch`` / ``validation_steps``, ``shuffle='batch'``, the ``'momentum'`` optimizer name,
and correct ``val_*`` / ``evaluate`` values for multi-output models (TF.js 4.22 reports running
sums shifted by one position there).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import numpy as np

from ... import ops
from ...core.awaitable import resolved
from ...core.engine import ENGINE
from ...core.globals import keep, tidy
from ...core.tensor import Tensor
from ...core.types import ModelData
from ...train import Optimizer
from .. import losses as losses_module
from ..utils import singleton_or_list
from . import (
    progress,  # noqa: F401  (registers the progress bar for verbose >= 1)
    training_config,
)
from .base import DisposeResult
from .callbacks import (
    History,
)
from .compiled_inference import compiled_outputs
from .compiled_training import compiled_gradients
from .compiling import CompileMixin
from .executor import FeedDict, execute
from .pacing import SYNC, Pace, run_sync
from .training_fit import FitLoopMixin
from .training_utils import (
    check_array_lengths,
    check_batch_size,
    check_loss_and_target_compatibility,
    compute_weighted_loss,
    dispose_made,
    make_batches,
    standardize_input_data,
    standardize_sample_or_class_weights,
    standardize_weights,
    weights_lock,
)

logger = logging.getLogger("ndflow")


class TrainingMixin(FitLoopMixin, CompileMixin):
    """The training half of ``LayersModel`` (mixed in before ``Container``); ``fit``'s loop is ``FitLoopMixin``'s."""

    def _init_training(self) -> None:
        self.optimizer_: Optimizer | None = None
        self.is_optimizer_owned = False
        self.loss: Any = None
        self.loss_functions: list[Any] = []
        self.metrics: Any = None
        self.metrics_names: list[str] = []
        self.metrics_tensors: list[tuple[Any, int]] = []
        self.feed_output_names: list[str] = []
        self.feed_output_shapes: list[Any] = []
        self.feed_loss_fns: list[Any] = []
        self.collected_trainable_weights: list[Any] | None = None
        self.history: History | None = None
        self.stop_training_ = False
        self.is_training = False

    # -- compile ----------------------------------------------------------------------------------
    @property
    def optimizer(self) -> Optimizer | None:
        """The optimizer set by ``compile``."""
        return self.optimizer_

    @optimizer.setter
    def optimizer(self, optimizer: Optimizer) -> None:
        if self.optimizer_ is not optimizer:
            self.optimizer_ = optimizer
            self.is_optimizer_owned = False

    @property
    def stop_training(self) -> bool:
        """Set to True (e.g. from a callback) to stop ``fit`` after the current batch."""
        return self.stop_training_

    @stop_training.setter
    def stop_training(self, stop: bool) -> None:
        self.stop_training_ = bool(stop)

    # -- data -------------------------------------------------------------------------------------
    def _standardize_user_data_xy(
        self, x: Any, y: Any, check_batch_axis: bool, batch_size: int | None, op: str, made: list[Tensor]
    ) -> tuple[list[Tensor], list[Tensor]]:
        if self.optimizer_ is None:
            raise RuntimeError(
                f"{op}: you must compile a model before training/testing. Use "
                "model.compile(optimizer=..., loss=..., metrics=...)."
            )
        output_shapes = [
            tuple(shape[:-1]) + (1,) if fn is losses_module.sparse_categorical_crossentropy else shape
            for shape, fn in zip(self.feed_output_shapes, self.feed_loss_fns, strict=True)
        ]
        input_dtypes = [t.dtype or "float32" for t in self.inputs]
        xs = standardize_input_data(
            x, self.feed_input_names, self.feed_input_shapes, False, f"{op}: x", input_dtypes, made
        )
        ys = standardize_input_data(
            y, self.feed_output_names, output_shapes, False, f"{op}: y", ["float32"] * len(output_shapes), made
        )
        check_array_lengths(xs, ys, op)
        check_loss_and_target_compatibility(ys, self.feed_loss_fns, self.feed_output_shapes, op)
        if self.stateful and batch_size:
            if xs[0].shape[0] % batch_size != 0:
                raise ValueError(
                    f"{op}: in a stateful network, you should only pass inputs with a number of samples that is "
                    f"divisible by the batch size {batch_size}. Found: {xs[0].shape[0]} sample(s)."
                )
        return xs, ys

    def _standardize_user_data(
        self,
        x: Any,
        y: Any,
        sample_weight: Any,
        class_weight: Any,
        check_batch_axis: bool,
        batch_size: int | None,
        op: str,
        made: list[Tensor],
    ) -> tuple[list[Tensor], list[Tensor], list[Tensor | None]]:
        xs, ys = self._standardize_user_data_xy(x, y, check_batch_axis, batch_size, op, made)
        class_weights = standardize_sample_or_class_weights(class_weight, self.output_names, "class_weight")
        sample_weights = standardize_sample_or_class_weights(sample_weight, self.output_names, "sample_weight")
        weights: list[Tensor | None] = []
        for y_i, cw, sw in zip(ys, class_weights, sample_weights, strict=True):
            w = standardize_weights(y_i, sw, cw)
            if w is not None:
                made.append(w)
            weights.append(w)
        return xs, ys, weights

    # -- the step functions -----------------------------------------------------------------------
    def make_train_function(self, distribution: Any = None) -> Callable[[list[Tensor | None] | None], list[Tensor]]:
        """A function of ``inputs + targets + sample weights`` that takes one optimizer step; returns the
        total loss (with regularization penalties) and the metric values (per-output losses first).

        With a ``distribution`` (``nf.distributed.DataParallel``) the gradients, the loss and the metrics are
        averaged across its processes (weighted by their batch sizes) before the optimizer applies them; ``None``
        or an empty batch stands for a process that has no sample in this step and contributes nothing."""
        n_in, n_out = len(self.inputs), len(self.outputs)

        def train(data: list[Tensor | None] | None) -> list[Tensor]:
            with weights_lock(self):  # predictions in other threads wait for the step (docs/threads.md)
                return step(data)

        def step(data: list[Tensor | None] | None) -> list[Tensor]:
            if distribution is not None and (data is None or data[0] is None or data[0].shape[0] == 0):
                variables = [w.read() for w in self.collected_trainable_weights or []]
                value, grads, metrics = distribution.reduce(None, None, [None] * len(self.metrics_tensors), 0,
                                                            variables)  # fmt: skip
                return [self.optimizer_.apply_computed(value, grads, True, variables), *metrics]
            assert data is not None
            inputs, targets = data[:n_in], data[n_in : n_in + n_out]
            sample_weights = list(data[n_in + n_out : n_in + 2 * n_out]) + [None] * n_out
            loss_values: list[Tensor] = []
            metrics_values: list[Tensor] = []

            def total_loss_function() -> Tensor:
                feeds = FeedDict(list(zip(self.inputs, inputs, strict=True)))
                outputs = execute(self.outputs, feeds, {"training": True})
                total = None
                for i, loss_fn in enumerate(self.loss_functions):
                    loss = loss_fn(targets[i], outputs[i])
                    if sample_weights[i] is not None:
                        loss = compute_weighted_loss(loss, sample_weights[i])
                    # Each output's mean loss is a metric only with several outputs; with one, the mean
                    # of the total below is the same value (TF.js computes it twice).
                    if n_out > 1:
                        loss_values.append(ops.mean(loss))
                    total = loss if i == 0 else ops.add(total, loss)
                for i, (metric, output_index) in enumerate(self.metrics_tensors):
                    if n_out > 1 and i < n_out:
                        value = loss_values[i]
                    else:
                        value = ops.mean(metric(targets[output_index], outputs[output_index]))
                    metrics_values.append(keep(value))
                total = ops.mean(total)
                for penalty in self.calculate_losses():
                    total = ops.add(total, penalty)
                return total

            variables = [w.read() for w in self.collected_trainable_weights or []]
            optimizer = self.optimizer_
            if type(optimizer).minimize is not Optimizer.minimize:  # a subclass's own minimize runs as it is
                if distribution is not None:
                    raise ValueError(
                        f"fit: distribution= averages gradients between their computation and their application, "
                        f"which the optimizer {type(optimizer).__name__}'s own minimize() does in one call"
                    )
                return [optimizer.minimize(total_loss_function, True, variables), *metrics_values]
            value, grads = compiled_gradients(
                self,
                lambda: optimizer._gradients(total_loss_function, variables, "minimize"),
                data,
                variables,
                metrics_values,
            )
            if distribution is not None:  # average across the processes (outside the recorded step)
                value, grads, metrics_values = distribution.reduce(
                    value, grads, metrics_values, inputs[0].shape[0], variables
                )
            return [optimizer.apply_computed(value, grads, True, variables), *metrics_values]

        return train

    def make_test_function(self) -> Callable[[list[Tensor]], list[Tensor]]:
        """A function of ``inputs + targets`` returning the total loss and each metric (inference mode)."""
        n_in, n_out = len(self.inputs), len(self.outputs)

        def test(data: list[Tensor]) -> list[Tensor]:
            def run() -> list[Tensor]:
                inputs, targets = data[:n_in], data[n_in : n_in + n_out]
                outputs = compiled_outputs(self, inputs)
                if outputs is None:
                    outputs = execute(self.outputs, FeedDict(list(zip(self.inputs, inputs, strict=True))))
                total = None
                for i, loss_fn in enumerate(self.loss_functions):
                    loss = ops.mean(loss_fn(targets[i], outputs[i]))
                    total = loss if i == 0 else ops.add(total, loss)
                # TF.js 4.22 appends the running total after each output (shifting every later value);
                # the total once, then one value per name of metrics_names, is what those names mean.
                values = [total]
                for metric, output_index in self.metrics_tensors:
                    values.append(ops.mean(metric(targets[output_index], outputs[output_index])))
                return values

            return tidy(run)

        self.test_function = test
        return test

    def test_loop(
        self, f: Callable[[list[Tensor]], list[Tensor]], ins: list[Tensor], batch_size: int, steps: int | None = None
    ) -> list[Tensor]:
        """The batch-size-weighted average of ``f`` over ``ins`` in batches (the first ``steps`` batches if set)."""
        return run_sync(self._test_loop(SYNC, f, ins, batch_size, steps), "test_loop")

    async def _test_loop(
        self,
        pace: Pace,
        f: Callable[[list[Tensor]], list[Tensor]],
        ins: list[Tensor],
        batch_size: int,
        steps: int | None = None,
    ) -> list[Tensor]:
        """``test_loop`` at ``pace``: each batch in its own ``tidy`` (none is open while the loop yields)."""
        batches = make_batches(ins[0].shape[0], batch_size)
        if steps is not None:
            batches = batches[:steps]
        outs: list[Tensor] = []
        seen = 0
        try:
            for start, end in batches:

                def step(start: int = start, end: int = end, outs: list[Tensor] = outs) -> list[Tensor]:
                    ids = ops.tensor1d(np.arange(start, end, dtype=np.int32), "int32")
                    batch_outs = f([ops.gather(a, ids) for a in ins])
                    base = outs or [ops.scalar(0) for _ in batch_outs]
                    return [ops.add(o, ops.mul(end - start, b)) for o, b in zip(base, batch_outs, strict=True)]

                totals = tidy(step)
                dispose_made(outs)
                outs = totals
                seen += end - start
                await pace.batch_end()
            return [ops.div(o, seen) for o in outs]
        finally:
            dispose_made(outs)

    def get_deduped_metrics_names(self) -> list[str]:
        """``metrics_names`` with repeated names suffixed ``_1``, ``_2``, ... (shared output layers)."""
        out = []
        for i, label in enumerate(self.metrics_names):
            if self.metrics_names.count(label) > 1:
                label = f"{label}_{self.metrics_names[:i].count(label)}"
            out.append(label)
        return out

    # -- evaluate (``fit``'s loop is in training_fit.py) ------------------------------------------------
    async def _evaluate(
        self, pace: Pace, x: Any, y: Any, batch_size: int | None, verbose: int, steps: int | None
    ) -> Any:
        """``evaluate`` at ``pace``: a scalar tensor, or a list of them (``ResolvedList``) in ``metrics_names``
        order."""
        batch_size = 32 if batch_size is None else batch_size
        check_batch_size(batch_size)
        made: list[Tensor] = []
        try:
            xs, ys = self._standardize_user_data_xy(x, y, True, batch_size, "evaluate", made)
            outs = await self._test_loop(pace, self.make_test_function(), xs + ys, batch_size, steps)
        finally:
            dispose_made(made)
        if verbose:
            values = ", ".join(
                f"{n}: {float(o.data_sync()[0]):.4f}" for n, o in zip(self.metrics_names, outs, strict=True)
            )
            print(f"evaluate - {values}")
        return resolved(singleton_or_list(outs))

    def train_on_batch(
        self, x: ModelData, y: ModelData, sample_weight: Any = None, class_weight: Any = None
    ) -> float | list[float]:
        """One optimizer step on one batch; the loss (and metrics) as Python floats."""
        made: list[Tensor] = []
        try:
            xs, ys, weights = self._standardize_user_data(
                x, y, sample_weight, class_weight, True, None, "train_on_batch", made
            )
            outs = self.make_train_function()([*xs, *ys, *weights])
        finally:
            dispose_made(made)
        values = [float(o.data_sync()[0]) for o in outs]
        for o in outs:
            o.dispose()
        return singleton_or_list(values)

    # -- configuration for saving -----------------------------------------------------------------
    def get_training_config(self) -> dict[str, Any]:
        """``{'loss', 'metrics', 'optimizer_config'}`` as TF.js writes it into ``model.json``."""
        return training_config.get_training_config(self)

    def load_training_config(self, config: dict[str, Any]) -> None:
        """``compile`` from a ``trainingConfig`` of ``model.json`` (snake_case names, as saved)."""
        training_config.load_training_config(self, config)

    # -- memory -----------------------------------------------------------------------------------
    def dispose(self) -> DisposeResult:
        """Drop one reference; at zero free the weights and the optimizer's state (if ``compile`` made it)."""
        result = super().dispose()  # type: ignore[misc]
        if result.ref_count_after_dispose == 0 and self.optimizer is not None and self.is_optimizer_owned:
            before = ENGINE.memory().num_tensors
            self.optimizer.dispose()
            result = DisposeResult(0, result.num_disposed_variables + before - ENGINE.memory().num_tensors)
        return result


__all__ = ["TrainingMixin"]
