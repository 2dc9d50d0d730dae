"""Fixtures of the backend tests: the webgpu or torch backend made active for one test."""

from __future__ import annotations

import pytest

import ndflow as nf


@pytest.fixture
def gpu():
    """The webgpu backend active for the test (skipped without an adapter); the previous backend and the
    flags restored afterwards. Buffers recorded by earlier tests are submitted first."""
    pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")
    if nf.find_backend("webgpu") is None:
        pytest.skip("no WebGPU adapter here (apt-get install mesa-vulkan-drivers for a software one)")
    before = nf.get_backend()
    nf.set_backend("webgpu")
    backend = nf.backend()
    backend.flush()
    yield backend
    nf.env().reset()
    nf.set_backend(before)


@pytest.fixture
def webgpu(gpu):
    """The same as ``gpu``."""
    return gpu


@pytest.fixture
def on_torch():
    """The torch backend active for the test, the previous backend restored afterwards."""
    if nf.find_backend("torch") is None:
        pytest.skip("the torch backend does not initialize here")
    before = nf.get_backend()
    nf.set_backend("torch")
    yield nf.backend()
    nf.set_backend(before)
