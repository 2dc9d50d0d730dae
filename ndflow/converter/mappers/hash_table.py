"""Hash-table ops (TF.js converter category ``hash_table``): ``HashTable(V2)`` makes a table, the
``InitializeTable``/``LookupTableImport`` ops fill it, ``LookupTableFind`` reads it and
``LookupTableSize`` counts it.

Tables live in the model's resource manager, ``ctx.resources`` (``add_hash_table``,
``get_hash_table_handle_by_name``, ``get_hash_table_by_id``), shared by the model's initializer
graph and its main graph; a table is known by its kept scalar ``handle`` tensor. Unlike TF.js,
these mappers are synchronous (the values are read with ``data_sync``).
"""

from __future__ import annotations

import itertools
from typing import Any

from ... import ops as nf
from ...core.globals import keep
from ...core.tensor import Tensor
from ..load.graph import Node
from ._util import fail, mapper

_ids = itertools.count(1)


class HashTable:
    """A key -> value table with a kept int32 scalar ``handle`` (TF.js ``HashTable``)."""

    def __init__(self, key_dtype: str, value_dtype: str) -> None:
        """An empty table; its handle is a fresh kept scalar."""
        self.key_dtype = key_dtype
        self.value_dtype = value_dtype
        self.handle: Tensor = keep(nf.scalar(next(_ids), "int32"))
        self.table: dict[Any, Any] = {}

    def _check(self, keys: Tensor, values: Tensor | None, op: str) -> None:
        """Keys and values must have the table's dtypes."""
        if keys.dtype != self.key_dtype:
            raise TypeError(f"{op}: expected keys of dtype {self.key_dtype}, got {keys.dtype}")
        if values is not None and values.dtype != self.value_dtype:
            raise TypeError(f"{op}: expected values of dtype {self.value_dtype}, got {values.dtype}")

    def import_(self, keys: Tensor, values: Tensor) -> Tensor:
        """Insert ``keys[i] -> values[i]`` (later pairs win); returns the handle."""
        self._check(keys, values, "LookupTableImport")
        if keys.size != values.size:
            raise ValueError(f"LookupTableImport: {keys.size} keys but {values.size} values")
        self.table.update(zip(keys.data_sync().tolist(), values.data_sync().tolist(), strict=True))
        return self.handle

    def find(self, keys: Tensor, default_value: Tensor) -> Tensor:
        """The value of each key (``default_value`` for a missing one), shaped like ``keys``."""
        self._check(keys, default_value, "LookupTableFind")
        default = default_value.data_sync().tolist()[0]
        found = [self.table.get(k, default) for k in keys.data_sync().tolist()]
        return nf.tensor(found, keys.shape, self.value_dtype)

    def size(self) -> Tensor:
        """The number of entries, an int32 scalar."""
        return nf.scalar(len(self.table), "int32")

    def clear_and_close(self) -> None:
        """Forget the entries (the resource manager frees the handle)."""
        self.table.clear()


def _resources(node: Node, ctx: Any) -> Any:
    """The model's resource manager, ``ctx.resources``."""
    resources = getattr(ctx, "resources", None)
    if resources is None:
        raise fail(node, "hash tables need the execution context's resource manager (ctx.resources)")
    return resources


def _table(node: Node, handle: Tensor, ctx: Any) -> HashTable:
    """The table a handle tensor names."""
    table = _resources(node, ctx).get_hash_table_by_id(handle.id)
    if table is None:
        raise fail(node, "its table handle names no hash table")
    return table


@mapper("HashTable", "HashTableV2")
def hash_table(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The handle of this node's table, made on first use (``key_dtype``, ``value_dtype``)."""
    resources = _resources(node, ctx)
    handle = resources.get_hash_table_handle_by_name(node.name)
    if handle is not None:
        return handle
    table = HashTable(node.dtype("key_dtype", "string"), node.dtype("value_dtype", "int32"))
    resources.add_hash_table(node.name, table)
    return table.handle


@mapper("InitializeTable", "InitializeTableV2", "LookupTableImport", "LookupTableImportV2")
def lookup_table_import(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """Fill the table with ``(keys, values)``; outputs the handle."""
    handle, keys, values = inputs
    return _table(node, handle, ctx).import_(keys, values)


@mapper("LookupTableFind", "LookupTableFindV2")
def lookup_table_find(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The values of ``keys`` (``default_value`` where missing)."""
    handle, keys, default = inputs
    return _table(node, handle, ctx).find(keys, default)


@mapper("LookupTableSize", "LookupTableSizeV2")
def lookup_table_size(node: Node, inputs: list[Any], ctx: Any) -> Tensor:
    """The number of entries in the table (int32; TF's is int64)."""
    return _table(node, inputs[0], ctx).size()
