"""TF.js config objects for the data sources: a dict with TF.js's camelCase keys (or ndflow's snake_case names)
merged into the keyword arguments, unknown keys refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["merge_config"]


def merge_config(
    config: Mapping[str, Any], given: dict[str, Any], keys: Mapping[str, str], what: str
) -> dict[str, Any]:
    """``given`` updated with ``config``, whose keys are TF.js's (``keys``: camelCase -> snake_case) or ours; an
    unknown key raises a ``ValueError`` naming ``what`` and the keys there are."""
    out = dict(given)
    known = set(keys) | set(keys.values())
    for key, value in config.items():
        if key not in known:
            raise ValueError(f"{what}: unknown config key {key!r}; expected one of {sorted(keys)}")
        out[keys.get(key, key)] = value
    return out
