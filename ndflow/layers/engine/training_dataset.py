"""``fit_dataset`` / ``evaluate_dataset``: training on a dataset of batches (TF.js's ``fitDataset``).

A dataset is whatever gives batches ``(x, y)`` (or TF.js's ``{'xs': x, 'ys': y}``), with ``x`` / ``y``
tensors, arrays, lists (one per input / output) or dicts keyed by name:

- an ``nf.data.Dataset`` (a fresh ``iterator()`` per epoch, as TF.js; its ``size``, when known, gives the
  number of steps an epoch shows in the progress bar),
- a callable returning a fresh iterable for each epoch (TF.js's ``dataset.iterator()``),
- a re-iterable collection such as a list of batches (iterated again each epoch),
- a one-shot iterator or generator, sync or async: one epoch, or ``batches_per_epoch`` batches per epoch
  taken from it.

Batches from an ``nf.data`` dataset or a generator (sync or async) are freed after their step, as TF.js
disposes a dataset's batches; tensors from a collection (or an iterator over one) belong to the caller. Arrays
are converted and freed here. ``len(dataset)`` (when defined) gives the steps of a collection's epoch.
The plain ``fit_dataset`` drives an async source on a private event loop, so it cannot take one while an event
loop runs in the calling thread (the error says so); ``fit_dataset_async`` awaits its batches in the running loop
(``async for`` over the source, ``next_async`` of an ``nf.data`` iterator) and gives the loop a turn between
batches as ``yield_every`` says. Both run the one loop coroutine below at a ``Pace`` (``pacing.py``).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any

import numpy as np

from ... import ops
from ...core.awaitable import resolved
from ...core.coroutines import refuse_in_running_loop
from ...core.globals import keep, tidy
from ...core.tensor import Tensor
from ..utils import singleton_or_list
from .callbacks import History, configure_callbacks, dispose_tensors_in_logs, standardize_callbacks
from .pacing import SYNC, Pace, check_yield_every, run_sync
from .training_utils import (
    check_batch_size,
    dispose_made,
    standardize_input_data,
    standardize_sample_or_class_weights,
    standardize_weights,
)

logger = logging.getLogger("ndflow")
DEFAULT_VALIDATION_BATCH_SIZE = 32


class _AsyncSource:
    """A blocking iterator over an async iterator, driven on a private event loop (closed at the end)."""

    def __init__(self, source: Any, op: str) -> None:
        refuse_in_running_loop(
            f"{op}: the dataset is asynchronous and an event loop is running in this thread; use "
            f"'await model.{op}_async(...)' there (it awaits the batches), or run the training in another thread"
        )
        self._iterator = source.__aiter__()
        self._loop: asyncio.AbstractEventLoop | None = asyncio.new_event_loop()

    def __iter__(self) -> _AsyncSource:
        return self

    def __next__(self) -> Any:
        if self._loop is None:
            raise StopIteration
        try:
            return self._loop.run_until_complete(self._iterator.__anext__())
        except StopAsyncIteration:
            self.close()
            raise StopIteration from None

    def close(self) -> None:
        if self._loop is not None:
            closer = getattr(self._iterator, "aclose", None)
            if closer is not None:
                self._loop.run_until_complete(closer())
            self._loop.close()
            self._loop = None


def _is_dataset(dataset: Any) -> bool:
    """An ``nf.data``-style dataset: it makes iterators with ``iterator()`` and is not itself an iterator."""
    return callable(getattr(dataset, "iterator", None)) and not hasattr(dataset, "__next__")


def _epoch_iterator(dataset: Any, op: str, asynchronous: bool = False) -> tuple[Any, bool, bool]:
    """An iterator over one epoch's batches; whether its tensors are ours to free (a dataset or a generator made
    them); whether another epoch can get a fresh iterator (a dataset, a callable or a re-iterable collection).
    ``asynchronous``: an async source is returned as an async iterator (awaited by the pace), not wrapped."""
    if _is_dataset(dataset):
        return dataset.iterator(), True, True
    restartable = callable(dataset) and not hasattr(dataset, "__iter__")
    source = dataset() if restartable else dataset
    if _is_dataset(source):
        return source.iterator(), True, True
    if not hasattr(source, "__iter__") and hasattr(source, "__aiter__"):
        owned = inspect.isasyncgen(source) or restartable
        return (source.__aiter__() if asynchronous else _AsyncSource(source, op)), owned, restartable
    try:
        iterator = iter(source)
    except TypeError:
        raise TypeError(
            f"{op}: dataset must be an nf.data.Dataset, an iterable of (x, y) batches (sync or async), an "
            f"iterator, or a callable returning one; got {type(source).__name__}"
        ) from None
    return iterator, inspect.isgenerator(iterator), restartable or iterator is not source


def _steps_per_epoch(dataset: Any) -> int | None:
    """The number of batches an epoch of ``dataset`` gives, when it is known."""
    if _is_dataset(dataset):
        size = getattr(dataset, "size", None)
        return int(size) if isinstance(size, int) and not isinstance(size, bool) else None
    if not callable(dataset) and hasattr(dataset, "__len__"):
        try:
            return len(dataset)
        except TypeError:
            return None
    return None


def _split_batch(model: Any, item: Any, op: str) -> tuple[Any, Any]:
    if isinstance(item, dict):
        if "xs" not in item or "ys" not in item:
            raise ValueError(
                f"{op}: a dataset is expected to generate (x, y) pairs or dicts {{'xs': x, 'ys': y}}; got a dict "
                f"with keys {list(item)}"
            )
        return item["xs"], item["ys"]
    if isinstance(item, list | tuple) and len(item) == 2:
        return item[0], item[1]
    raise ValueError(f"{op}: a dataset is expected to generate (x, y) pairs or {{'xs', 'ys'}} dicts; got {item!r}")


def standardize_batch(model: Any, item: Any, op: str, made: list[Tensor]) -> tuple[list[Tensor], list[Tensor]]:
    """The input and target tensors of one dataset batch, checked against the model."""
    x, y = _split_batch(model, item, op)
    dtypes = [t.dtype or "float32" for t in model.inputs]
    xs = standardize_input_data(x, model.input_names, None, False, f"{op}: x", dtypes, made)
    ys = standardize_input_data(y, model.output_names, None, False, f"{op}: y", ["float32"] * len(model.outputs), made)
    size = xs[0].shape[0]
    for what, names, tensors in (("input", model.input_names, xs), ("output", model.output_names, ys)):
        for name, t in zip(names, tensors, strict=True):
            if t.shape[0] != size:
                raise ValueError(
                    f"{op}: batch size mismatch: {what} {name} has {t.shape[0]}; expected {size} based on input "
                    f"{model.input_names[0]}."
                )
    return xs, ys


def _free_batch(item: Any) -> None:
    """Free the tensors a one-shot iterator yielded."""
    if isinstance(item, Tensor):
        if not item.is_disposed:
            item.dispose()
    elif isinstance(item, dict):
        for value in item.values():
            _free_batch(value)
    elif isinstance(item, list | tuple):
        for value in item:
            _free_batch(value)


def fit_dataset(
    model: Any,
    dataset: Any,
    epochs: int = 1,
    batches_per_epoch: int | None = None,
    verbose: int = 1,
    callbacks: Any = None,
    validation_data: Any = None,
    validation_batch_size: int | None = None,
    validation_batches: int | None = None,
    class_weight: Any = None,
    initial_epoch: int = 0,
    yield_every: str | float | None = None,
    callback_model: Any = None,
    distribution: Any = None,
) -> History:
    """Train ``model`` on ``dataset`` for ``epochs`` epochs, blocking (see the module docstring)."""
    return run_sync(
        fit_dataset_loop(
            SYNC, model, dataset, epochs, batches_per_epoch, verbose, callbacks, validation_data,
            validation_batch_size, validation_batches, class_weight, initial_epoch, yield_every, callback_model,
            distribution,
        ),
        "fit_dataset",
    )  # fmt: skip


async def fit_dataset_loop(
    pace: Pace,
    model: Any,
    dataset: Any,
    epochs: int = 1,
    batches_per_epoch: int | None = None,
    verbose: int = 1,
    callbacks: Any = None,
    validation_data: Any = None,
    validation_batch_size: int | None = None,
    validation_batches: int | None = None,
    class_weight: Any = None,
    initial_epoch: int = 0,
    yield_every: str | float | None = None,
    callback_model: Any = None,
    distribution: Any = None,
) -> History:
    """``fit_dataset`` at ``pace``. With a ``distribution`` each process reads its shard of ``dataset``
    (``distribution.shard``) and every step waits until all processes agree that one of them still has a batch."""
    op = "fit_dataset"
    if model.optimizer is None:
        raise RuntimeError(f"{op}: you must compile a model before training/testing. Use model.compile(...).")
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs <= 0:
        raise ValueError(f"{op}: epochs is expected to be a positive integer, but got {epochs!r}")
    if batches_per_epoch is not None:
        check_batch_size(batches_per_epoch, "batches_per_epoch")
    check_yield_every(yield_every, op)
    if model.is_training:
        raise RuntimeError(f"{op}: cannot start training because another fit() call is ongoing.")
    model.is_training = True
    iterator: Any = None
    callback_list: Any = None
    try:
        do_validation = validation_data is not None
        val_is_dataset = do_validation and not _is_tensor_pair(model, validation_data)
        if do_validation and not val_is_dataset and len(validation_data) == 3:
            raise NotImplementedError(f"{op}: validation with sample weights is not implemented yet.")
        fit_callbacks = standardize_callbacks(callbacks, yield_every)
        if distribution is not None:  # join the processes, resume, start from rank 0's weights; read a shard
            initial_epoch = distribution.setup(model, initial_epoch)
            fit_callbacks += distribution.callbacks()
            dataset = distribution.shard(dataset)
        train_function = model.make_train_function(distribution)
        out_labels = model.get_deduped_metrics_names()
        callback_metrics = out_labels + [f"val_{n}" for n in out_labels] if do_validation else list(out_labels)
        steps = batches_per_epoch if batches_per_epoch is not None else _steps_per_epoch(dataset)
        callback_list, history = configure_callbacks(
            fit_callbacks, verbose, epochs, initial_epoch, None, steps, None, do_validation, callback_metrics,
        )  # fmt: skip
        target = callback_model or model
        callback_list.set_model(target)
        model.history = history
        target.history = history
        await pace.hooks(callback_list, "on_train_begin", None)
        model.stop_training_ = False
        iterator, owned, restartable = _epoch_iterator(dataset, op, pace.asynchronous)
        exhausted = False
        for epoch in range(initial_epoch, epochs):
            epoch_logs: dict[str, Any] = {}
            try:
                await pace.hooks(callback_list, "on_epoch_begin", None, epoch)
                if batches_per_epoch is None and epoch > initial_epoch:
                    if not restartable and exhausted:
                        raise ValueError(
                            f"{op}: the dataset (a one-shot iterator) ran out during epoch {epoch - 1}; pass a "
                            "callable returning a fresh iterable per epoch, a re-iterable collection, or "
                            "batches_per_epoch"
                        )
                    await pace.close(iterator)
                    iterator = None
                    iterator, owned, restartable = _epoch_iterator(dataset, op, pace.asynchronous)
                    exhausted = False
                steps_done = 0
                while batches_per_epoch is None or steps_done < batches_per_epoch:
                    item = None if distribution is not None and exhausted else await pace.next_item(iterator)
                    if distribution is not None and distribution.agree_more(item is not None):
                        if item is None:  # this shard ran out before another: a step without samples
                            exhausted = True
                            await _train_step(model, train_function, None, owned, class_weight, out_labels,
                                              steps_done, callback_list, op, pace)  # fmt: skip
                            steps_done += 1
                            continue
                    elif item is None:
                        exhausted = True
                        if batches_per_epoch is not None:
                            logger.warning(
                                "You provided batches_per_epoch as %s, but your dataset iterator ran out of data "
                                "after %s batches; interrupting training. Make sure that your dataset can generate "
                                "at least batches_per_epoch * epochs batches (in this case, %s batches).",
                                batches_per_epoch, steps_done, batches_per_epoch * epochs,
                            )  # fmt: skip
                            model.stop_training_ = True
                        break
                    await _train_step(model, train_function, item, owned, class_weight, out_labels, steps_done,
                                      callback_list, op, pace)  # fmt: skip
                    steps_done += 1
                    if model.stop_training_:
                        break
                    await pace.batch_end()
                finished = exhausted if batches_per_epoch is None else steps_done >= batches_per_epoch
                if do_validation and finished:
                    if val_is_dataset:
                        val_outs = await evaluate_dataset_loop(pace, model, validation_data, validation_batches, 0)
                    else:
                        val_outs = await model._evaluate(
                            pace, validation_data[0], validation_data[1],
                            validation_batch_size or DEFAULT_VALIDATION_BATCH_SIZE, 0, None,
                        )  # fmt: skip
                    val_list = val_outs if isinstance(val_outs, list) else [val_outs]
                    for name, value in zip(model.metrics_names, val_list, strict=False):
                        epoch_logs[f"val_{name}"] = value
                await pace.hooks(callback_list, "on_epoch_end", epoch_logs, epoch)
            finally:
                dispose_tensors_in_logs(epoch_logs)
            if model.stop_training_:
                break
            await pace.epoch_end()
        await pace.hooks(callback_list, "on_train_end", None)
        history.sync_data()
        return history
    finally:
        if iterator is not None:
            await pace.close(iterator)
        if callback_list is not None:
            callback_list.release()  # totals a callback holds when a step or callback raised
        model.is_training = False


def _is_tensor_pair(model: Any, data: Any) -> bool:
    """Whether validation data is ``(x, y)`` tensors / arrays rather than a dataset of batches."""
    if not isinstance(data, list | tuple) or len(data) not in (2, 3):
        return False
    first = data[0]
    if isinstance(first, Tensor | np.ndarray | dict):
        return True
    if isinstance(first, list | tuple) and len(model.inputs) > 1 and len(first) == len(model.inputs):
        return all(isinstance(v, Tensor | np.ndarray) for v in first)
    return False


async def _train_step(
    model: Any, train_function: Any, item: Any, owned: bool, class_weight: Any, out_labels: list[str],
    batch_index: int, callback_list: Any, op: str, pace: Pace,
) -> None:  # fmt: skip
    made: list[Tensor] = []
    batch_logs: dict[str, Any] = {}
    try:
        if item is None:  # a data-parallel process whose shard ran out: it contributes nothing to this step
            batch_logs.update(batch=batch_index, size=0)
            outs = tidy(lambda: train_function(None))
            batch_logs.update(zip(out_labels, outs, strict=True))
            await pace.hooks(callback_list, "on_batch_end", batch_logs, batch_index)
            return
        xs, ys = standardize_batch(model, item, op, made)
        batch_logs["batch"] = batch_index
        batch_logs["size"] = xs[0].shape[0]
        await pace.hooks(callback_list, "on_batch_begin", batch_logs, batch_index)
        weights: list[Tensor | None] = []
        for y, cw in zip(
            ys, standardize_sample_or_class_weights(class_weight, model.output_names, "class_weight"), strict=True
        ):  # noqa: E501
            w = standardize_weights(y, None, cw)
            if w is not None:
                made.append(w)
            weights.append(w)
        outs = tidy(lambda: train_function([*xs, *ys, *weights]))
        for label, out in zip(out_labels, outs, strict=True):
            batch_logs[label] = out
        dispose_made(made)
        made = []
        if owned:
            _free_batch(item)
        await pace.hooks(callback_list, "on_batch_end", batch_logs, batch_index)
    finally:
        dispose_made(made)
        dispose_tensors_in_logs(batch_logs)


def evaluate_dataset(model: Any, dataset: Any, batches: int | None = None, verbose: int = 0) -> Any:
    """The loss and metrics averaged (by batch size) over the batches of ``dataset`` (scalar tensors), blocking."""
    return run_sync(evaluate_dataset_loop(SYNC, model, dataset, batches, verbose), "evaluate_dataset")


async def evaluate_dataset_loop(pace: Pace, model: Any, dataset: Any, batches: int | None, verbose: int) -> Any:
    """``evaluate_dataset`` at ``pace``: one value per name of ``metrics_names`` (a list awaits to itself)."""
    op = "evaluate_dataset"
    if batches is not None:
        check_batch_size(batches, "batches")
    f = model.make_test_function()
    iterator, owned, _ = _epoch_iterator(dataset, op, pace.asynchronous)
    outs: list[Tensor] = []
    num_examples = 0
    count = 0
    try:
        while batches is None or count < batches:
            item = await pace.next_item(iterator)
            if item is None:
                if batches is not None:
                    logger.warning(
                        "Your dataset iterator ran out of data during evaluate_dataset(). Interrupting evaluation. "
                        "Make sure that your dataset can generate at least `batches` batches (in this case, %s).",
                        batches,
                    )
                break
            made: list[Tensor] = []
            try:
                xs, ys = standardize_batch(model, item, op, made)
                size = xs[0].shape[0]

                def accumulate(
                    xs: list[Tensor] = xs, ys: list[Tensor] = ys, size: int = size, outs: list[Tensor] = outs
                ) -> list[Tensor]:
                    batch_outs = f(xs + ys)
                    base = outs or [ops.scalar(0) for _ in batch_outs]
                    return [keep(ops.add(o, ops.mul(size, b))) for o, b in zip(base, batch_outs, strict=True)]

                new_outs = tidy(accumulate)
                for old in outs:
                    old.dispose()
                outs = new_outs
            finally:
                dispose_made(made)
                if owned:
                    _free_batch(item)
            num_examples += size
            count += 1
            await pace.batch_end()
        result = [ops.div(o, num_examples) for o in outs]
    finally:
        await pace.close(iterator)
        for o in outs:
            o.dispose()
    if verbose:
        print(
            "evaluate_dataset - "
            + ", ".join(
                f"{n}: {float(o.data_sync()[0]):.4f}" for n, o in zip(model.metrics_names, result, strict=False)
            )
        )  # noqa: E501
    return resolved(singleton_or_list(result))


__all__ = [
    "DEFAULT_VALIDATION_BATCH_SIZE", "evaluate_dataset", "evaluate_dataset_loop", "fit_dataset", "fit_dataset_loop",
    "standardize_batch",
]  # fmt: skip
