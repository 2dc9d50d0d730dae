"""Complex numbers and Fourier transforms: complex, real, imag, fft, ifft, rfft, irfft.

Also TF.js's top-level signal helpers ``enclosing_power_of_two`` and ``cosine_window``. The same
transforms are ``nf.spectral.fft`` & co (``ops/spectral.py``). This module is not named
``complex.py``: a family module named like one of its ops would clash with that op in ``nf.ops``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted


def _k(kernel: str, *inputs: Tensor, **attrs: Any) -> Tensor:
    return ENGINE.run_kernel(kernel, inputs, attrs or None)


def _tidy(fn: Any) -> Tensor:
    return ENGINE.tidy(None, fn, (), {})


def _const(values: Any, dtype: str) -> Tensor:
    array = np.asarray(values, dtype=np.int32 if dtype == "int32" else np.float32)
    return ENGINE.make_tensor(array, array.shape, dtype)


# ----------------------------------------------------------------------------- complex numbers


def complex(real: TensorLike, imag: TensorLike) -> Tensor:  # noqa: A001 - TF.js's name
    """A complex64 tensor ``real + i * imag`` from two real tensors of the same shape."""
    with converted(real, "real", "complex") as re, converted(imag, "imag", "complex") as im:
        for name, t in (("real", re), ("imag", im)):
            if t.dtype in ("string", "complex64"):
                raise TypeError(f"complex: argument '{name}' must be a real numeric tensor, got {t.dtype}")
        if re.shape != im.shape:
            raise ValueError(f"complex: real and imag shapes must match, got {list(re.shape)} and {list(im.shape)}")
        return _k(kn.Complex, re, im)


def _part(kernel: str, op: str, x: Any) -> Tensor:
    with converted(x, "input", op) as t:
        if t.dtype != "complex64":
            raise TypeError(f"{op}: argument 'input' must be a complex64 tensor, got {t.dtype}")
        return _k(kernel, t)


def real(input: TensorLike) -> Tensor:  # noqa: A002 - TF.js's name
    """The real parts (float32) of a complex64 tensor."""
    return _part(kn.Real, "real", input)


def imag(input: TensorLike) -> Tensor:  # noqa: A002
    """The imaginary parts (float32) of a complex64 tensor."""
    return _part(kn.Imag, "imag", input)


# ----------------------------------------------------------------------------- Fourier transforms


def _check_signal(t: Tensor, dtype: str, op: str) -> None:
    if t.dtype != dtype:
        raise TypeError(f"{op}: argument 'input' must be a {dtype} tensor, got {t.dtype}")
    if t.rank == 0:
        raise ValueError(f"{op}: argument 'input' must have rank >= 1 (the transform runs over the last axis)")
    if t.shape[-1] == 0:
        raise ValueError(f"{op}: the innermost dimension of 'input' must be non-empty, got shape {list(t.shape)}")


def _transform(kernel: str, op: str, x: Any) -> Tensor:
    with converted(x, "input", op) as t:
        _check_signal(t, "complex64", op)
        return _k(kernel, t)


def fft(input: TensorLike) -> Tensor:  # noqa: A002
    """Discrete Fourier transform of a complex64 tensor over its innermost axis."""
    return _transform(kn.FFT, "fft", input)


def ifft(input: TensorLike) -> Tensor:  # noqa: A002
    """Inverse discrete Fourier transform of a complex64 tensor over its innermost axis."""
    return _transform(kn.IFFT, "ifft", input)


def rfft(input: TensorLike, fft_length: int | None = None) -> Tensor:  # noqa: A002
    """Fourier transform of a real (float32) signal over its innermost axis: the ``n // 2 + 1``
    non-redundant terms, ``n`` being ``fft_length`` (the signal cropped or zero-padded to it)."""
    with converted(input, "input", "rfft") as t:
        if t.dtype != "float32":
            raise TypeError(f"rfft: argument 'input' must be a float32 tensor, got {t.dtype}")
        if t.rank == 0:
            raise ValueError("rfft: argument 'input' must have rank >= 1 (the transform runs over the last axis)")
        inner = t.shape[-1]
        if fft_length is not None:
            if isinstance(fft_length, bool) or not isinstance(fft_length, int | np.integer) or fft_length <= 0:
                raise ValueError(f"rfft: argument 'fft_length' must be a positive int, got {fft_length!r}")
            inner = int(fft_length)
        if inner == 0:
            raise ValueError(f"rfft: the innermost dimension of 'input' must be non-empty, got shape {list(t.shape)}")
        outer = t.shape[:-1]

        def run() -> Tensor:
            x = t
            if inner < t.shape[-1]:
                x = _k(kn.Slice, t, begin=(0,) * t.rank, size=outer + (inner,))
            elif inner > t.shape[-1]:
                pad = _const(np.zeros(outer + (inner - t.shape[-1],)), "float32")
                x = _k(kn.Concat, t, pad, axis=t.rank - 1)
            spectrum = _k(kn.FFT, _k(kn.Complex, x, _k(kn.ZerosLike, x)))
            return _k(kn.Slice, spectrum, begin=(0,) * t.rank, size=outer + (inner // 2 + 1,))

        return _tidy(run)


def irfft(input: TensorLike) -> Tensor:  # noqa: A002
    """Inverse of ``rfft``: the real signal (float32) of length ``2 * (n - 1)`` whose spectrum has the
    ``n`` terms of the innermost axis (for ``n <= 2``, the real part of ``ifft``)."""
    with converted(input, "input", "irfft") as t:
        _check_signal(t, "complex64", "irfft")
        n = t.shape[-1]
        if n <= 2:
            return _tidy(lambda: _k(kn.Real, _k(kn.IFFT, t)))

        def run() -> Tensor:
            # The spectrum of a real signal is Hermitian: extend it with the mirrored conjugates.
            mirror = _const(list(range(n)) + list(range(n - 2, 0, -1)), "int32")
            sign = _const([1.0] * n + [-1.0] * (n - 2), "float32")
            axis = {"axis": t.rank - 1, "batch_dims": 0}
            re = _k(kn.GatherV2, _k(kn.Real, t), mirror, **axis)
            im = _k(kn.Multiply, _k(kn.GatherV2, _k(kn.Imag, t), mirror, **axis), sign)
            return _k(kn.Real, _k(kn.IFFT, _k(kn.Complex, re, im)))

        return _tidy(run)


# ----------------------------------------------------------------------------- signal helpers


def enclosing_power_of_two(value: float) -> int:
    """The power of two ``2 ** ceil(log2(value))`` (TF.js's formula; 0 for 0)."""
    number = not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)
    if not number or not 0 <= value < math.inf:
        raise ValueError(
            f"enclosing_power_of_two: argument 'value' must be a finite non-negative number, got {value!r}"
        )
    if value == 0:
        return 0
    return int(math.floor(2 ** math.ceil(math.log(value) / math.log(2.0))))


