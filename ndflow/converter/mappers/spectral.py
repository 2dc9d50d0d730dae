"""Spectral ops (TF.js converter category ``spectral``): FFTs over the innermost axis.

``RFFT``/``IRFFT`` honour ``fft_length`` as TF does (crop or zero-pad the input; an odd output
length for ``IRFFT``); TF.js ignores it and assumes the input's own length.
"""

from __future__ import annotations

from typing import Any

from ... import ops as nf
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import mapper, num


@mapper("FFT")
def fft(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Complex FFT over the innermost axis."""
    return nf.fft(inputs[0])


@mapper("IFFT")
def ifft(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Inverse complex FFT over the innermost axis."""
    return nf.ifft(inputs[0])


def _fit(x: Tensor, n: int) -> Tensor:
    """``x``'s innermost axis cropped or zero-padded to ``n``."""
    inner = x.shape[-1]
    if inner > n:
        return nf.slice(x, [0] * x.rank, [*x.shape[:-1], n])
    if inner < n:
        return nf.pad(x, [[0, 0]] * (x.rank - 1) + [[0, n - inner]])
    return x


@mapper("RFFT")
def rfft(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Real-input FFT of length ``fft_length`` (second input): ``fft_length // 2 + 1`` bins."""
    x = inputs[0]
    n = int(num(inputs[1])) if len(inputs) > 1 else x.shape[-1]
    return nf.rfft(_fit(x, n))


@mapper("IRFFT")
def irfft(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Inverse real FFT giving ``fft_length`` (second input) real samples."""
    x = inputs[0]
    n = int(num(inputs[1])) if len(inputs) > 1 else 2 * (x.shape[-1] - 1)
    bins = n // 2 + 1
    x = _fit(x, bins)
    if n % 2 == 0:
        return nf.irfft(x)
    # Odd length: rebuild the Hermitian-symmetric spectrum X[n - k] = conj(X[k]) and invert it.
    tail = nf.reverse(nf.slice(x, [0] * (x.rank - 1) + [1], [*x.shape[:-1], bins - 1]), [-1])
    tail = nf.complex(nf.real(tail), nf.neg(nf.imag(tail)))
    return nf.real(nf.ifft(nf.concat([x, tail], -1)))
