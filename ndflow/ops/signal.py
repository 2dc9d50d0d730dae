"""``nf.signal``: TF.js's ``tf.signal`` namespace: frame, stft, hann_window, hamming_window."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.dtypes import NUMPY_DTYPE
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .arithmetic import mul
from .complex_ops import _cosine_window, enclosing_power_of_two, rfft
from .convert import converted


def hann_window(window_length: int) -> Tensor:
    """The Hann window ``0.5 - 0.5 cos(2 pi i / N)`` (periodic for even lengths), float32."""
    return _cosine_window(window_length, 0.5, 0.5, "hann_window")


def hamming_window(window_length: int) -> Tensor:
    """The Hamming window ``0.54 - 0.46 cos(2 pi i / N)`` (periodic for even lengths), float32."""
    return _cosine_window(window_length, 0.54, 0.46, "hamming_window")


def _int(value: Any, arg: str, low: int, op: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | np.integer):
        raise TypeError(f"{op}: argument '{arg}' must be an int, got {value!r}")
    if value < low:
        raise ValueError(f"{op}: argument '{arg}' must be >= {low}, got {value}")
    return int(value)


def _pad_fill(value: Any, dtype: str, op: str) -> Any:
    """``pad_value`` as stored into the signal's dtype (TF.js writes it into the signal's typed array)."""
    if dtype == "string":
        if not isinstance(value, str):
            raise TypeError(f"{op}: a string signal needs a string 'pad_value', got {value!r}")
        return value
    if isinstance(value, str) or not isinstance(value, int | float | complex | np.number):
        raise TypeError(f"{op}: argument 'pad_value' must be a number, got {value!r}")
    if isinstance(value, complex | np.complexfloating) and dtype != "complex64":
        raise TypeError(f"{op}: a complex 'pad_value' needs a complex64 signal, got a {dtype} signal")
    if dtype in ("int32", "bool"):
        whole = int(math.trunc(value)) if math.isfinite(value) else 0
        return whole != 0 and whole % 256 != 0 if dtype == "bool" else whole  # Uint8Array for bool
    return value


def _frame(t: Tensor, frame_length: Any, frame_step: Any, pad_end: bool, pad_value: Any, op: str) -> Tensor:
    if t.rank != 1:
        raise ValueError(f"{op}: argument 'signal' must be a 1-D tensor, got shape {list(t.shape)}")
    length = _int(frame_length, "frame_length", 0, op)
    step = _int(frame_step, "frame_step", 1, op)
    size = t.size
    count = (size - length) // step + 1 if size >= length else 0
    if pad_end:  # frames start at every step before the end; the last ones are padded
        count = max(count, -(-size // step))
    if count == 0:  # TF.js returns an empty float32 tensor whatever the signal's dtype
        return ENGINE.make_tensor(np.zeros((0, length), np.float32), (0, length), "float32")
    missing = (count - 1) * step + length - size
    fill = _pad_fill(pad_value, t.dtype, op) if missing > 0 else None

    def run() -> Tensor:
        x = t
        if missing > 0:
            pad = np.full((missing,), fill, dtype=NUMPY_DTYPE[t.dtype])
            x = ENGINE.run_kernel(kn.Concat, (t, ENGINE.make_tensor(pad, pad.shape, t.dtype)), {"axis": 0})
        starts = np.arange(count, dtype=np.int32)[:, None] * step
        index = starts + np.arange(length, dtype=np.int32)[None, :]
        indices = ENGINE.make_tensor(index, index.shape, "int32")
        return ENGINE.run_kernel(kn.GatherV2, (x, indices), {"axis": 0, "batch_dims": 0})

    return ENGINE.tidy(None, run, (), {})


def frame(
    signal: TensorLike, frame_length: int, frame_step: int, pad_end: bool = False, pad_value: float | str = 0
) -> Tensor:
    """Frames of ``frame_length`` values every ``frame_step`` values of a 1-D signal, as rows of a
    2-D tensor; ``pad_end`` adds the frames that run past the end, filled with ``pad_value``."""
    with converted(signal, "signal", "frame") as t:
        return _frame(t, frame_length, frame_step, bool(pad_end), pad_value, "frame")


def stft(
    signal: TensorLike,
    frame_length: int,
    frame_step: int,
    fft_length: int | None = None,
    window_fn: Callable[[int], Tensor] = hann_window,
) -> Tensor:
    """Short-time Fourier transform: ``rfft(frame(signal) * window_fn(frame_length), fft_length)``;
    ``fft_length`` defaults to the smallest power of two >= ``frame_length``."""
    length = _int(frame_length, "frame_length", 0, "stft")
    if fft_length is None:
        fft_length = enclosing_power_of_two(length)
    fft_length = _int(fft_length, "fft_length", 1, "stft")
    if not callable(window_fn):
        raise TypeError(f"stft: argument 'window_fn' must be a function of the window length, got {window_fn!r}")
    with converted(signal, "signal", "stft") as t:
        if t.dtype in ("string", "complex64"):
            raise TypeError(f"stft: argument 'signal' must be a real numeric tensor, got {t.dtype}")

        def run() -> Tensor:
            framed = _frame(t, length, frame_step, False, 0, "stft")
            window = window_fn(length)
            if not isinstance(window, Tensor):
                raise TypeError(f"stft: 'window_fn' must return a Tensor, got {type(window).__name__}")
            return rfft(mul(framed, window), fft_length)

        return ENGINE.tidy(None, run, (), {})


__all__ = ["frame", "stft", "hann_window", "hamming_window"]