def cosine_window(window_length: int, a: float, b: float) -> Tensor:
    """The window ``a - b * cos(2 pi i / (window_length - 1))`` (``window_length`` for even lengths:
    periodic), as float32; a window of length 1 is ``[1]``."""
    return _cosine_window(window_length, a, b, "cosine_window")


def _cosine_window(window_length: int, a: float, b: float, op: str) -> Tensor:
    """``cosine_window`` with errors naming ``op`` (shared with ``nf.signal``'s windows)."""
    if isinstance(window_length, bool) or not isinstance(window_length, int | np.integer):
        raise TypeError(f"{op}: argument 'window_length' must be an int, got {window_length!r}")
    if window_length < 0:
        raise ValueError(f"{op}: argument 'window_length' must be non-negative, got {window_length}")
    n = int(window_length)
    if n == 1:  # TF.js divides 0 by 0 here and returns [NaN]
        return _const([1.0], "float32")
    even = 1 - n % 2
    values = a - b * np.cos(2.0 * np.pi * np.arange(n, dtype=np.float64) / (n + even - 1))
    return _const(values, "float32")


__all__ = ["complex", "real", "imag", "fft", "ifft", "rfft", "irfft", "enclosing_power_of_two", "cosine_window"]

CHAINED = [fft, ifft, rfft, irfft]  # also Tensor methods: x.fft()
