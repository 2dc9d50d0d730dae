"""``TextLineDataset``: the lines of a UTF-8 text source, read chunk by chunk (tfjs-data's ``TextLineDataset``).

Lines are split at ``\\n`` only, as TF.js does; one ``\\r`` at the end of a line is dropped (Windows line ends).
A line may fall across any number of chunks, and so may a multi-byte character. An empty last line (the text
ends with ``\\n``) is not a line; empty lines elsewhere are. A UTF-8 byte order mark at the start is dropped, as a
browser's ``TextDecoder`` drops it. Bytes that are not UTF-8 raise a ``ValueError`` naming the source and the
byte offset.
"""

from __future__ import annotations

import codecs
from typing import Any

from .byte_sources import DEFAULT_CHUNK_SIZE, ByteChunkIterator, DataSource, data_source
from .dataset import Dataset
from .lazy_iterator import IteratorResult, LazyIterator

__all__ = ["LineIterator", "TextLineDataset"]


class LineIterator(LazyIterator[str]):
    """The lines of a byte-chunk iterator; ``line_number`` is the 1-based number of the line last returned."""

    def __init__(self, chunks: ByteChunkIterator, what: str = "TextLineDataset") -> None:
        self._chunks = chunks
        self._what = what
        self._decoder = codecs.getincrementaldecoder("utf-8")("strict")
        self._lines: list[str] = []
        self._pos = 0
        self._carry = ""
        self._started = False
        self._offset = 0  # bytes decoded so far
        self.line_number = 0

    @property
    def name(self) -> str:
        """The source's name, for error messages."""
        return self._chunks.name

    @property
    def bytes_read(self) -> int:
        """Bytes read from the source so far."""
        return self._chunks.bytes_read

    def _decode(self, chunk: bytes, final: bool) -> str:
        try:
            text = self._decoder.decode(chunk, final)
        except UnicodeDecodeError as e:
            self.close()
            at = self._offset + e.start
            raise ValueError(f"{self._what}: {self.name} is not UTF-8 text (invalid byte at offset {at})") from None
        self._offset += len(chunk)
        if not self._started and text:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
        return text

    def _feed(self, result: IteratorResult[bytes]) -> bool | None:
        """Take one chunk: True when lines are queued, False at the end, None when more chunks are needed."""
        if result.done:
            tail = self._carry + self._decode(b"", True)
            self._carry = ""
            if tail == "":
                return False
            self._lines, self._pos = [tail], 0
            return True
        parts = (self._carry + self._decode(result.value, False)).split("\n")  # type: ignore[arg-type]
        self._carry = parts.pop()
        if parts:
            self._lines, self._pos = parts, 0
            return True
        return None

    def _take(self) -> IteratorResult[str]:
        line = self._lines[self._pos]
        self._pos += 1
        self.line_number += 1
        if line.endswith("\r"):
            line = line[:-1]
        return IteratorResult(line, False)

    def _finish(self) -> IteratorResult[str]:
        self.close()
        return IteratorResult(None, True)

    def next(self) -> IteratorResult[str]:
        if self._closed:
            return IteratorResult(None, True)
        while self._pos >= len(self._lines):
            fed = self._feed(self._chunks.next())
            if fed is False:
                return self._finish()
        return self._take()

    async def next_async(self) -> IteratorResult[str]:
        """As :meth:`next`, reading the chunks with ``await`` (a network source then leaves the loop free)."""
        if self._closed:
            return IteratorResult(None, True)
        while self._pos >= len(self._lines):
            fed = self._feed(await self._chunks.next_async())
            if fed is False:
                return self._finish()
        return self._take()

    def summary(self) -> str:
        return f"{self._chunks.summary()} -> Lines"

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._lines = []
            self._chunks.close()


class TextLineDataset(Dataset[str]):
    """The lines of a text source: a path, ``file://`` or http(s) URL, bytes, a file-like object or a
    :class:`~ndflow.data.byte_sources.DataSource`. The number of lines is not known in advance (``size`` None)."""

    size = None

    def __init__(self, input: Any, chunk_size: int = DEFAULT_CHUNK_SIZE) -> None:
        self.input: DataSource = data_source(input, "TextLineDataset", chunk_size)

    def iterator(self) -> LineIterator:
        return LineIterator(self.input.iterator(), "TextLineDataset")
