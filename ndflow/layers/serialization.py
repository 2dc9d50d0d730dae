"""Serialization as TF.js's ``tf.serialization``: ``Serializable``, ``register_class``, and Keras configs.

Every serializable class has a ``class_name`` (TF.js's static ``className``, the name written in
``model.json``: ``'Dense'``, ``'VarianceScaling'``, ``'relu'``) and a ``get_config()`` that returns
the Keras-format ("pythonic": snake_case keys) configuration; ``from_config`` rebuilds it.
``register_class(cls)`` makes a class known to ``deserialize`` by its ``class_name``, as
``tf.serialization.registerClass`` does; it can be used as a decorator. ``to_json`` writes JSON
as JavaScript's ``JSON.stringify`` does (``1`` not ``1.0``, ``1e-7`` not ``1e-07``, no spaces).
"""

from __future__ import annotations

import decimal
import inspect
import json
import math
from typing import Any, ClassVar

#: Registered classes by class name (TF.js's ``SerializationMap.classNameMap``).
_CLASS_NAME_MAP: dict[str, type] = {}
#: ``'pkg>name'`` registrations (TF.js's ``GLOBAL_CUSTOM_OBJECT``) and their reverse.
_CUSTOM_OBJECTS: dict[str, type] = {}
_CUSTOM_NAMES: dict[type, str] = {}


