"""Names as TF.js gives them: layer uids (``dense_Dense1``), name scopes, unique tensor names.

Layers are named ``<snake class name>_<ClassName><n>`` (``dense_Dense1``), models ``sequential_1`` /
``model1``, inputs ``input1``; weights get the name scope of the layer that builds them
(``dense_Dense1/kernel``), and a second weight asking for a taken name gets ``_1``, ``_2``, ...
Counters are per process, as in TF.js. ``reset_uids()`` restarts them (tests use it for
reproducible names); it never hands out a name still held by a live variable.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager

from ..core.engine import ENGINE

_uid_prefixes: dict[str, int] = {}
_name_scope_stack: list[str] = []
_name_map: dict[str, int] = {}
_TENSOR_NAME = re.compile(r"^[A-Za-z0-9][-A-Za-z0-9._/]*$")


def to_snake_case(name: str) -> str:
    """TF.js's ``toSnakeCase``: ``'glorotUniform'`` -> ``'glorot_uniform'``, ``'Dense'`` -> ``'dense'``."""
    intermediate = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    insecure = re.sub(r"([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return insecure if not insecure.startswith("_") else "private" + insecure


def to_camel_case(identifier: str) -> str:
    """TF.js's ``toCamelCase``: ``'fan_avg'`` -> ``'fanAvg'`` (strings without ``_`` are unchanged)."""
    if len(identifier) <= 1 or "_" not in identifier:
        return identifier
    return re.sub(r"_+(\w|$)", lambda m: m.group(1).upper(), identifier)


def get_uid(prefix: str = "") -> str:
    """``prefix`` followed by how many times it was asked for: ``get_uid('input')`` -> ``'input1'``."""
    _uid_prefixes[prefix] = _uid_prefixes.get(prefix, 0) + 1
    return f"{prefix}{_uid_prefixes[prefix]}"


@contextmanager
def name_scope(name: str) -> Iterator[None]:
    """Prefix the names of weights and symbolic tensors created inside with ``name/``."""
    _name_scope_stack.append(name)
    try:
        yield
    finally:
        _name_scope_stack.pop()


def is_valid_tensor_name(name: str) -> bool:
    """Whether ``name`` is a valid weight / tensor name (TF's rule: ``[A-Za-z0-9][-A-Za-z0-9._/]*``)."""
    return bool(_TENSOR_NAME.match(name))


def get_scoped_tensor_name(name: str) -> str:
    """``name`` under the current name scopes (``dense_Dense1/kernel``)."""
    if not is_valid_tensor_name(name):
        raise ValueError(f"not a valid tensor name: {name!r} (expected [A-Za-z0-9][-A-Za-z0-9._/]*)")
    prefix = "/".join(_name_scope_stack)
    return f"{prefix}/{name}" if prefix else name


def get_unique_tensor_name(scoped_name: str) -> str:
    """``scoped_name`` the first time, then ``scoped_name_1``, ``_2``, ... (never a live variable's name)."""
    if not is_valid_tensor_name(scoped_name):
        raise ValueError(f"not a valid tensor name: {scoped_name!r}")
    while True:
        index = _name_map.get(scoped_name, 0)
        _name_map[scoped_name] = index + 1
        result = scoped_name if index == 0 else f"{scoped_name}_{index}"
        if index > 0:
            _name_map[result] = 1
        if result not in ENGINE.variables:
            return result


def reset_uids() -> None:
    """Restart the layer / model / tensor name counters (names repeat, as in a fresh TF.js process)."""
    _uid_prefixes.clear()
    _name_map.clear()
