"""Training callbacks, as TF.js's ``tf.Callback`` / ``tf.CustomCallback`` / ``tf.History`` / ``tf.callbacks``.

``fit`` calls, in order, ``on_train_begin``, then per epoch ``on_epoch_begin``, per batch
``on_batch_begin`` / ``on_batch_end``, ``on_epoch_end``, and finally ``on_train_end``, on every
callback of the list ``[BaseLogger, <verbosity callbacks (the progress bar)>, *callbacks, History]``.
Batch logs hold ``batch``, ``size`` and the batch's loss and metrics; epoch logs hold the epoch's
averages (weighted by batch size) and the ``val_`` values.

Logs carry scalar tensors while only the internal callbacks look at them (TF.js does the same to
avoid a device read per batch); before a user callback runs, they are read into Python floats
(and the tensors freed). Callback methods may also be ``async def``: ``fit`` awaits them.
A dict of functions (``{'on_epoch_end': fn, ...}``; TF.js's camelCase keys are accepted too) is
wrapped in a ``CustomCallback``. Beyond TF.js: ``EarlyStopping(restore_best_weights=True)`` (Keras's
behaviour: the best epoch's weights are restored when training ends).
"""

from __future__ import annotations

import asyncio
import inspect
import logging
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import numpy as np

from ... import ops
from ...core.awaitable import Resolved, is_pending
from ...core.coroutines import drive_without_loop
from ...core.globals import keep, tidy
from ...core.tensor import Tensor
from ..naming import to_snake_case

logger = logging.getLogger("ndflow")
Logs = dict[str, Any]
DEFAULT_YIELD_EVERY_MS = 125


def resolve_scalars_in_logs(logs: Logs | None) -> None:
    """Replace every scalar tensor in ``logs`` by its value (a float) and free the tensor."""
    if not logs:
        return
    for key, value in list(logs.items()):
        if isinstance(value, Tensor):
            logs[key] = float(value.data_sync()[0])
            value.dispose()


def dispose_tensors_in_logs(logs: Logs | None) -> None:
    """Free the tensors left in ``logs``."""
    for value in (logs or {}).values():
        if isinstance(value, Tensor) and not value.is_disposed:
            value.dispose()


def run_blocking(result: Any) -> None:
    """Wait for ``result`` if a callback method was a coroutine function (the plain ``fit``: no loop may run)."""
    if not is_pending(result):
        return
    try:
        asyncio.get_running_loop()
    except RuntimeError:

        async def wait() -> None:
            await result

        asyncio.run(wait())
        return
    if inspect.iscoroutine(result):
        result.close()
    raise RuntimeError(
        "an async callback cannot be awaited by fit() while an event loop is running in this thread; "
        "use 'await model.fit_async(...)' there (it awaits async callbacks), or plain (def) callback methods"
    )


async def _wait_blocking(result: Any) -> None:
    run_blocking(result)


class BaseCallback:
    """Base of every callback: no-op hooks, ``params`` (set by ``fit``) and ``model``."""

    #: Internal callbacks take logs holding tensors; the others get floats.
    wants_tensors = False

    def __init__(self) -> None:
        self.validation_data: Any = None
        self.params: dict[str, Any] = {}
        self.model: Any = None

    def set_params(self, params: dict[str, Any]) -> None:
        """Receive ``fit``'s parameters (epochs, samples, steps, batch_size, metrics, ...)."""
        self.params = params

    def set_model(self, model: Any) -> None:
        """Receive the model being trained (ignored here; ``Callback`` keeps it)."""

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> Any:
        """Called at the start of each epoch."""

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> Any:
        """Called at the end of each epoch with its averaged loss and metrics (and ``val_`` ones)."""

    def on_batch_begin(self, batch: int, logs: Logs | None = None) -> Any:
        """Called before each batch."""

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> Any:
        """Called after each batch with ``batch``, ``size``, its loss and metrics."""

    def on_train_begin(self, logs: Logs | None = None) -> Any:
        """Called when training starts."""

    def on_train_end(self, logs: Logs | None = None) -> Any:
        """Called when training ends."""