class Serializable:
    """Base of everything that has a Keras config: layers, initializers, regularizers, ..."""

    #: The name written in ``model.json`` (defaults to the Python class name).
    class_name: ClassVar[str] = "Serializable"

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "class_name" not in cls.__dict__:
            cls.class_name = cls.__name__

    def get_class_name(self) -> str:
        """The class name used in serialized configs."""
        return type(self).class_name

    def get_config(self) -> dict[str, Any]:
        """The Keras-format (snake_case) configuration."""
        return {}

    @classmethod
    def from_config(cls, config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Any:
        """An instance built from ``config`` (keyword arguments of the constructor)."""
        return cls(**config)


class SerializationMap:
    """TF.js's ``SerializationMap``: ``SerializationMap.get_map().class_name_map`` is the class registry."""

    _instance: SerializationMap | None = None

    def __init__(self) -> None:
        self.class_name_map = _CLASS_NAME_MAP

    @classmethod
    def get_map(cls) -> SerializationMap:
        """The one map."""
        if cls._instance is None:
            cls._instance = cls()
        return cls._instance

    @staticmethod
    def register(cls: type) -> None:
        """Register ``cls`` under its ``class_name``."""
        _CLASS_NAME_MAP[cls.class_name] = cls


def register_class(cls: type, pkg: str | None = None, name: str | None = None) -> type:
    """Make ``cls`` known to ``deserialize`` by its ``class_name``; returns ``cls`` (usable as a decorator)."""
    class_name = getattr(cls, "class_name", None)
    if not isinstance(class_name, str) or not class_name:
        raise ValueError(f"register_class: {cls!r} needs a non-empty string class_name attribute")
    _CLASS_NAME_MAP[class_name] = cls
    register_name = f"{'Custom' if pkg is None else pkg}>{class_name if name is None else name}"
    _CUSTOM_OBJECTS[register_name] = cls
    _CUSTOM_NAMES[cls] = register_name
    return cls


def get_registered_name(cls: type) -> str:
    """``'pkg>name'`` under which ``cls`` was registered, else its ``class_name``."""
    return _CUSTOM_NAMES.get(cls, getattr(cls, "class_name", cls.__name__))


def get_registered_class(class_name: str) -> type | None:
    """The class registered under ``class_name`` (None if unknown)."""
    return _CLASS_NAME_MAP.get(class_name)


def registered_class_names() -> list[str]:
    """Every registered class name, sorted."""
    return sorted(_CLASS_NAME_MAP)


def serialize_keras_object(instance: Serializable | None) -> dict[str, Any] | None:
    """``{'class_name': ..., 'config': ...}`` of an instance (None for None)."""
    if instance is None:
        return None
    return {"class_name": instance.get_class_name(), "config": instance.get_config()}


def unknown_class_error(kind: str, class_name: Any) -> ValueError:
    """The error for a class name nothing is registered under."""
    return ValueError(
        f"Unknown {kind}: {class_name}. This may be due to one of the following reasons:\n"
        f"1. The {kind} is defined in Python Keras (or elsewhere) and has not been ported to ndflow.\n"
        f"2. The custom {kind} is defined in Python but is not registered with "
        f"nf.serialization.register_class()."
    )


def _call_from_config(cls: type, config: dict[str, Any], custom_objects: dict, fast_weight_init: bool) -> Any:
    """``cls.from_config``, passing ``custom_objects`` / ``fast_weight_init`` where it accepts them."""
    from_config = cls.from_config
    try:
        params = inspect.signature(from_config).parameters
    except (TypeError, ValueError):
        params = {}
    accepts_all = any(p.kind is p.VAR_KEYWORD for p in params.values())
    kwargs: dict[str, Any] = {}
    if accepts_all or "custom_objects" in params:
        kwargs["custom_objects"] = custom_objects
    if accepts_all or "fast_weight_init" in params:
        kwargs["fast_weight_init"] = fast_weight_init
    return from_config(config, **kwargs)


def deserialize_keras_object(
    identifier: Any,
    module_objects: dict[str, type] | None = None,
    custom_objects: dict[str, Any] | None = None,
    kind: str = "object",
    fast_weight_init: bool = False,
) -> Any:
    """An instance from ``{'class_name', 'config'}``; a string identifier returns the registered class."""
    custom_objects = custom_objects or {}
    lookup = _CLASS_NAME_MAP if module_objects is None else module_objects
    if isinstance(identifier, str):
        cls = custom_objects.get(identifier) or lookup.get(identifier)
        if cls is None:
            raise unknown_class_error(kind, identifier)
        return cls
    if not isinstance(identifier, dict) or "class_name" not in identifier or "config" not in identifier:
        raise ValueError(f"{kind}: improper config format: {identifier!r}; 'class_name' and 'config' must be set")
    class_name = identifier["class_name"]
    cls = custom_objects.get(class_name) or lookup.get(class_name)
    if cls is None:
        raise unknown_class_error(kind, class_name)
    config = _convert_ndarray_scalars(dict(identifier["config"] or {}))
    return _call_from_config(cls, config, custom_objects, fast_weight_init)


def deserialize(config: dict[str, Any], custom_objects: dict[str, Any] | None = None) -> Any:
    """Any registered object (layer, model, initializer, ...) from its ``{'class_name', 'config'}``."""
    return deserialize_keras_object(config, custom_objects=custom_objects, kind="object")


def _convert_ndarray_scalars(config: Any) -> Any:
    """Keras's ``{'type': 'ndarray', 'value': 3}`` scalars become plain numbers (as TF.js does)."""
    if isinstance(config, dict):
        if config.get("type") == "ndarray" and isinstance(config.get("value"), int | float):
            return config["value"]
        return {k: _convert_ndarray_scalars(v) for k, v in config.items()}
    if isinstance(config, list):
        return [_convert_ndarray_scalars(v) for v in config]
    return config


# -- JSON as JavaScript writes it -----------------------------------------------------------------
def js_number(value: float) -> str:
    """A number as JavaScript's ``String(value)`` writes it (shortest round trip, JS exponent style)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if math.isnan(value) or math.isinf(value):
        return "null"  # JSON.stringify writes NaN and Infinity as null
    if value == 0:
        return "0"
    sign = "-" if value < 0 else ""
    digits, exponent = _shortest_digits(abs(value))
    n = exponent + 1  # position of the decimal point relative to the digits (ECMAScript's n)
    k = len(digits)
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * (-n) + digits
    exp = n - 1
    mantissa = digits[0] + ("." + digits[1:] if k > 1 else "")
    return f"{sign}{mantissa}e{'+' if exp >= 0 else '-'}{abs(exp)}"


def _shortest_digits(value: float) -> tuple[str, int]:
    """The shortest round-trip digits of a positive ``value`` and the exponent of its first digit."""
    _, digit_tuple, exp = decimal.Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple))
    first = len(digits) + int(exp) - 1  # exponent of the first digit, before stripping zeros
    stripped = digits.lstrip("0")
    first -= len(digits) - len(stripped)
    return stripped.rstrip("0") or "0", first


def to_json(value: Any) -> str:
    """``value`` (dicts, lists, str, numbers, bool, None) as ``JSON.stringify`` writes it."""
    if value is None:
        return "null"
    if isinstance(value, bool | int | float):
        return js_number(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        items = (f"{json.dumps(str(k), ensure_ascii=False)}:{to_json(v)}" for k, v in value.items())
        return "{" + ",".join(items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(to_json(v) for v in value) + "]"
    if hasattr(value, "item"):  # numpy scalars
        return to_json(value.item())
    raise TypeError(f"to_json: cannot serialize {type(value).__name__} {value!r}")


__all__ = [
    "Serializable", "SerializationMap", "deserialize", "deserialize_keras_object", "get_registered_class",
    "get_registered_name", "register_class", "registered_class_names", "serialize_keras_object", "to_json",
]  # fmt: skip
