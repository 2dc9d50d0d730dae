"""The configuration of ``nf.data.csv`` (tfjs-data's ``CSVConfig`` and ``ColumnConfig``), checked up front.

Keywords take snake_case names; a dict may use either those or TF.js's camelCase keys (``hasHeader``,
``columnNames``, ``columnConfigs``, ``configuredColumnsOnly``, ``delimiter``, ``delimWhitespace``; in a column
config ``required``, ``dtype``, ``default``, ``isLabel``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["DTYPES", "CSVConfig", "ColumnConfig", "column_config", "csv_config"]

#: The dtypes a column config may name.
DTYPES = ("float32", "int32", "bool", "string")

_CSV_KEYS = {
    "hasHeader": "has_header",
    "columnNames": "column_names",
    "columnConfigs": "column_configs",
    "configuredColumnsOnly": "configured_columns_only",
    "delimiter": "delimiter",
    "delimWhitespace": "delim_whitespace",
}
_COLUMN_KEYS = {"required": "required", "dtype": "dtype", "default": "default", "isLabel": "is_label"}


@dataclass(frozen=True)
class ColumnConfig:
    """How one column is read: ``required`` (an empty value is an error), ``dtype`` (how a value is parsed),
    ``default`` (the value of an empty field; None: no default), ``is_label`` (the column goes to ``ys``)."""

    required: bool = False
    dtype: str | None = None
    default: Any = None
    is_label: bool = False


@dataclass(frozen=True)
class CSVConfig:
    """The whole configuration of a CSV dataset (see :func:`ndflow.data.csv.csv`)."""

    has_header: bool = True
    column_names: tuple[str, ...] | None = None
    column_configs: dict[str, ColumnConfig] | None = field(default=None)
    configured_columns_only: bool = False
    delimiter: str = ","
    delim_whitespace: bool = False


def _bool(value: Any, what: str, name: str) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"{what}: {name} must be True or False, got {value!r}")
    return value


def _normalize_keys(config: Mapping[str, Any], names: dict[str, str], what: str, kind: str) -> dict[str, Any]:
    allowed = set(names) | set(names.values())
    out: dict[str, Any] = {}
    for key, value in config.items():
        if key not in allowed:
            raise ValueError(f"{what}: unknown {kind} key {key!r}; expected one of {sorted(set(names.values()))}")
        snake = names.get(key, key)
        if snake in out:
            raise ValueError(f"{what}: {kind} key {snake!r} given twice (in camelCase and snake_case)")
        out[snake] = value
    return out


def column_config(name: str, config: Any, what: str) -> ColumnConfig:
    """The :class:`ColumnConfig` of column ``name`` from a dict (or a ColumnConfig, returned as is)."""
    if isinstance(config, ColumnConfig):
        return config
    if not isinstance(config, Mapping):
        raise TypeError(f"{what}: column_configs[{name!r}] must be a dict, got {type(config).__name__}")
    c = _normalize_keys(config, _COLUMN_KEYS, what, f"column_configs[{name!r}]")
    dtype = c.get("dtype")
    if dtype is not None and dtype not in DTYPES:
        raise ValueError(f"{what}: column_configs[{name!r}] dtype must be one of {list(DTYPES)}, got {dtype!r}")
    return ColumnConfig(
        required=_bool(c.get("required", False), what, f"column_configs[{name!r}] required"),
        dtype=dtype,
        default=c.get("default"),
        is_label=_bool(c.get("is_label", False), what, f"column_configs[{name!r}] is_label"),
    )


def csv_config(
    what: str,
    has_header: Any = True,
    column_names: Any = None,
    column_configs: Any = None,
    configured_columns_only: Any = False,
    delimiter: Any = None,
    delim_whitespace: Any = False,
) -> CSVConfig:
    """Check the options of ``nf.data.csv`` and return them as a :class:`CSVConfig`; ``what`` names the caller."""
    has_header = _bool(has_header, what, "has_header")
    if column_names is not None:
        if isinstance(column_names, (str, bytes)) or not all(isinstance(n, str) for n in column_names):
            raise TypeError(f"{what}: column_names must be a list of str, got {column_names!r}")
        column_names = tuple(column_names)
    configs = None
    if column_configs is not None:
        if not isinstance(column_configs, Mapping):
            raise TypeError(f"{what}: column_configs must be a dict of column name -> config, got {column_configs!r}")
        configs = {}
        for key, value in column_configs.items():
            if not isinstance(key, str):
                raise TypeError(f"{what}: column_configs keys must be column names (str), got {key!r}")
            configs[key] = column_config(key, value, what)
    configured_columns_only = _bool(configured_columns_only, what, "configured_columns_only")
    if configured_columns_only and not configs:
        raise ValueError(f"{what}: configured_columns_only=True needs column_configs naming the columns to keep")
    delim_whitespace = _bool(delim_whitespace, what, "delim_whitespace")
    if delim_whitespace:
        if delimiter is not None:
            raise ValueError(f"{what}: delimiter must not be given when delim_whitespace is True, got {delimiter!r}")
        delimiter = " "
    elif delimiter is None:
        delimiter = ","
    elif not isinstance(delimiter, str) or len(delimiter) != 1 or delimiter in '"\r\n':
        raise ValueError(
            f"{what}: delimiter must be one character other than a quote or a line break, got {delimiter!r}"
        )
    return CSVConfig(has_header, column_names, configs, configured_columns_only, delimiter, delim_whitespace)


def csv_config_from_dict(config: Mapping[str, Any], what: str) -> CSVConfig:
    """A :class:`CSVConfig` from a dict with TF.js's camelCase keys or the keyword names."""
    return csv_config(what, **_normalize_keys(config, _CSV_KEYS, what, "CSV config"))