class Callback(BaseCallback):
    """Base class of user callbacks: ``self.model`` is the model being trained."""

    def set_model(self, model: Any) -> None:
        """Keep the model (it must be a ``LayersModel``)."""
        from .models import LayersModel

        if not isinstance(model, LayersModel):
            raise TypeError(f"model must be a LayersModel, not {type(model).__name__}")
        self.model = model


class CallbackList:
    """Calls each hook on every callback, in order."""

    def __init__(self, callbacks: Sequence[BaseCallback] | None = None, queue_length: int = 10) -> None:
        self.callbacks: list[BaseCallback] = list(callbacks or [])
        self.queue_length = queue_length

    def append(self, callback: BaseCallback) -> None:
        """Add a callback at the end."""
        self.callbacks.append(callback)

    def set_params(self, params: dict[str, Any]) -> None:
        """Give every callback ``fit``'s parameters."""
        for callback in self.callbacks:
            callback.set_params(params)

    def set_model(self, model: Any) -> None:
        """Give every callback the model."""
        for callback in self.callbacks:
            callback.set_model(model)

    async def run_hook(
        self, hook: str, logs: Logs | None, args: tuple[Any, ...], wait: Callable[[Any], Awaitable[None]]
    ) -> None:
        """Call ``hook(*args, logs)`` on every callback in order, waiting for each result with ``wait`` (the
        training loop's pace: the plain ``fit`` runs async callbacks to their end, ``fit_async`` awaits them)."""
        logs = {} if logs is None else logs
        noop = getattr(BaseCallback, hook)
        for callback in self.callbacks:
            if getattr(type(callback), hook, None) is noop:  # the base class's no-op: nothing to call or wait for
                continue
            if not callback.wants_tensors:
                resolve_scalars_in_logs(logs)
            await wait(getattr(callback, hook)(*args, logs))

    def _call(self, hook: str, logs: Logs | None, *args: Any) -> None:
        drive_without_loop(self.run_hook(hook, logs, args, _wait_blocking), f"CallbackList.{hook}: suspended")

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Call ``on_epoch_begin`` on every callback."""
        self._call("on_epoch_begin", logs, epoch)

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Call ``on_epoch_end`` on every callback."""
        self._call("on_epoch_end", logs, epoch)

    def on_batch_begin(self, batch: int, logs: Logs | None = None) -> None:
        """Call ``on_batch_begin`` on every callback."""
        self._call("on_batch_begin", logs, batch)

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Call ``on_batch_end`` on every callback."""
        self._call("on_batch_end", logs, batch)

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Call ``on_train_begin`` on every callback."""
        self._call("on_train_begin", logs)

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Call ``on_train_end`` on every callback."""
        self._call("on_train_end", logs)

    def release(self) -> None:
        """Free what the callbacks still hold (after training ended or was interrupted by an exception)."""
        for callback in self.callbacks:
            release = getattr(callback, "release", None)
            if release is not None:
                release()


class BaseLogger(BaseCallback):
    """Averages each batch value over the epoch, weighted by batch size (float32, as TF.js)."""

    wants_tensors = True

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Reset the totals."""
        self.seen = 0
        self.totals: dict[str, Any] = {}

    def release(self) -> None:
        """Free the running totals of an epoch that did not end (a step or a callback raised)."""
        for total in getattr(self, "totals", {}).values():
            if isinstance(total, Tensor) and not total.is_disposed:
                total.dispose()
        self.totals = {}

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Add ``value * size`` of each log entry to its total."""
        logs = logs or {}
        size = logs.get("size") or 0
        self.seen += size
        for key, value in logs.items():
            if isinstance(value, Tensor):
                old = self.totals.get(key)
                base = 0 if old is None else old
                self.totals[key] = tidy(lambda base=base, value=value: ops.add(base, ops.mul(value, size)))
                if isinstance(old, Tensor):
                    old.dispose()
            else:
                self.totals[key] = self.totals.get(key, 0) + value * size

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Write the averages of the metrics of ``params['metrics']`` into the epoch logs."""
        if logs is None:
            return
        for key in self.params.get("metrics", []):
            total = self.totals.get(key)
            if total is None:
                continue
            if isinstance(total, Tensor):
                logs[key] = tidy(lambda total=total: keep(ops.mul(ops.div(1, self.seen), total)))
                total.dispose()
            else:
                logs[key] = total / self.seen
        for total in self.totals.values():
            if isinstance(total, Tensor) and not total.is_disposed:
                total.dispose()
        self.totals = {}


