"""ndflow's version, and ``nf.version``: TF.js's ``tf.version`` object.

``tf.version`` maps each TF.js package to its version. ``nf.version`` is this module, made to read like that
mapping too: ``nf.version["tfjs-core"]`` is the TF.js API version ndflow follows, ``nf.version["ndflow"]`` is
ndflow's own (also ``nf.__version__``), and ``dict(nf.version)`` gives them all. It stays a module, so
``import ndflow.version`` and ``from ndflow.version import __version__`` keep working.
"""

from __future__ import annotations

import sys
import types
from collections.abc import Iterator, Mapping

__version__ = "0.1.0"

TFJS_VERSION = "4.22.0"
"""The TF.js release whose API and numbers ndflow follows."""

VERSIONS: dict[str, str] = {
    "tfjs-core": TFJS_VERSION,
    "tfjs-backend-cpu": TFJS_VERSION,
    "tfjs-data": TFJS_VERSION,
    "tfjs-layers": TFJS_VERSION,
    "tfjs-converter": TFJS_VERSION,
    "tfjs": TFJS_VERSION,
    "ndflow": __version__,
}
"""Each TF.js package ndflow implements, with the TF.js version it follows, plus ndflow's own version."""


class _VersionModule(types.ModuleType):
    """This module's class: a module that is also a read-only mapping of :data:`VERSIONS`."""

    def __getitem__(self, key: str) -> str:
        try:
            return VERSIONS[key]
        except KeyError:
            raise KeyError(f"nf.version: no package {key!r} (known: {', '.join(VERSIONS)})") from None

    def __iter__(self) -> Iterator[str]:
        return iter(VERSIONS)

    def __len__(self) -> int:
        return len(VERSIONS)

    def __contains__(self, key: object) -> bool:
        return key in VERSIONS

    def keys(self):  # type: ignore[no-untyped-def]  # noqa: ANN201 - dict's own view types
        return VERSIONS.keys()

    def values(self):  # type: ignore[no-untyped-def]  # noqa: ANN201
        return VERSIONS.values()

    def items(self):  # type: ignore[no-untyped-def]  # noqa: ANN201
        return VERSIONS.items()

    def get(self, key: str, default: str | None = None) -> str | None:
        return VERSIONS.get(key, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Mapping) and not isinstance(other, types.ModuleType):
            return dict(other) == VERSIONS
        return other is self

    __hash__ = types.ModuleType.__hash__

    def __repr__(self) -> str:
        return repr(VERSIONS)


Mapping.register(_VersionModule)
sys.modules[__name__].__class__ = _VersionModule
