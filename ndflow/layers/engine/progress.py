"""The progress bar of ``fit(verbose=1)`` (tfjs-node's ``ProgbarLogger``, drawn like Keras's).

On a terminal each epoch shows ``Epoch 3/10`` and a bar redrawn in place,
``12/40 [=======>......................] - ETA: 2s - loss: 0.4012 - acc: 0.8750`` (running epoch
averages), finished by the epoch's time and final values (``val_`` ones included). When the stream
is not a terminal (a log file, CI), or with ``verbose=2``, it prints one plain line per epoch. If
``tqdm`` is installed it draws the terminal bar. Registered for verbosity 1, so every ``fit`` /
``fit_dataset`` with ``verbose >= 1`` gets one.
"""

from __future__ import annotations

import math
import sys
import time
from typing import IO, Any

from .callbacks import BaseCallback, CallbackConstructorRegistry, Logs

try:  # optional: a nicer terminal bar
    from tqdm import tqdm as _tqdm
except ImportError:  # pragma: no cover - depends on the environment
    _tqdm = None

_HIDDEN = ("batch", "size")
_WIDTH = 30
_RENDER_EVERY_S = 0.05


def format_value(value: float) -> str:
    """A log value as Keras prints it (4 decimals, or scientific notation when tiny)."""
    value = float(value)
    return f"{value:.4f}" if value == 0 or abs(value) >= 1e-3 or not math.isfinite(value) else f"{value:.4e}"


def format_logs(logs: dict[str, Any]) -> str:
    """``loss: 0.1234 - acc: 0.5000`` for the numeric entries of ``logs``."""
    return " - ".join(f"{k}: {format_value(v)}" for k, v in logs.items() if k not in _HIDDEN)


def format_duration(seconds: float) -> str:
    """``1:02:03``, ``2:05`` or ``12s`` (Keras's ETA format)."""
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}:{(seconds % 3600) // 60:02d}:{seconds % 60:02d}"
    if seconds >= 60:
        return f"{seconds // 60}:{seconds % 60:02d}"
    return f"{seconds}s"


class ProgbarLogger(BaseCallback):
    """Prints training progress: a bar per epoch on a terminal, one line per epoch otherwise."""

    def __init__(self, stream: IO[str] | None = None, is_tty: bool | None = None, use_tqdm: bool | None = None):
        super().__init__()
        self.stream = stream
        self.is_tty = is_tty
        self.use_tqdm = use_tqdm
        self.steps: int | None = None

    # -- setup ------------------------------------------------------------------------------------
    def _out(self) -> IO[str]:
        return self.stream if self.stream is not None else sys.stdout

    def _interactive(self) -> bool:
        if self.params.get("verbose", 1) >= 2:
            return False
        if self.is_tty is not None:
            return self.is_tty
        isatty = getattr(self._out(), "isatty", None)
        return bool(isatty and isatty())

    def on_train_begin(self, logs: Logs | None = None) -> None:
        """Work out the number of batches per epoch."""
        samples, batch_size, steps = (self.params.get(k) for k in ("samples", "batch_size", "steps"))
        if steps is not None:
            self.steps = int(steps)
        elif samples is not None and batch_size:
            self.steps = math.ceil(samples / batch_size)
        else:
            self.steps = None
        self.interactive = self._interactive()
        self.tqdm = self.interactive and _tqdm is not None and self.use_tqdm is not False

    def on_epoch_begin(self, epoch: int, logs: Logs | None = None) -> None:
        """Start the epoch's bar."""
        self.epoch = epoch
        self.seen = 0
        self.done = 0
        self.totals: dict[str, float] = {}
        self.start = time.perf_counter()
        self.last_render = 0.0
        self.last_width = 0
        self.title = f"Epoch {epoch + 1}/{self.params.get('epochs')}"
        self.bar = None
        if self.tqdm:
            self.bar = _tqdm(total=self.steps, desc=self.title, unit="step", file=self._out(), leave=True)
        elif self.interactive:
            self._write(self.title + "\n")

    # -- per batch --------------------------------------------------------------------------------
    def on_batch_end(self, batch: int, logs: Logs | None = None) -> None:
        """Accumulate the running averages and redraw (throttled)."""
        logs = logs or {}
        size = logs.get("size") or 0
        self.seen += size
        self.done += 1
        for key, value in logs.items():
            if key not in _HIDDEN and isinstance(value, int | float):
                self.totals[key] = self.totals.get(key, 0.0) + value * size
        if not self.interactive:
            return
        now = time.perf_counter()
        last = self.steps is not None and self.done >= self.steps
        if not last and now - self.last_render < _RENDER_EVERY_S:
            return
        self.last_render = now
        averages = {k: v / max(self.seen, 1) for k, v in self.totals.items()}
        if self.bar is not None:
            self.bar.n = self.done
            self.bar.set_postfix_str(format_logs(averages), refresh=True)
        else:
            self._redraw(self._bar_line(now) + (" - " + format_logs(averages) if averages else ""))

    def _bar_line(self, now: float) -> str:
        elapsed = now - self.start
        if self.steps is None:
            return f"{self.done} steps - {format_duration(elapsed)}"
        width = len(str(self.steps))
        filled = int(_WIDTH * min(self.done, self.steps) / self.steps)
        bar = "=" * filled + (">" if filled < _WIDTH else "") + "." * max(0, _WIDTH - filled - 1)
        eta = elapsed / self.done * (self.steps - self.done) if self.done else 0.0
        return f"{self.done:>{width}}/{self.steps} [{bar}] - ETA: {format_duration(eta)}"

    def _redraw(self, line: str) -> None:
        pad = " " * max(0, self.last_width - len(line))
        self.last_width = len(line)
        self._write("\r" + line + pad)

    def _write(self, text: str) -> None:
        out = self._out()
        out.write(text)
        out.flush()

    # -- end of epoch -----------------------------------------------------------------------------
    def on_epoch_end(self, epoch: int, logs: Logs | None = None) -> None:
        """Print the epoch's time and final loss / metrics."""
        elapsed = time.perf_counter() - self.start
        per_step = elapsed / self.done if self.done else 0.0
        timing = f"{elapsed:.1f}s {per_step * 1000:.0f}ms/step"
        values = format_logs(dict(sorted((logs or {}).items(), key=lambda kv: kv[0].startswith("val_"))))
        steps = f"{self.done}/{self.steps}" if self.steps is not None else f"{self.done} steps"
        if self.bar is not None:
            self.bar.n = self.done
            self.bar.set_postfix_str(values, refresh=True)
            self.bar.close()
        elif self.interactive:
            self._redraw(f"{steps} - {timing}" + (f" - {values}" if values else ""))
            self._write("\n")
        else:
            self._write(f"{self.title} - {steps} - {timing}" + (f" - {values}" if values else "") + "\n")


def _progbar_logger() -> ProgbarLogger:
    return ProgbarLogger()


CallbackConstructorRegistry.register_callback_constructor(1, _progbar_logger)


__all__ = ["ProgbarLogger", "format_duration", "format_logs", "format_value"]
