"""``nf.data.csv``: a dataset of the rows of a CSV file (tfjs-data's ``tf.data.csv`` and ``CSVDataset``).

Each element is one row, a dict of column name -> value in the file's column order. When a column config
marks columns as labels, an element is ``{'xs': features, 'ys': labels}`` (both dicts, even for one label), as
in TF.js. Values:

- an empty field: the column's ``default`` when it has one, an error when it is ``required`` or a label,
  otherwise None (TF.js's ``undefined``);
- a field that JavaScript's ``Number()`` reads as a number: a float (see :mod:`ndflow.data.csv_parse`),
  ``Math.floor``-ed to an int for dtype ``'int32'``, 1 or 0 for dtype ``'bool'`` (1 for ``'1'`` and ``true`` in
  any case, 0 for anything else). As in TF.js, dtype ``'string'`` does not keep a number as text;
- other fields: the text (1 or 0 for dtype ``'bool'``).

The file is read lazily, in chunks, when an iterator asks for rows: only the header line is read before
that, when the column names are first needed. The number of rows is not known in advance (``size`` None).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from .byte_sources import DEFAULT_CHUNK_SIZE, DataSource, data_source
from .csv_config import ColumnConfig, CSVConfig, csv_config, csv_config_from_dict
from .csv_parse import js_number, split_row
from .dataset import Dataset
from .lazy_iterator import IteratorResult, LazyIterator
from .text_lines import LineIterator

__all__ = ["CSVDataset", "ColumnNames", "csv"]

_WHAT = "nf.data.csv"
_SHOWN = 200  # characters of a line quoted in an error message


def _show(line: str) -> str:
    return repr(line if len(line) <= _SHOWN else line[:_SHOWN] + "...")


class ColumnNames(list):
    """The column names (a list), also awaitable: ``await ds.column_names()`` gives the list itself."""

    def __await__(self):
        return self
        yield  # pragma: no cover - makes this a generator


class _Column:
    """What ``_make_element`` needs about one kept column."""

    __slots__ = ("config", "index", "name")

    def __init__(self, index: int, name: str, config: ColumnConfig | None) -> None:
        self.index, self.name, self.config = index, name, config


class CSVDataset(Dataset[dict]):
    """The rows of a CSV source (see the module docstring); made by :func:`csv`."""

    size = None

    def __init__(self, input: Any, config: CSVConfig | None = None, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        self.input: DataSource = data_source(input, _WHAT, chunk_size)
        self.config = config or CSVConfig()
        self._full_names: tuple[str, ...] | None = self.config.column_names
        self._validated = False
        self._pending: LineIterator | None = None  # a one-pass source's lines, already past the header
        self._columns: list[_Column] = []
        self._has_labels = False

    # Column names ---------------------------------------------------------------------------------------------
    def column_names(self) -> ColumnNames:
        """The names of the columns an element holds: the configured ones with ``configured_columns_only``,
        otherwise ``column_names`` or the header's. Reads the header line when needed; awaitable too."""
        self._validate()
        if self.config.configured_columns_only:
            return ColumnNames(self.config.column_configs or {})
        return ColumnNames(self._full_names or ())

    def _read_header(self) -> tuple[str, ...] | None:
        if not self.config.has_header:
            return None
        lines = LineIterator(self.input.iterator(), _WHAT)
        try:
            first = lines.next()
        except BaseException:
            lines.close()
            raise
        if first.done:
            lines.close()
            raise ValueError(f"{_WHAT}: no data was found for CSV parsing in {self.input.name} (it is empty)")
        header = split_row(first.value, self.config.delimiter, self.config.delim_whitespace)  # type: ignore[arg-type]
        if self.input.reopenable:
            lines.close()
        else:
            self._pending = lines
        return tuple(header)

    def _validate(self) -> None:
        if self._validated:
            return
        from_file = self._read_header()
        names = self._full_names
        if names is None and from_file is None:
            raise ValueError(
                f"{_WHAT}: column_names must be given when has_header is False (there is no header line to read)"
            )
        if names is not None and from_file is not None and len(names) != len(from_file):
            raise ValueError(
                f"{_WHAT}: the length of column_names ({len(names)}) does not match the length of the header line "
                f"read from {self.input.name} ({len(from_file)}: {', '.join(from_file)})"
            )
        names = names if names is not None else from_file
        assert names is not None
        seen: set[str] = set()
        duplicates = [n for n in names if n in seen or seen.add(n)]  # type: ignore[func-returns-value]
        if duplicates:
            raise ValueError(f"{_WHAT}: duplicate column names found in {self.input.name}: {sorted(set(duplicates))}")
        configs = self.config.column_configs or {}
        for key in configs:
            if key not in seen:
                raise ValueError(
                    f"{_WHAT}: the key {key!r} given in column_configs does not match any of the column names "
                    f"({', '.join(names)}) of {self.input.name}"
                )
        self._full_names = names
        only = self.config.configured_columns_only
        self._columns = [_Column(i, n, configs.get(n)) for i, n in enumerate(names) if not only or n in configs]
        self._has_labels = any(c.config is not None and c.config.is_label for c in self._columns)
        self._validated = True

    # Iteration ------------------------------------------------------------------------------------------------
    def iterator(self) -> _CSVIterator:
        """A fresh iterator over the rows; checks the column names (reading the header) first."""
        self._validate()
        if self._pending is not None:
            lines, self._pending = self._pending, None
        else:
            lines = LineIterator(self.input.iterator(), _WHAT)
            if self.config.has_header:
                try:
                    lines.next()
                except BaseException:
                    lines.close()
                    raise
        return _CSVIterator(self, lines)

    def _make_element(self, line: str, line_number: int) -> dict:
        cfg = self.config
        values = split_row(line, cfg.delimiter, cfg.delim_whitespace)
        names = self._full_names
        assert names is not None
        if len(values) != len(names):
            raise ValueError(
                f"{_WHAT}: invalid row in CSV file {self.input.name}, line {line_number}: should have {len(names)} "
                f"elements in a row ({', '.join(names)}), but got {len(values)}: {_show(line)}"
            )
        features: dict[str, Any] = {}
        labels: dict[str, Any] = {}
        for column in self._columns:
            config = column.config
            text = values[column.index]
            if text == "":
                if config is not None and config.default is not None:
                    value = config.default
                elif config is not None and (config.required or config.is_label):
                    kind = "label column" if config.is_label else "required column"
                    raise ValueError(
                        f"{_WHAT}: {kind} {column.name!r} is empty in {self.input.name}, line {line_number}: "
                        f"{_show(line)}"
                    )
                else:
                    value = None
            else:
                value = _parse_value(text, config.dtype if config is not None else None)
            if config is not None and config.is_label:
                labels[column.name] = value
            else:
                features[column.name] = value
        return {"xs": features, "ys": labels} if labels else features


