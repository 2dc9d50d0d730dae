"""TF.js models behind TensorFlow Serving's REST API (``ndflow serve``; the ``serve`` extra: Starlette, uvicorn,
prometheus-client).

``app(models, **options)`` is an ASGI app (``api``); ``ServeConfig`` its settings (``config``); ``deployment``
the same app as a Ray Serve deployment (``ray_serve``). The modules: ``codec`` (JSON <-> numpy against a model's
signature), ``runner`` (a loaded model version and its runs), ``registry`` (versions, hot reload), ``batching``
(server-side batching), ``metrics`` (Prometheus), ``logs`` (JSON lines). Nothing here imports Starlette, uvicorn,
prometheus-client or Ray until it is used."""

from __future__ import annotations

import importlib
from typing import Any

_LAZY = {
    "app": ("api", "app"),
    "ServingState": ("api", "ServingState"),
    "ServeConfig": ("config", "ServeConfig"),
    "ServingError": ("errors", "ServingError"),
    "deployment": ("ray_serve", "deployment"),
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    if name not in _LAZY:
        raise AttributeError(f"module 'ndflow.serving' has no attribute {name!r}")
    module, attribute = _LAZY[name]
    return getattr(importlib.import_module(f"{__name__}.{module}"), attribute)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