class History(BaseCallback, Resolved):
    """Records each epoch's logs: ``history.history['loss']`` (a list per key), ``epoch``, ``params``.

    What ``fit`` returns; ``await`` on it gives it back (TF.js's ``await model.fit(...)``, core/awaitable.py).
    """

    wants_tensors = True

    def __init__(self) -> None:
        super().__init__()
        self.epoch: list[int] = []
        self.history: dict[str, list[float]] = {}

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Start empty."""
        self.epoch = []
        self.history = {}

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Append the epoch's values (read as floats now, so no tensor outlives the epoch)."""
        logs = logs if logs is not None else {}
        resolve_scalars_in_logs(logs)
        self.epoch.append(epoch)
        for key, value in logs.items():
            self.history.setdefault(key, []).append(value)

    def sync_data(self) -> None:
        """Read any tensor left in the history (TF.js's ``syncData``; values are already floats here)."""
        for values in self.history.values():
            for i, value in enumerate(values):
                if isinstance(value, Tensor):
                    values[i] = float(value.data_sync()[0])
                    value.dispose()

    def __repr__(self) -> str:
        return f"History(epoch={self.epoch}, history={self.history})"


async def _in_order(awaitables: list[Any]) -> None:
    for awaitable in awaitables:
        await awaitable


_HOOKS = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end")


class CustomCallback(BaseCallback):
    """A callback from functions: ``CustomCallback({'on_epoch_end': lambda epoch, logs: ...})``.

    Keys: ``on_train_begin(logs)``, ``on_train_end(logs)``, ``on_epoch_begin(epoch, logs)``,
    ``on_epoch_end(epoch, logs)``, ``on_batch_begin(batch, logs)``, ``on_batch_end(batch, logs)``,
    ``on_yield(epoch, batch, logs)`` (called after a batch at most every ``yield_every`` ms; ``'auto'``
    is 125 ms), and ``now_func`` (a clock in ms, for tests). TF.js's camelCase keys are accepted.
    """

    def __init__(
        self, args: dict[str, Callable[..., Any]] | None = None, yield_every: str | float | None = None
    ) -> None:
        super().__init__()
        functions = {to_snake_case(k): v for k, v in (args or {}).items()}
        unknown = [k for k in functions if k not in (*_HOOKS, "on_yield", "now_func", "next_frame_func")]
        if unknown:
            raise TypeError(f"CustomCallback: unknown key(s) {unknown}; expected some of {[*_HOOKS, 'on_yield']}")
        for key, fn in functions.items():
            if not callable(fn):
                raise TypeError(f"CustomCallback: {key} must be a function, got {type(fn).__name__}")
        self.functions = functions
        self.current_epoch = 0
        self.now_func: Callable[[], float] = functions.get("now_func") or (lambda: time.perf_counter() * 1000)
        self.yield_every: str | float = "auto" if yield_every is None else yield_every
        if self.yield_every == "auto":
            self.yield_every = DEFAULT_YIELD_EVERY_MS
        if self.yield_every == "never" and "on_yield" in functions:
            raise ValueError(
                "yield_every is 'never' but you provided an on_yield callback. Either change yield_every or "
                "remove the callback"
            )
        self._last_yield = self.now_func()

    def _hook(self, name: str, *args: Any) -> Any:
        fn = self.functions.get(name)
        return fn(*args) if fn is not None else None

    def on_train_begin(self, logs: Logs | None = None) -> Any:
        """Call ``on_train_begin(logs)``."""
        return self._hook("on_train_begin", logs)

    def on_train_end(self, logs: Logs | None = None) -> Any:
        """Call ``on_train_end(logs)``."""
        return self._hook("on_train_end", logs)

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> Any:
        """Call ``on_epoch_begin(epoch, logs)``."""
        self.current_epoch = epoch
        return self._hook("on_epoch_begin", epoch, logs)

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> Any:
        """Call ``on_epoch_end(epoch, logs)``."""
        return self._hook("on_epoch_end", epoch, logs)

    def on_batch_begin(self, batch: int, logs: Logs | None = None) -> Any:
        """Call ``on_batch_begin(batch, logs)``."""
        return self._hook("on_batch_begin", batch, logs)

    def on_batch_end(self, batch: int, logs: Logs | None = None) -> Any:
        """Call ``on_batch_end(batch, logs)``, then ``on_yield`` if ``yield_every`` ms have passed; returns what
        is left to wait for (the training loop awaits it, or runs it to its end in the plain ``fit``)."""
        first = self._hook("on_batch_end", batch, logs)
        second = None
        if isinstance(self.yield_every, int | float) and "on_yield" in self.functions:
            now = self.now_func()
            if now - self._last_yield >= self.yield_every:
                self._last_yield = now
                second = self._hook("on_yield", self.current_epoch, batch, logs)
        pending = [r for r in (first, second) if is_pending(r)]
        if not pending:
            return None
        return pending[0] if len(pending) == 1 else _in_order(pending)


