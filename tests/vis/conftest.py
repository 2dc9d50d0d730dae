"""nf.vis's tests draw with matplotlib's Agg backend (no window) and look at the PNG files they write."""

from __future__ import annotations

import pytest

matplotlib = pytest.importorskip("matplotlib", reason="nf.vis needs matplotlib: pip install 'ndflow[vis]'")
matplotlib.use("Agg")
Image = pytest.importorskip("PIL.Image", reason="the PNG checks read images with Pillow")


@pytest.fixture
def png(tmp_path):
    """A path for a PNG in the test's folder: ``png('name')``."""
    return lambda name: str(tmp_path / f"{name}.png")
