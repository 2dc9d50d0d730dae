"""Shared fixtures: every test must leave ``nf.memory().num_tensors`` where it found it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import pytest

# Shared test helpers (oracle_cases, grad_cases) are importable from every test directory.
for _helpers in ("ops", "gradients"):
    sys.path.insert(0, str(Path(__file__).resolve().parent / _helpers))

import ndflow as nf  # noqa: E402  (after the sys.path set-up above)
from ndflow.core.engine import ENGINE  # noqa: E402

# Backends the op tests run on: each one that is registered and initializes here.
BACKENDS = ["cpu", "torch", "webgpu"]


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