def _less(current: float, best: float) -> bool:
    return current < best


def _greater(current: float, best: float) -> bool:
    return current > best


class EarlyStopping(Callback):
    """Stop training when ``monitor`` (default ``'val_loss'``) has stopped improving for ``patience`` epochs.

    ``mode`` ``'min'`` / ``'max'`` / ``'auto'`` (max if the name contains ``acc``), ``min_delta`` (the
    smallest change that counts), ``baseline`` (the value to beat), ``verbose`` (print the epoch at
    which it stopped); ``restore_best_weights`` (beyond TF.js) puts back the best epoch's weights
    when training ends.
    """

    def __init__(
        self,
        monitor: str = "val_loss",
        min_delta: float = 0,
        patience: int = 0,
        verbose: int = 0,
        mode: str = "auto",
        baseline: float | None = None,
        restore_best_weights: bool = False,
    ) -> None:
        super().__init__()
        self.monitor = monitor or "val_loss"
        self.min_delta = abs(min_delta or 0)
        self.patience = patience or 0
        self.verbose = verbose or 0
        self.mode = mode or "auto"
        self.baseline = baseline
        self.restore_best_weights = bool(restore_best_weights)
        if self.mode not in ("auto", "min", "max"):
            logger.warning("EarlyStopping mode %r is invalid. Falling back to mode 'auto'.", self.mode)
            self.mode = "auto"
        if self.mode == "min":
            self.monitor_func = _less
        elif self.mode == "max":
            self.monitor_func = _greater
        else:
            self.monitor_func = _greater if "acc" in self.monitor else _less
        if self.monitor_func is _less:
            self.min_delta *= -1
        self.wait = 0
        self.stopped_epoch = 0
        self.best = math.inf
        self.best_epoch: int | None = None
        self.best_weights: list[np.ndarray] | None = None

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Reset the state."""
        self.wait = 0
        self.stopped_epoch = 0
        self.best_epoch = None
        self.best_weights = None
        if self.baseline is not None:
            self.best = self.baseline
        else:
            self.best = math.inf if self.monitor_func is _less else -math.inf

    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Compare the monitored value with the best so far; ask the model to stop when out of patience."""
        current = self.get_monitor_value(logs)
        if current is None:
            return
        if self.monitor_func(current - self.min_delta, self.best):
            self.best = current
            self.best_epoch = epoch
            self.wait = 0
            if self.restore_best_weights:
                self.best_weights = [np.array(w.read().data_sync()).reshape(w.shape) for w in self.model.weights]
        else:
            self.wait += 1
            if self.wait >= self.patience:
                self.stopped_epoch = epoch
                self.model.stop_training = True

    def on_train_end(self, logs: Logs | None = None) -> None:
        """Report the stop (if ``verbose``) and restore the best weights (if asked)."""
        if self.stopped_epoch > 0 and self.verbose:
            print(f"Epoch {self.stopped_epoch}: early stopping.")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose:
                print(f"Restoring model weights from the end of the best epoch ({self.best_epoch}).")
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs: Logs | None) -> float | None:
        """The monitored value in ``logs`` (with a warning if it is missing)."""
        value = (logs or {}).get(self.monitor)
        if value is None:
            logger.warning(
                "Metric for EarlyStopping %s is not available. Available metrics are: %s",
                self.monitor,
                ",".join(logs or {}),
            )
        return value