def _parse_value(text: str, dtype: str | None) -> Any:
    number = js_number(text)
    if dtype == "bool":
        return 1 if text == "1" or text.lower() == "true" else 0
    if number is None:
        return text
    if dtype == "int32":
        return int(math.floor(number)) if math.isfinite(number) else number
    return number


class _CSVIterator(LazyIterator[dict]):
    """Rows of a :class:`CSVDataset`, parsed one line at a time."""

    def __init__(self, dataset: CSVDataset, lines: LineIterator) -> None:
        self._dataset = dataset
        self._lines = lines

    @property
    def bytes_read(self) -> int:
        """Bytes read from the source so far."""
        return self._lines.bytes_read

    def next(self) -> IteratorResult[dict]:
        if self._closed:
            return IteratorResult(None, True)
        try:
            result = self._lines.next()
            if result.done:
                self.close()
                return IteratorResult(None, True)
            return IteratorResult(self._dataset._make_element(result.value, self._lines.line_number), False)
        except BaseException:
            self.close()
            raise

    async def next_async(self) -> IteratorResult[dict]:
        """As :meth:`next`, awaiting the source's chunks (an http(s) source is read in a worker thread)."""
        if self._closed:
            return IteratorResult(None, True)
        try:
            result = await self._lines.next_async()
            if result.done:
                self.close()
                return IteratorResult(None, True)
            return IteratorResult(self._dataset._make_element(result.value, self._lines.line_number), False)
        except BaseException:
            self.close()
            raise

    def summary(self) -> str:
        return f"{self._lines.summary()} -> CSV"

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._lines.close()


def csv(
    source: Any,
    has_header: bool | Mapping[str, Any] = True,
    column_names: list[str] | None = None,
    column_configs: Mapping[str, Any] | None = None,
    configured_columns_only: bool = False,
    delimiter: str | None = None,
    delim_whitespace: bool = False,
) -> CSVDataset:
    """A dataset of the rows of a CSV source (tfjs-data's ``tf.data.csv``).

    ``source``: a local path, a ``file://`` URL, an http(s) URL (or ``urllib.request.Request``), bytes, a
    file-like object, or a :class:`~ndflow.data.byte_sources.DataSource`; it is streamed in chunks.
    ``has_header``: the first line holds the column names. ``column_names``: names to use instead (required
    without a header; with one, as many as it has). ``column_configs``: column name -> dict with ``required``,
    ``dtype`` (``'float32'``, ``'int32'``, ``'bool'``, ``'string'``), ``default``, ``is_label``.
    ``configured_columns_only``: keep only the configured columns. ``delimiter``: one character, ``','`` by
    default. ``delim_whitespace``: split at runs of spaces (then give no delimiter).

    TF.js's config object ports as a dict in place of ``has_header``, with its camelCase keys or these names:
    ``nf.data.csv(url, {'columnConfigs': {'medv': {'isLabel': True}}})``.
    """
    if isinstance(has_header, Mapping):
        given = {
            "column_names": column_names,
            "column_configs": column_configs,
            "configured_columns_only": configured_columns_only or None,
            "delimiter": delimiter,
            "delim_whitespace": delim_whitespace or None,
        }
        extra = [k for k, v in given.items() if v is not None]
        if extra:
            raise TypeError(f"{_WHAT}: pass the options either as a config dict or as keywords, not both ({extra})")
        config = csv_config_from_dict(has_header, _WHAT)
    else:
        config = csv_config(
            _WHAT, has_header, column_names, column_configs, configured_columns_only, delimiter, delim_whitespace
        )
    return CSVDataset(source, config)
