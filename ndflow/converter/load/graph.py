"""Nodes of a TF.js graph model (``modelTopology.node``: a GraphDef as JSON) and their attributes.

A node's attributes are TF ``AttrValue`` messages in JSON: ``{"i": "3"}``, ``{"f": 0.5}``,
``{"b": true}``, ``{"s": "<base64>"}``, ``{"type": "DT_FLOAT"}``, ``{"shape": {"dim": [...]}}``,
``{"list": {"i": [...], "s": [...], ...}}``, ``{"tensor": {...}}``. :class:`Node` reads them with
TF's defaults when absent.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

# TF DataType names -> ndflow dtypes (TF.js has no int64/float64: they become int32/float32).
TF_DTYPES = {
    "DT_FLOAT": "float32", "DT_DOUBLE": "float32", "DT_HALF": "float32", "DT_BFLOAT16": "float32",
    "DT_INT32": "int32", "DT_INT64": "int32", "DT_INT16": "int32", "DT_INT8": "int32", "DT_UINT8": "int32",
    "DT_UINT16": "int32", "DT_UINT32": "int32", "DT_UINT64": "int32",
    "DT_BOOL": "bool", "DT_STRING": "string", "DT_COMPLEX64": "complex64", "DT_COMPLEX128": "complex64",
}  # fmt: skip


def parse_input(ref: str) -> tuple[str, int, bool]:
    """``"name:2"`` -> (name, 2, False); ``"^name"`` (a control dependency) -> (name, 0, True)."""
    control = ref.startswith("^")
    ref = ref[1:] if control else ref
    name, _, index = ref.partition(":")
    # Names like "while/Merge:output:0" (function outputs) keep their last number as the index.
    if index and ":" in index:
        index = index.rsplit(":", 1)[1]
    if index and not (index.isascii() and index.isdigit()):
        raise ValueError(f"graph model: tensor name {ref!r} has an invalid output index {index!r} (want an int >= 0)")
    return name, int(index) if index else 0, control


@dataclass
class Node:
    """One graph node: ``name``, TF ``op`` type, ``inputs`` (data inputs, in order), ``controls``
    (control dependencies), and raw ``attr``. Decoded string and list attributes are memoized (mappers
    read them on every run), so ``attr`` must not change once read."""

    name: str
    op: str
    inputs: list[tuple[str, int]] = field(default_factory=list)
    controls: list[str] = field(default_factory=list)
    attr: dict[str, Any] = field(default_factory=dict)
    device: str = ""
    _memo: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> Node:
        if "name" not in d or "op" not in d:
            raise ValueError(f"graph model: a node needs 'name' and 'op', got keys {sorted(map(str, d))}")
        node = d["name"]
        if not isinstance(node, str) or not node:
            raise ValueError(f"graph model: a node's 'name' must be a non-empty string, got {node!r}")
        for key, kind, types in (("op", "a string", str), ("input", "a list", list), ("attr", "an object", dict)):
            if key in d and not isinstance(d[key], types) or key == "op" and not d[key]:
                raise ValueError(f"graph model: node '{node}': '{key}' must be {kind}, got {d[key]!r:.80}")
        inputs, controls = [], []
        for ref in d.get("input", []):
            if not isinstance(ref, str):
                raise ValueError(f"graph model: node '{node}': inputs must be strings, got {ref!r:.80}")
            try:
                name, index, control = parse_input(ref)
            except ValueError as exc:
                raise ValueError(f"graph model: node '{node}': {str(exc).removeprefix('graph model: ')}") from None
            (controls.append(name) if control else inputs.append((name, index)))
        return cls(d["name"], d["op"], inputs, controls, dict(d.get("attr", {})), d.get("device", ""))

    # -- attributes ------------------------------------------------------------------------------
    def has(self, name: str) -> bool:
        return name in self.attr

    def _value(self, name: str, kind: str) -> Any:
        value = self.attr.get(name)
        return None if value is None else value.get(kind)

    def int(self, name: str, default: int | None = None) -> int | None:
        v = self._value(name, "i")
        return default if v is None else int(v)

    def float(self, name: str, default: float | None = None) -> float | None:
        v = self._value(name, "f")
        return default if v is None else float(v)

    def bool(self, name: str, default: bool | None = None) -> bool | None:
        v = self._value(name, "b")
        return default if v is None else bool(v)

    def str(self, name: str, default: str | None = None) -> str | None:
        key = ("s", name)
        try:
            v = self._memo[key]
        except KeyError:
            raw = self._value(name, "s")
            v = self._memo[key] = None if raw is None else decode_string(raw)
        return default if v is None else v

    def dtype(self, name: str, default: str | None = None) -> str | None:
        v = self._value(name, "type")
        if v is None:
            return default
        if v not in TF_DTYPES:
            raise ValueError(f"graph model: node '{self.name}' ({self.op}) has unsupported dtype {v} in '{name}'")
        return TF_DTYPES[v]

    def _list(self, name: str, kind: str) -> list[Any] | None:
        value = self.attr.get(name)
        if value is None or "list" not in value:
            return None
        return list(value["list"].get(kind, []))

    def ints(self, name: str, default: list[int] | None = None) -> list[int] | None:
        key = ("li", name)
        try:
            v = self._memo[key]
        except KeyError:
            raw = self._list(name, "i")
            v = self._memo[key] = None if raw is None else tuple(int(x) for x in raw)
        return default if v is None else list(v)

    def floats(self, name: str, default: list[float] | None = None) -> list[float] | None:
        v = self._list(name, "f")
        return default if v is None else [float(x) for x in v]

    def strs(self, name: str, default: list[str] | None = None) -> list[str] | None:
        key = ("ls", name)
        try:
            v = self._memo[key]
        except KeyError:
            raw = self._list(name, "s")
            v = self._memo[key] = None if raw is None else tuple(decode_string(x) for x in raw)
        return default if v is None else list(v)

    def dtypes(self, name: str, default: list[str] | None = None) -> list[str] | None:
        v = self._list(name, "type")
        return default if v is None else [TF_DTYPES.get(x, "float32") for x in v]

    def shape(self, name: str, default: list[int] | None = None) -> list[int] | None:
        """A ``TensorShapeProto``: dims (-1 for unknown); None for an unknown rank."""
        v = self._value(name, "shape")
        if v is None:
            return default
        if v.get("unknownRank"):
            return None
        return [int(d.get("size", -1)) for d in v.get("dim", [])]

    def func_name(self, name: str) -> str | None:
        v = self._value(name, "func")
        return None if v is None else v.get("name")

    def __repr__(self) -> str:
        return f"Node({self.name!r}, {self.op})"


def decode_string(value: str) -> str:
    """AttrValue ``s`` fields are base64 in the JSON."""
    try:
        return base64.b64decode(value).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return value
