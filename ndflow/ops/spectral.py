"""``nf.spectral``: TF.js's ``tf.spectral`` namespace, the Fourier transforms of ``nf.fft`` & co."""

from __future__ import annotations

from .complex_ops import fft, ifft, irfft, rfft

__all__ = ["fft", "ifft", "rfft", "irfft"]
