"""The cpu backend's ResizeBilinear, compiled (``ndflow.backends.cpu.numba._image_kernels``) and numpy (row blocks),
against TF.js's per-pixel formula written plainly.

The reference computes each output pixel's source coordinates from TF.js's definitions (``effective sizes``, half
pixel centres, clamping) and interpolates in float64 as TF.js's JavaScript numbers do: ``top = tl + (tr - tl) *
cf``, ``bottom = bl + (br - bl) * cf``, ``top + (bottom - top) * rf``, then float32. Both paths must match it bit for
bit (NaN where it has NaN), with the flag ``CPU_JIT`` off and on.
"""

from __future__ import annotations

import numpy as np
import pytest
from jit_util import needs_numba

import ndflow as nf
from ndflow.backends.cpu import numba as jit
from ndflow.backends.cpu.kernels import image
from ndflow.backends.shared import image as shared_image


def _source(out_size: int, in_size: int, align: bool, half: bool):
    """Per output index: TF.js's (floor, ceil, fraction) of the source coordinate, computed one index at a time."""
    if align and out_size > 1:
        ratio = (in_size - 1) / (out_size - 1)
    else:
        ratio = in_size / out_size
    result = []
    for i in range(out_size):
        src = ratio * (i + 0.5) - 0.5 if half else ratio * i
        lo = max(0, int(np.floor(src)))
        hi = min(in_size - 1, int(np.ceil(src)))
        result.append((lo, hi, src - lo))
    return result


def reference_resize(x: np.ndarray, size: tuple[int, int], align: bool, half: bool) -> np.ndarray:
    batch, height, width, channels = x.shape
    new_h, new_w = size
    v = x.astype(np.float64)
    out = np.empty((batch, new_h, new_w, channels), np.float32)
    cols = _source(new_w, width, align, half)
    for oy, (r0, r1, rf) in enumerate(_source(new_h, height, align, half)):
        for ox, (c0, c1, cf) in enumerate(cols):
            tl, tr, bl, br = v[:, r0, c0], v[:, r0, c1], v[:, r1, c0], v[:, r1, c1]
            with np.errstate(invalid="ignore"):
                top = tl + (tr - tl) * cf
                bottom = bl + (br - bl) * cf
                out[:, oy, ox] = top + (bottom - top) * rf
    return out


CASES = [
    # (input shape, output size): the models' shapes (rvm, meet, handtrack, scaled down), odd ratios, strong
    # downscaling (rows skipped), one row or column in or out, batches, many channels
    ((1, 12, 12, 32), (24, 24)),
    ((1, 9, 16, 24), (18, 32)),
    ((1, 28, 28, 3), (40, 40)),
    ((1, 37, 37, 4), (45, 45)),
    ((1, 45, 45, 3), (37, 37)),
    ((2, 50, 40, 2), (7, 5)),
    ((3, 5, 7, 129), (11, 3)),
    ((1, 1, 1, 5), (4, 3)),
    ((1, 6, 4, 2), (1, 1)),
    ((1, 1, 8, 3), (3, 16)),
    ((2, 8, 8, 1), (8, 8)),
]
FLAGS = [(False, False), (False, True), (True, False)]  # (align_corners, half_pixel_centers)


def _resize(x: np.ndarray, size, align: bool, half: bool, on: bool) -> np.ndarray:
    previous = nf.get_backend()
    nf.set_backend("cpu")
    nf.env().set("CPU_JIT", on)
    try:
        assert (jit.kernels() is not None) == on, jit.status()
        t = nf.tensor(x)
        y = nf.image.resize_bilinear(t, list(size), align, half)
        values = y.numpy()
        nf.dispose([t, y])
        return values
    finally:
        nf.env().reset()
        nf.set_backend(previous)


def _flags_available():
    return (False, True) if jit.numba_available() else (False,)


@pytest.mark.parametrize("shape,size", CASES, ids=lambda c: str(c))
@pytest.mark.parametrize("align,half", FLAGS)
def test_resize_bilinear_matches_the_per_pixel_formula(shape, size, align, half):
    rng = np.random.default_rng(sum(shape) + size[0])
    x = rng.standard_normal(shape).astype(np.float32)
    want = reference_resize(x, size, align, half)
    for on in _flags_available():
        got = _resize(x, size, align, half, on)
        assert got.dtype == np.float32
        np.testing.assert_array_equal(got, want, err_msg=f"CPU_JIT={on}")


def test_resize_bilinear_int_and_non_finite_inputs():
    rng = np.random.default_rng(5)
    ints = rng.integers(-1000, 1000, (2, 7, 9, 3)).astype(np.int32)
    wild = rng.standard_normal((1, 6, 6, 2)).astype(np.float32)
    wild[0, 2, 3, 0], wild[0, 4, 1, 1], wild[0, 0, 0, 1] = np.nan, np.inf, -np.inf
    for x, size, half in ((ints, (12, 5), True), (wild, (11, 13), False), (wild, (12, 12), True)):
        want = reference_resize(x, size, False, half)
        for on in _flags_available():
            np.testing.assert_array_equal(_resize(x, size, False, half, on), want, err_msg=f"CPU_JIT={on}")


@needs_numba
def test_the_flag_picks_the_path(monkeypatch):
    x = np.random.default_rng(1).standard_normal((1, 5, 5, 3)).astype(np.float32)
    numpy_result = _resize(x, (9, 9), False, True, False)

    def numpy_path(*args):
        raise AssertionError("the numpy path ran with the JIT on")

    monkeypatch.setattr(image, "_bilinear_rows", numpy_path)
    np.testing.assert_array_equal(_resize(x, (9, 9), False, True, True), numpy_result)


def test_axis_tables_are_kept_and_read_only():
    a = shared_image.bilinear_axis(17, 40, False, True)
    assert shared_image.bilinear_axis(17, 40, False, True) is a
    for t in a:
        assert not t.flags.writeable
