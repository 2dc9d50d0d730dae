"""Environment flags, as TF.js's ``env()``: registered with an evaluator, evaluated lazily, cached.

``NDFLOW_FLAGS="DEBUG=true,WEBGPU_FLOAT16=false"`` in the process environment overrides flag
values, as TF.js's ``?tfjsflags=`` URL parameter does.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

FlagValue = bool | int | float | str
logger = logging.getLogger("ndflow")

ENV_VAR = "NDFLOW_FLAGS"


def parse_value(name: str, text: str) -> FlagValue:
    """Parse one flag value from text: ``true``/``false``, a number, or a bare string."""
    low = text.strip().lower()
    if low in ("true", "false"):
        return low == "true"
    try:
        number = float(text)
    except ValueError:
        if not text.strip():
            raise ValueError(f"flags: flag '{name}' has an empty value in {ENV_VAR}") from None
        return text.strip()
    return int(number) if number.is_integer() and "." not in text else number


def parse_flags(text: str) -> dict[str, FlagValue]:
    """Parse ``K=v,K2=v2`` into a dict; a malformed item raises naming it."""
    flags: dict[str, FlagValue] = {}
    for item in text.split(","):
        if not item.strip():
            continue
        if "=" not in item:
            raise ValueError(f"flags: {ENV_VAR} item {item!r} is not of the form NAME=value")
        key, value = item.split("=", 1)
        if not key.strip():
            raise ValueError(f"flags: {ENV_VAR} item {item!r} has no flag name")
        flags[key.strip()] = parse_value(key.strip(), value)
    return flags


class Environment:
    """The flag registry: ``register_flag``, ``get``, ``set``, ``reset``."""

    def __init__(self) -> None:
        self._evaluators: dict[str, Callable[[], FlagValue]] = {}
        self._hooks: dict[str, Callable[[FlagValue], None]] = {}
        self._values: dict[str, FlagValue] = {}
        self._overrides = self._read_overrides()
        #: Bumped whenever a flag may have changed value (set, reset, registered with an override): what
        #: caches a decision made from flags keeps the version it was made at.
        self.version = 0

    @staticmethod
    def _read_overrides() -> dict[str, FlagValue]:
        return parse_flags(os.environ.get(ENV_VAR, ""))

    def register_flag(
        self,
        name: str,
        evaluator: Callable[[], FlagValue],
        set_hook: Callable[[FlagValue], None] | None = None,
    ) -> None:
        if name in self._evaluators:
            logger.warning("flags: flag '%s' is registered again; the new evaluator wins", name)
        self._evaluators[name] = evaluator
        self.version += 1
        if set_hook is not None:
            self._hooks[name] = set_hook
        if name in self._overrides:
            self._values[name] = self._overrides[name]
            if set_hook is not None:
                set_hook(self._values[name])

    def _known(self, name: str) -> None:
        if name not in self._evaluators:
            known = ", ".join(sorted(self._evaluators))
            raise KeyError(f"flags: unknown flag '{name}' (registered flags: {known})")

    def get(self, name: str) -> FlagValue:
        value = self._values.get(name)
        if value is None:
            self._known(name)
            value = self._values[name] = self._evaluators[name]()
        return value

    def get_bool(self, name: str) -> bool:
        value = self.get(name)
        if not isinstance(value, bool):
            raise TypeError(f"flags: flag '{name}' is not a bool, got {value!r}")
        return value

    def get_number(self, name: str) -> float:
        value = self.get(name)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise TypeError(f"flags: flag '{name}' is not a number, got {value!r}")
        return value

    def set(self, name: str, value: FlagValue) -> None:
        self._known(name)
        self._values[name] = value
        self.version += 1
        hook = self._hooks.get(name)
        if hook is not None:
            hook(value)

    def set_flags(self, flags: dict[str, FlagValue]) -> None:
        for name, value in flags.items():
            self.set(name, value)

    def has(self, name: str) -> bool:
        return name in self._evaluators

    def get_flags(self) -> dict[str, FlagValue]:
        """The flags evaluated so far (as TF.js's ``getFlags``)."""
        return dict(self._values)

    def set_platform(self, platform_name: str, platform: Any) -> None:
        """Record the platform (TF.js's ``setPlatform``): an object with ``now()``, ``fetch()``..."""
        if getattr(self, "platform_name", None) not in (None, platform_name):
            logger.warning("platform %s is replaced by %s", self.platform_name, platform_name)
        self.platform_name = platform_name
        self.platform = platform

    def features(self) -> dict[str, FlagValue]:
        """Every registered flag, evaluated."""
        return {name: self.get(name) for name in sorted(self._evaluators)}

    def reset(self) -> None:
        """Forget set values and re-read ``NDFLOW_FLAGS``; set hooks see the new values."""
        self._values.clear()
        self.version += 1
        self._overrides = self._read_overrides()
        for name, value in self._overrides.items():
            if name in self._evaluators:
                self._values[name] = value
        for name, hook in self._hooks.items():
            hook(self.get(name))


_ENV = Environment()


def env() -> Environment:
    return _ENV


_ENV.register_flag("IS_TEST", lambda: False)
_ENV.register_flag("CHECK_COMPUTATION_FOR_ERRORS", lambda: True)
_ENV.register_flag("DEPRECATION_WARNINGS_ENABLED", lambda: True)
#: The most bytes one weight may take, in a loaded manifest or a layer's add_weight (untrusted model files).
_ENV.register_flag("MAX_WEIGHT_BYTES", lambda: 4 * 1024**3)
#: Layers models run by the graph-model optimizer and program (layers/engine/compiled_inference.py).
_ENV.register_flag("LAYERS_COMPILE", lambda: True)
#: Training steps recorded once per batch signature and replayed (layers/engine/compiled_training.py).
_ENV.register_flag("TRAIN_COMPILE", lambda: True)
