"""The shape-only decisions of a compiled 2-D convolution (:class:`Route`) and its kinds: which kernel runs it and
with which integer arguments, shared by the depthwise (:mod:`.ops`) and blocked (:mod:`.conv_blocked`) paths and
kept by the plans (:mod:`.plans`)."""

from __future__ import annotations

from typing import NamedTuple

# Routes of the compiled 2-D convolutions (Route.kind).
DW3, DW3_FLAT, DW5, DW5_FLAT, DW_FLAT, DW, BLOCKED, POINTWISE, DW3_BLOCKED = range(9)

# Channels from which the 3x3 depthwise convolution runs register-blocked (:mod:`._dw3_kernels`): below, a
# vector of channels is mostly empty and the whole-row loop over tiled weights is faster.
DW3_BLOCKED_MIN_CHANNELS = 16


class Route(NamedTuple):
    """The shape-only decisions of a compiled 2-D convolution: which kernel runs it and with which integer
    arguments. Computed from the geometry alone, so a plan (:mod:`.plans`) can keep it between calls."""

    kind: int  # DW3, DW3_FLAT, DW5, DW5_FLAT, DW_FLAT, DW (depthwise kernels), BLOCKED (im2col + products), POINTWISE
    out_shape: tuple[int, ...]  # channels-last output
    work: int  # multiply-adds: runs below PARALLEL_MIN_WORK stay on the calling thread
    static: tuple[int, ...]  # the compiled kernel's integer arguments
