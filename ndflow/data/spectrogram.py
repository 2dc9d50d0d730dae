"""The spectrogram column of Web Audio's ``AnalyserNode``, in numpy (what ``tf.data.microphone`` reads).

TF.js builds its microphone spectrogram with an ``AnalyserNode`` whose ``fftSize`` is twice the iterator's
``fftSize``, reading ``getFloatFrequencyData`` and ``getFloatTimeDomainData`` into arrays of the iterator's
``fftSize``. Per the Web Audio specification (section "FFT windowing and smoothing over time"), each analysis of
the latest ``n`` samples (``n`` = the analyser's fftSize):

1. multiplies them by a Blackman window with alpha 0.16, ``w[i] = a0 - a1 cos(2 pi i / n) + a2 cos(4 pi i / n)``
   with ``a0 = (1 - alpha) / 2``, ``a1 = 1/2``, ``a2 = alpha / 2``;
2. takes the FFT and the magnitude of each of the first ``n / 2`` bins, divided by ``n``;
3. smooths over time: ``m = tau * m_previous + (1 - tau) * magnitude`` (``tau`` = smoothingTimeConstant; a
   non-finite previous value counts as 0), the smoothed value being kept for the next analysis;
4. gives ``20 log10(m)`` decibels (``-inf`` for silence).

The time-domain data is the window's first ``len(array)`` samples, i.e. the older half here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BLACKMAN_ALPHA", "AnalyserNode", "blackman_window"]

BLACKMAN_ALPHA = 0.16


def blackman_window(n: int) -> np.ndarray:
    """Web Audio's Blackman window of ``n`` points (float64), periodic: the ``cos`` arguments use ``i / n``."""
    a0 = 0.5 * (1.0 - BLACKMAN_ALPHA)
    a1 = 0.5
    a2 = 0.5 * BLACKMAN_ALPHA
    x = np.arange(n, dtype=np.float64) / n
    return a0 - a1 * np.cos(2.0 * np.pi * x) + a2 * np.cos(4.0 * np.pi * x)


class AnalyserNode:
    """The analysis part of a Web Audio ``AnalyserNode`` of ``fft_size`` (its own fftSize, a power of two).

    :meth:`frequency_data` analyses one window of ``fft_size`` samples and returns ``fft_size / 2`` decibel
    values, updating the smoothing state; :meth:`reset` forgets that state (a new node).
    """

    def __init__(self, fft_size: int, smoothing_time_constant: float = 0.0) -> None:
        if fft_size < 2 or fft_size & (fft_size - 1):
            raise ValueError(f"AnalyserNode: fft_size must be a power of two >= 2, got {fft_size}")
        if not 0.0 <= smoothing_time_constant <= 1.0:
            raise ValueError(
                f"AnalyserNode: smoothing_time_constant must be between 0 and 1, got {smoothing_time_constant}"
            )
        self.fft_size = int(fft_size)
        self.frequency_bin_count = self.fft_size // 2
        self.smoothing_time_constant = float(smoothing_time_constant)
        self._window = blackman_window(self.fft_size)
        self._smoothed = np.zeros(self.frequency_bin_count, np.float64)

    def reset(self) -> None:
        """Forget the smoothing state, as a freshly created node."""
        self._smoothed[:] = 0.0

    def frequency_data(self, samples: np.ndarray) -> np.ndarray:
        """``getFloatFrequencyData`` for the latest ``fft_size`` ``samples``: float64 decibels, ``fft_size / 2``."""
        if samples.shape != (self.fft_size,):
            raise ValueError(f"AnalyserNode: expected {self.fft_size} samples, got shape {samples.shape}")
        spectrum = np.fft.rfft(samples.astype(np.float64) * self._window)[: self.frequency_bin_count]
        magnitude = np.abs(spectrum) / self.fft_size
        previous = np.where(np.isfinite(self._smoothed), self._smoothed, 0.0)
        tau = self.smoothing_time_constant
        self._smoothed = tau * previous + (1.0 - tau) * magnitude
        with np.errstate(divide="ignore"):
            return 20.0 * np.log10(self._smoothed)

    def time_domain_data(self, samples: np.ndarray, length: int) -> np.ndarray:
        """``getFloatTimeDomainData`` into an array of ``length``: the first ``length`` of the window's samples."""
        return samples[: min(length, self.fft_size)].astype(np.float32)