def early_stopping(
    monitor: str = "val_loss",
    min_delta: float = 0,
    patience: int = 0,
    verbose: int = 0,
    mode: str = "auto",
    baseline: float | None = None,
    restore_best_weights: bool = False,
) -> EarlyStopping:
    """An ``EarlyStopping`` callback (TF.js's ``tf.callbacks.earlyStopping``)."""
    return EarlyStopping(monitor, min_delta, patience, verbose, mode, baseline, restore_best_weights)


class CallbackConstructorRegistry:
    """Callbacks that ``fit`` adds by verbosity level (level 1: the progress bar)."""

    constructors: dict[int, list[Callable[[], BaseCallback]]] = {}

    @classmethod
    def register_callback_constructor(cls, verbosity_level: int, constructor: Callable[[], BaseCallback]) -> None:
        """Add ``constructor()`` to every ``fit`` whose ``verbose >= verbosity_level``."""
        if not isinstance(verbosity_level, int) or verbosity_level < 0:
            raise ValueError(f"Verbosity level is expected to be an integer >= 0, but got {verbosity_level!r}")
        for constructors in cls.constructors.values():
            if constructor in constructors:
                raise ValueError("Duplicate callback constructor.")
        cls.constructors.setdefault(verbosity_level, []).append(constructor)

    @classmethod
    def clear(cls) -> None:
        """Forget every registered constructor."""
        cls.constructors = {}

    @classmethod
    def create_callbacks(cls, verbosity_level: int) -> list[BaseCallback]:
        """New callbacks for a ``fit`` with this verbosity."""
        made: list[BaseCallback] = []
        for level in sorted(cls.constructors):
            if verbosity_level >= level:
                made.extend(ctor() for ctor in cls.constructors[level])
        return made


def register_callback_constructor(verbosity_level: int, constructor: Callable[[], BaseCallback]) -> None:
    """TF.js's ``tf.registerCallbackConstructor``."""
    CallbackConstructorRegistry.register_callback_constructor(verbosity_level, constructor)


def standardize_callbacks(callbacks: Any, yield_every: str | float | None = None) -> list[BaseCallback]:
    """A list of callbacks from one callback, a dict of functions, or a list of either."""
    if callbacks is None:
        return []
    items = list(callbacks) if isinstance(callbacks, list | tuple) else [callbacks]
    out: list[BaseCallback] = []
    for i, item in enumerate(items):
        if isinstance(item, BaseCallback):
            out.append(item)
        elif isinstance(item, dict):
            out.append(CustomCallback(item, yield_every))
        else:
            raise TypeError(
                f"callbacks[{i}] must be a Callback or a dict of functions (on_epoch_end, ...), "
                f"got {type(item).__name__}"
            )
    return out


def configure_callbacks(
    callbacks: Sequence[BaseCallback] | None,
    verbose: int,
    epochs: int,
    initial_epoch: int,
    num_train_samples: int | None,
    steps_per_epoch: int | None,
    batch_size: int | None,
    do_validation: bool,
    callback_metrics: list[str],
) -> tuple[CallbackList, History]:
    """The callback list of a ``fit`` (BaseLogger, verbosity callbacks, the user's, History) and its History."""
    history = History()
    actual: list[BaseCallback] = [BaseLogger(), *CallbackConstructorRegistry.create_callbacks(verbose)]
    actual.extend(callbacks or [])
    actual.append(history)
    callback_list = CallbackList(actual)
    params = {
        "epochs": epochs,
        "initial_epoch": initial_epoch,
        "samples": num_train_samples,
        "steps": steps_per_epoch,
        "batch_size": batch_size,
        "verbose": verbose,
        "do_validation": do_validation,
        "metrics": callback_metrics,
    }
    callback_list.set_params(params)
    history.params = params
    return callback_list, history


__all__ = [
    "BaseCallback", "BaseLogger", "Callback", "CallbackConstructorRegistry", "CallbackList", "CustomCallback",
    "EarlyStopping", "History", "configure_callbacks", "dispose_tensors_in_logs", "early_stopping",
    "register_callback_constructor", "resolve_scalars_in_logs", "run_blocking", "standardize_callbacks",
]  # fmt: skip
