"""Layers tests: names restart for every test (as in a fresh TF.js process), so default names match the fixtures."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ndflow.layers.naming import reset_uids  # noqa: E402


@pytest.fixture(autouse=True)
def fresh_names():
    """Restart the layer / model / weight name counters."""
    reset_uids()
    yield
