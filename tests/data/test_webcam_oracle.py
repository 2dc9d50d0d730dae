"""``nf.data.webcam``'s frame resizing against real TF.js 4.22 (fixture: tests/fixtures/gen_webcam_crop.py)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ndflow.data.webcam import WebcamIterator

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "webcam_crop.json").read_text())
FRAME = np.asarray(FIXTURE["frame"]["values"], np.uint8).reshape(FIXTURE["frame"]["shape"])


@pytest.mark.parametrize("case", FIXTURE["cases"], ids=[c["id"] for c in FIXTURE["cases"]])
def test_frame_resize_matches_tfjs(case: dict) -> None:
    # the iterator is not started: only its frame-to-tensor step runs, on the oracle's frame
    it = WebcamIterator("unused.avi", case["resize_width"], case["resize_height"], case["center_crop"])
    out = it._frame_tensor(FRAME)
    try:
        assert list(out.shape) == case["shape"] and out.dtype == case["dtype"]
        expected = np.asarray(case["values"], np.float32).reshape(case["shape"])
        np.testing.assert_allclose(np.asarray(out.data_sync()).reshape(out.shape), expected, rtol=1e-5, atol=1e-3)
    finally:
        out.dispose()


def test_frame_without_resize_is_int32() -> None:
    it = WebcamIterator("unused.avi", FRAME.shape[1], FRAME.shape[0], True)
    out = it._frame_tensor(FRAME)
    assert out.dtype == "int32" and out.shape == FRAME.shape
    np.testing.assert_array_equal(np.asarray(out.data_sync()).reshape(out.shape), FRAME)
    out.dispose()
