"""The ``distributed`` tests (Ray, Dask, torchrun) run only when asked for (``pytest -m distributed``, the
separate job of .ci/run): the fast suite never starts a cluster or a process group."""

from __future__ import annotations

import pytest


def pytest_collection_modifyitems(config, items) -> None:
    if "distributed" in (config.getoption("markexpr", "") or ""):
        return
    skip = pytest.mark.skip(reason="a Ray / Dask / torchrun test: run with pytest -m distributed (.ci/run's job)")
    for item in items:
        if item.get_closest_marker("distributed") is not None:
            item.add_marker(skip)
