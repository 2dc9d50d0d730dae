"""Shared fixtures: every test must leave ``nf.memory().num_tensors`` where it found it."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import pytest

# The compiled kernels load on the first call that uses them (not on a background thread), so that each test's
# call takes the path it means to test; before ndflow is imported (nf.env().reset() re-reads NDFLOW_FLAGS).
os.environ["NDFLOW_FLAGS"] = ",".join(f for f in (os.environ.get("NDFLOW_FLAGS"), "CPU_JIT_BACKGROUND=false") if f)

# Shared test helpers (oracle_cases, grad_cases) are importable from every test directory.
for _helpers in ("ops", "gradients"):
    sys.path.insert(0, str(Path(__file__).resolve().parent / _helpers))

import ndflow as nf  # noqa: E402  (after the sys.path set-up above)
from ndflow.core.engine import ENGINE  # noqa: E402

# Backends the op tests run on: each one that is registered and initializes here.
BACKENDS = ["cpu", "torch", "webgpu"]

# Test folders whose cpu runs depend on the processor (AVX-512 or not, OpenBLAS's kernel, numba or not).
PROCESSOR_DIRS = {"backends", "core", "converter", "ops", "gradients", "layers", "train", "legacy", "io"}
GPU_FIXTURES = {"gpu", "webgpu"}


def pytest_collection_modifyitems(config, items) -> None:
    """Mark what CI runs a second time in another configuration (.ci/run): ``adapter`` for every test on the
    webgpu backend (again with the OpenGL adapter), ``processor`` for the tests of the cpu backend's kernels and
    everything on top of them (again with AVX-512 off, another OpenBLAS kernel, and without numba)."""
    for item in items:
        spec = getattr(item, "callspec", None)
        on = spec.params.get("backend") if spec is not None else None
        names = set(getattr(item, "fixturenames", ()))
        module = item.path.name
        if on == "webgpu" or names & GPU_FIXTURES or module.startswith("test_webgpu"):
            item.add_marker(pytest.mark.adapter)
        elif on != "torch" and "on_torch" not in names and not module.startswith("test_torch"):
            rel = item.path.relative_to(Path(__file__).resolve().parent).parts
            if len(rel) > 1 and rel[0] in PROCESSOR_DIRS:
                item.add_marker(pytest.mark.processor)


@pytest.fixture(autouse=True)
def no_leaked_tensors():
    """Fail a test that leaves tensors behind (variables count too: dispose them)."""
    nf.env().reset()
    logging.getLogger("ndflow").handlers.clear()
    before = nf.memory().num_tensors
    yield
    nf.env().reset()
    while ENGINE._scopes:  # a test that failed inside a scope must not break the next one
        ENGINE.end_scope(None)
    after = nf.memory().num_tensors
    assert after == before, f"test leaked {after - before} tensor(s): num_tensors {before} -> {after}"


@pytest.fixture(params=BACKENDS)
def backend(request):
    """Run a test on each available backend, restoring the previous one afterwards."""
    name = request.param
    if nf.find_backend(name) is None:
        pytest.skip(f"backend '{name}' is not available here")
    previous = nf.get_backend()
    nf.set_backend(name)
    yield name
    nf.set_backend(previous)
