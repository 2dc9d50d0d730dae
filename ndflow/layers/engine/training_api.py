"""The public training methods of ``LayersModel`` and ``Sequential``, plain and ``*_async`` (TF.js's API).

Every method follows ndflow's rule for TF.js's Promise-returning APIs (``ndflow/core/awaitable.py``): the plain
call (``fit``, ``fit_dataset``, ``evaluate``, ``evaluate_dataset``) runs to completion and returns its result,
which is also awaitable (``await`` gives it back at once), so ported ``const h = await model.fit(x, y, {...})``
becomes ``h = await model.fit(x, y, {...})`` and works in scripts and in notebooks. The ``*_async`` coroutines run
the same loop (``training.py``, ``training_dataset.py``) but give the event loop a turn between batches as
``yield_every`` says (``pacing.py``), await ``async def`` callbacks in the running loop, and read asynchronous
datasets with ``await``. TF.js's config dict is accepted in place of the keyword arguments
(``fit(x, y, {'batchSize': 8, 'epochs': 2})``), and a camelCase keyword gets its snake_case name in the error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ...core.types import ModelData, ModelOutput
from ...io import SaveResult
from ...train import Optimizer
from .callbacks import History
from .compiling import CompileMixin
from .pacing import SYNC, Pace, run_sync
from .tfjs_args import tfjs_config
from .training import TrainingMixin
from .training_dataset import evaluate_dataset_loop, fit_dataset_loop

__all__ = ["TrainingApiMixin"]


class TrainingApiMixin(TrainingMixin):
    """``compile``, ``fit`` / ``fit_async``, ``evaluate`` / ``evaluate_async``, ``fit_dataset`` /
    ``fit_dataset_async``, ``evaluate_dataset`` / ``evaluate_dataset_async`` (mixed into ``LayersModel``)."""

    def _training_target(self, op: str) -> tuple[Any, Any]:
        """The model that trains and the one callbacks see (a ``Sequential`` trains its internal model)."""
        return self, self

    @tfjs_config("optimizer")
    def compile(
        self,
        optimizer: str | Optimizer | Mapping[str, Any],
        loss: Any = None,
        metrics: Any = None,
    ) -> None:
        """Configure the model for training.

        Args:
            optimizer: an ``nf.train`` optimizer, or a name: ``'sgd'``, ``'momentum'``, ``'adagrad'``,
                ``'adadelta'``, ``'adam'``, ``'adamax'``, ``'rmsprop'`` (made with TF.js's default settings and
                owned by the model). A TF.js config dict ``{'optimizer': ..., 'loss': ..., 'metrics': ...}`` may be
                given here instead of the arguments.
            loss: a loss name (``'meanSquaredError'``, ``'categoricalCrossentropy'``, ...; camelCase or
                snake_case) or function ``(y_true, y_pred) -> tensor``; a list or a dict by output name gives one
                per output of a multi-output model. Required.
            metrics: None, a metric name or function (``'accuracy'``, ``'mae'``, ...), a list of them, or a dict
                by output name. They become ``metrics_names`` after ``'loss'``.

        Example::

            model.compile(optimizer='adam', loss='categoricalCrossentropy', metrics=['accuracy'])
            model.compile({'optimizer': 'sgd', 'loss': 'meanSquaredError'})  # TF.js's config object
        """
        CompileMixin.compile(self, optimizer, loss, metrics)  # type: ignore[arg-type]

    # -- fit ---------------------------------------------------------------------------------------------------
    @tfjs_config("batch_size")
    def fit(
        self,
        x: ModelData = None,
        y: ModelData = None,
        batch_size: int | Mapping[str, Any] | None = None,
        epochs: int = 1,
        verbose: int = 1,
        callbacks: Any = None,
        validation_split: float = 0.0,
        validation_data: Sequence[Any] | None = None,
        shuffle: bool | str = True,
        class_weight: Any = None,
        sample_weight: Any = None,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        yield_every: str | float | None = None,
        distribution: Any = None,
    ) -> History:
        """Train the model for ``epochs`` epochs on ``x`` / ``y`` in batches; returns the ``History``.

        The call blocks until training ends; the ``History`` it returns is awaitable too, so TF.js's
        ``await model.fit(...)`` ports unchanged. Use :meth:`fit_async` to keep an event loop running meanwhile.

        Args:
            x: the inputs: a tensor or array ``[samples, ...input shape]``, a list of them (one per model input)
                or a dict by input name.
            y: the targets, likewise (one per model output), ``[samples, ...output shape]``.
            batch_size: samples per gradient step (default 32). A TF.js config dict (``{'batchSize': 8,
                'epochs': 2, ...}``, camelCase or snake_case keys) may be given here instead of the arguments
                below.
            epochs: the epoch to stop at (training runs ``initial_epoch`` .. ``epochs - 1``).
            verbose: 0 silent, 1 a progress bar (one line per epoch when not on a terminal), 2 one line per epoch.
            callbacks: an ``nf.callbacks`` object, a dict of functions (``{'on_epoch_end': fn, ...}``, TF.js's
                camelCase keys too), or a list of either. Methods may be ``async def``.
            validation_split: the fraction (0..1) of the samples, taken from the end, to validate on after each
                epoch (``val_*`` entries of the history).
            validation_data: ``(val_x, val_y)`` to validate on after each epoch (overrides ``validation_split``).
            shuffle: shuffle the samples each epoch (True), keep their order (False), or ``'batch'`` (shuffle
                the order of the batches only; beyond TF.js).
            class_weight: ``{class index: weight}`` (or a list / dict of them per output) scaling each sample's
                loss by its class.
            sample_weight: ``[samples]`` weights of each sample's loss (beyond TF.js).
            initial_epoch: the epoch to start at (to resume a training).
            steps_per_epoch: batches per epoch, continuing through the data across epochs (beyond TF.js).
            validation_steps: validation batches per epoch (with ``steps_per_epoch``).
            yield_every: how often :meth:`fit_async` gives the event loop a turn: ``'auto'`` (default: every
                125 ms), ``'batch'``, ``'epoch'``, ``'never'`` or milliseconds; also ``on_yield``'s period.
            distribution: ``nf.distributed.DataParallel(...)`` to train data-parallel across processes (beyond
                TF.js): each process takes its part of every global batch of ``batch_size`` samples (the same
                shuffled order everywhere), the gradients are averaged between them, and rank 0 writes the
                checkpoints (docs/scale-out.md). None (default): this process alone.

        Returns:
            A ``History``: ``history.history['loss']`` (one float per epoch), ``['val_loss']``, metrics, ...

        Example::

            model.compile(optimizer='sgd', loss='meanSquaredError')
            h = model.fit(xs, ys, batch_size=8, epochs=10)        # or: await model.fit(xs, ys, {'epochs': 10})
            print(h.history['loss'][-1])
        """
        model, target = self._training_target("fit")
        return run_sync(
            model._fit(
                SYNC, x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data, shuffle,
                class_weight, sample_weight, initial_epoch, steps_per_epoch, validation_steps, yield_every, target,
                distribution,
            ),
            "fit",
        )  # fmt: skip

    @tfjs_config("batch_size")
    async def fit_async(
        self,
        x: ModelData = None,
        y: ModelData = None,
        batch_size: int | Mapping[str, Any] | None = None,
        epochs: int = 1,
        verbose: int = 1,
        callbacks: Any = None,
        validation_split: float = 0.0,
        validation_data: Sequence[Any] | None = None,
        shuffle: bool | str = True,
        class_weight: Any = None,
        sample_weight: Any = None,
        initial_epoch: int = 0,
        steps_per_epoch: int | None = None,
        validation_steps: int | None = None,
        yield_every: str | float | None = None,
        distribution: Any = None,
    ) -> History:
        """:meth:`fit` as a coroutine that gives the event loop a turn between batches (TF.js's ``yieldEvery``):
        other tasks (a UI, a server, a data source) keep running during training, and ``async def`` callbacks
        are awaited in the loop. Same arguments and result as :meth:`fit`.

        Example::

            history = await model.fit_async(xs, ys, epochs=10, yield_every='batch')
        """
        model, target = self._training_target("fit_async")
        return await model._fit(
            Pace(yield_every), x, y, batch_size, epochs, verbose, callbacks, validation_split, validation_data,
            shuffle, class_weight, sample_weight, initial_epoch, steps_per_epoch, validation_steps, yield_every,
            target, distribution,
        )  # fmt: skip

    # -- evaluate ----------------------------------------------------------------------------------------------
    @tfjs_config("batch_size")
    def evaluate(
        self,
        x: ModelData,
        y: ModelData,
        batch_size: int | Mapping[str, Any] | None = None,
        verbose: int = 0,
        steps: int | None = None,
    ) -> ModelOutput:
        """The loss and metrics of the model on ``x`` / ``y``, computed in batches (inference mode).

        Args:
            x: the inputs, as for :meth:`fit`.
            y: the targets, as for :meth:`fit`.
            batch_size: samples per batch (default 32), or a TF.js config dict (``{'batchSize': 4}``).
            verbose: 1 prints the values.
            steps: evaluate only the first ``steps`` batches.

        Returns:
            A scalar tensor (the loss) when the model has no metrics, else a list of scalar tensors in
            ``metrics_names`` order; the caller disposes them. Both are awaitable (``await`` gives them back).

        Example::

            loss, acc = model.evaluate(xs, ys, batch_size=16)
            print(loss.data_sync()[0], acc.data_sync()[0])
        """
        model, _ = self._training_target("evaluate")
        return run_sync(model._evaluate(SYNC, x, y, batch_size, verbose, steps), "evaluate")

    @tfjs_config("batch_size")
    async def evaluate_async(
        self,
        x: ModelData,
        y: ModelData,
        batch_size: int | Mapping[str, Any] | None = None,
        verbose: int = 0,
        steps: int | None = None,
        yield_every: str | float | None = None,
    ) -> ModelOutput:
        """:meth:`evaluate` as a coroutine that gives the event loop a turn between batches (``yield_every`` as
        in :meth:`fit`). Same arguments and result as :meth:`evaluate`."""
        model, _ = self._training_target("evaluate_async")
        return await model._evaluate(Pace(yield_every, what="evaluate_async"), x, y, batch_size, verbose, steps)

    # -- datasets ----------------------------------------------------------------------------------------------
    @tfjs_config("epochs")
    def fit_dataset(
        self,
        dataset: Any,
        epochs: int | Mapping[str, Any] = 1,
        batches_per_epoch: int | None = None,
        verbose: int = 1,
        callbacks: Any = None,
        validation_data: Any = None,
        validation_batch_size: int | None = None,
        validation_batches: int | None = None,
        class_weight: Any = None,
        initial_epoch: int = 0,
        yield_every: str | float | None = None,
        distribution: Any = None,
    ) -> History:
        """Train on a dataset of batches (TF.js's ``fitDataset``); returns the (awaitable) ``History``.

        Args:
            dataset: an ``nf.data.Dataset`` of ``(x, y)`` batches (or ``{'xs': x, 'ys': y}``), a callable
                returning a fresh iterable per epoch, a list of batches, or a one-shot (async) iterator.
            epochs: the number of epochs, or a TF.js config dict (``{'epochs': 2, 'batchesPerEpoch': 10}``).
            batches_per_epoch: batches per epoch (default: until the dataset's iterator ends).
            verbose: as in :meth:`fit`.
            callbacks: as in :meth:`fit`.
            validation_data: ``(val_x, val_y)`` tensors or a dataset of batches, evaluated after each epoch.
            validation_batch_size: batch size for tensor validation data (default 32).
            validation_batches: batches of a validation dataset to use (default: all).
            class_weight: as in :meth:`fit`.
            initial_epoch: the epoch to start at.
            yield_every: as in :meth:`fit` (used by :meth:`fit_dataset_async`).
            distribution: ``nf.distributed.DataParallel(...)``: each process trains on its shard of ``dataset``
                (every ``world_size``-th batch) with the gradients averaged between them (docs/scale-out.md).

        Example::

            ds = nf.data.zip({'xs': nf.data.array(xs), 'ys': nf.data.array(ys)}).batch(8)
            h = model.fit_dataset(ds, epochs=3)                 # or: await model.fit_dataset(ds, {'epochs': 3})
        """
        model, target = self._training_target("fit_dataset")
        return run_sync(
            fit_dataset_loop(
                SYNC, model, dataset, epochs, batches_per_epoch, verbose, callbacks, validation_data,
                validation_batch_size, validation_batches, class_weight, initial_epoch, yield_every, target,
                distribution,
            ),
            "fit_dataset",
        )  # fmt: skip

    @tfjs_config("epochs")
    async def fit_dataset_async(
        self,
        dataset: Any,
        epochs: int | Mapping[str, Any] = 1,
        batches_per_epoch: int | None = None,
        verbose: int = 1,
        callbacks: Any = None,
        validation_data: Any = None,
        validation_batch_size: int | None = None,
        validation_batches: int | None = None,
        class_weight: Any = None,
        initial_epoch: int = 0,
        yield_every: str | float | None = None,
        distribution: Any = None,
    ) -> History:
        """:meth:`fit_dataset` as a coroutine: batches of asynchronous sources (async generators, ``nf.data``
        datasets with async stages, webcams, microphones) are awaited in the running loop, and the loop gets a
        turn between batches as ``yield_every`` says. Same arguments and result as :meth:`fit_dataset`.

        Example::

            history = await model.fit_dataset_async(ds, epochs=3)
        """
        model, target = self._training_target("fit_dataset_async")
        return await fit_dataset_loop(
            Pace(yield_every, what="fit_dataset_async"), model, dataset, epochs, batches_per_epoch, verbose,
            callbacks, validation_data, validation_batch_size, validation_batches, class_weight, initial_epoch,
            yield_every, target, distribution,
        )  # fmt: skip

    @tfjs_config("batches")
    def evaluate_dataset(
        self, dataset: Any, batches: int | Mapping[str, Any] | None = None, verbose: int = 0
    ) -> ModelOutput:
        """The loss and metrics averaged (by batch size) over the batches of ``dataset`` (TF.js's
        ``evaluateDataset``): a scalar tensor, or a list in ``metrics_names`` order, awaitable either way.

        Args:
            dataset: as for :meth:`fit_dataset`.
            batches: how many batches to evaluate (default: all), or a TF.js config dict (``{'batches': 4}``).
            verbose: 1 prints the values.

        Example::

            loss = await model.evaluate_dataset(ds, {'batches': 4})
        """
        model, _ = self._training_target("evaluate_dataset")
        return run_sync(evaluate_dataset_loop(SYNC, model, dataset, batches, verbose), "evaluate_dataset")

    @tfjs_config("batches")
    async def evaluate_dataset_async(
        self,
        dataset: Any,
        batches: int | Mapping[str, Any] | None = None,
        verbose: int = 0,
        yield_every: str | float | None = None,
    ) -> ModelOutput:
        """:meth:`evaluate_dataset` as a coroutine (asynchronous sources awaited, turns for the event loop between
        batches). Same arguments and result as :meth:`evaluate_dataset`."""
        model, _ = self._training_target("evaluate_dataset_async")
        return await evaluate_dataset_loop(
            Pace(yield_every, what="evaluate_dataset_async"), model, dataset, batches, verbose
        )

    # -- saving ------------------------------------------------------------------------------------------------
    @tfjs_config("include_optimizer", "save")
    def save(
        self,
        handler_or_url: Any,
        include_optimizer: bool | Mapping[str, Any] = False,
        quantization_dtype: Any = None,
        trainable_only: bool = False,
    ) -> SaveResult:
        """Save the model in TF.js's format (TF.js ``model.save``); returns the (awaitable) ``SaveResult``.

        Args:
            handler_or_url: a directory path or ``'file://dir'`` (writes ``model.json`` and ``group1-shard*of*``
                weight files), ``'http(s)://...'`` (a multipart POST), a URL a registered router
                claims, or a save handler (anything with ``save(artifacts)``; ``nf.io.with_save_handler(fn)``).
            include_optimizer: also write ``trainingConfig`` and the optimizer's state of a compiled model (loaded
                back by ``load_layers_model``). A TF.js config dict (``{'includeOptimizer': True, 'trainableOnly':
                False}``) may be given here instead of the keyword arguments.
            quantization_dtype: ``'uint8'``, ``'uint16'``, ``'float16'`` or ``{dtype: [weight name patterns]}``: store
                the float32 model weights quantized as ``tensorflowjs_converter`` does (beyond TF.js; optimizer
                weights stay exact).
            trainable_only: save only the trainable weights.

        Returns:
            The handler's ``SaveResult`` (``model_artifacts_info`` with the byte counts); ``await`` gives it back.

        Example::

            result = model.save('file://./my-model')          # or: await model.save('file://./my-model')
            model2 = nf.load_layers_model('file://./my-model/model.json')
        """
        from .saving import _save  # saving.py builds on the models

        model: Any = self
        return _save(model, handler_or_url, bool(include_optimizer), quantization_dtype, trainable_only)
