"""deeplearn.js 0.x's ``ENV``: its feature flags and the global math object (``ENV.math``).

deeplearn.js evaluated WebGL features on first ``ENV.get``; ndflow has no WebGL, so they read as a browser
without WebGL would give them (``WEBGL_VERSION`` 0, the others false) unless set with ``setFeatures``. Names that
are ndflow flags (``nf.env()``, e.g. ``"DEBUG"``) read those. ``ENV.math`` is an ``NDArrayMath`` on the active
backend, made on first use (``setMath`` replaces it).
"""

from __future__ import annotations

from typing import Any

from ..core.engine import ENGINE
from ..core.flags import env
from .math import NDArrayMath

#: deeplearn.js 0.x's features and what they are where WebGL is unavailable.
FEATURES: dict[str, Any] = {
    "WEBGL_DISJOINT_QUERY_TIMER_EXTENSION_ENABLED": False,
    "WEBGL_DISJOINT_QUERY_TIMER_EXTENSION_RELIABLE": False,
    "WEBGL_VERSION": 0,
    "WEBGL_FLOAT_TEXTURE_ENABLED": False,
    "WEBGL_GET_BUFFER_SUB_DATA_ASYNC_EXTENSION_ENABLED": False,
}


class Environment:
    """deeplearn.js's ``Environment``: ``get(feature)``, ``setFeatures``, ``reset``, ``math``, ``setMath``."""

    def __init__(self, features: dict[str, Any] | None = None) -> None:
        self.features: dict[str, Any] = dict(features or {})
        self._math: NDArrayMath | None = None

    def get(self, feature: str) -> Any:
        """The value of a feature (evaluated once, then remembered)."""
        if feature in self.features:
            return self.features[feature]
        if feature in FEATURES:
            value = FEATURES[feature]
        elif env().has(feature):
            return env().get(feature)
        else:
            known = ", ".join(FEATURES)
            raise ValueError(f"ENV.get: unknown feature {feature!r} (deeplearn.js's: {known}; or an ndflow flag)")
        self.features[feature] = value
        return value

    def setFeatures(self, features: dict[str, Any]) -> None:  # noqa: N802 - deeplearn.js's name
        """Replace the features (and forget the math object)."""
        self._math = None
        self.features = dict(features)

    def reset(self) -> None:
        """Forget the features set and the math object."""
        self._math = None
        self.features = {}

    def setMath(self, math: NDArrayMath) -> None:  # noqa: N802
        """Make ``math`` the global math object."""
        if not isinstance(math, NDArrayMath):
            raise TypeError(f"ENV.setMath: expected an NDArrayMath, got {type(math).__name__}")
        self._math = math

    @property
    def math(self) -> NDArrayMath:
        """The global math object: an ``NDArrayMath`` on the active backend, made on first use."""
        if self._math is None:
            self._math = NDArrayMath(ENGINE.get_backend())
        return self._math

    def getBackend(self, name: str) -> Any:  # noqa: N802
        """The ndflow backend registered as ``name`` (``None`` if there is none)."""
        return ENGINE.find_backend(name)


ENV = Environment()
