"""Byte sources: a local file, bytes, a file-like object or an http(s) URL read as a stream of chunks.

These are tfjs-data's ``FileDataSource`` and ``URLDataSource``. Each ``iterator()`` opens the source afresh and
hands out :class:`ByteChunkIterator`, whose ``next()`` gives the next chunk of at most ``chunk_size`` bytes, so
a large file is never held whole. Unlike TF.js (which downloads a URL whole before its first chunk), a URL is
streamed from the open response. A ``file://`` URL names a local file, as in TF.js on Node: what follows
``file://`` is the path. A file-like object given by the caller is read from where it stood when the source was
made; it is seeked back there for each new iterator when it can be, and otherwise can be read only once. The
source never closes a file-like object it did not open.
"""

from __future__ import annotations

import asyncio
import os
import re
import urllib.error
import urllib.parse
import urllib.request
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from .lazy_iterator import IteratorResult, LazyIterator

__all__ = ["DEFAULT_CHUNK_SIZE", "ByteChunkIterator", "DataSource", "FileDataSource", "URLDataSource", "data_source"]

#: Bytes per chunk when none is given (TF.js reads 1 MiB chunks; smaller ones keep memory low while streaming).
DEFAULT_CHUNK_SIZE = 64 * 1024
#: Seconds an http(s) request may wait for the server before it fails.
URL_TIMEOUT_S = 60.0
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]+)://")


class DataSource(ABC):
    """Where a dataset's bytes come from (tfjs-data's ``DataSource``): ``iterator()`` gives a fresh stream."""

    #: A short name for error messages (the path, the URL, ``<bytes>``).
    name: str = "<source>"
    #: Whether ``iterator()`` may be called more than once.
    reopenable: bool = True

    @abstractmethod
    def iterator(self) -> ByteChunkIterator:
        """A fresh iterator over the source's bytes, in chunks."""


class ByteChunkIterator(LazyIterator[bytes]):
    """Chunks of at most ``chunk_size`` bytes from ``read(n)``; ``release()`` runs once, at the end or on close."""

    def __init__(
        self,
        read: Callable[[int], Any],
        release: Callable[[], None],
        chunk_size: int,
        name: str,
        blocking: bool = False,
    ) -> None:
        self._read = read
        self._blocking = blocking
        self._release = release
        self._chunk_size = chunk_size
        self.name = name
        #: Bytes handed out so far.
        self.bytes_read = 0

    def next(self) -> IteratorResult[bytes]:
        if self._closed:
            return IteratorResult(None, True)
        try:
            chunk = self._read(self._chunk_size)
        except BaseException:
            self.close()
            raise
        if isinstance(chunk, str):  # a text-mode file-like object
            chunk = chunk.encode("utf-8")
        if not chunk:
            self.close()
            return IteratorResult(None, True)
        chunk = bytes(chunk)
        self.bytes_read += len(chunk)
        return IteratorResult(chunk, False)

    async def next_async(self) -> IteratorResult[bytes]:
        """As :meth:`next`; a source that waits on the network reads in a worker thread, leaving the loop free."""
        if self._blocking and not self._closed:
            return await asyncio.to_thread(self.next)
        return self.next()

    def summary(self) -> str:
        return f"ByteChunks({self.name})"

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._release()


def _check_chunk_size(chunk_size: Any, what: str) -> int:
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"{what}: chunk_size must be a positive int, got {chunk_size!r}")
    return chunk_size


class FileDataSource(DataSource):
    """A local file (a path or ``file://`` URL), bytes, or a binary/text file-like object, read in chunks."""

    def __init__(self, input: Any, chunk_size: int = DEFAULT_CHUNK_SIZE, what: str = "FileDataSource") -> None:
        self._what = what
        self._chunk_size = _check_chunk_size(chunk_size, what)
        self._bytes: bytes | None = None
        self._path: str | None = None
        self._file: Any = None
        self._start: int | None = None
        self._used = False
        if isinstance(input, (bytes, bytearray, memoryview)):
            self._bytes = bytes(input)
            self.name = "<bytes>"
        elif isinstance(input, (str, os.PathLike)):
            path = os.fspath(input)
            if isinstance(path, bytes):
                path = os.fsdecode(path)
            if path.startswith("file://"):
                path = urllib.parse.unquote(path[len("file://") :])
            self._path = path
            self.name = repr(path)
        elif callable(getattr(input, "read", None)):
            self._file = input
            self.name = repr(getattr(input, "name", None) or f"<{type(input).__name__}>")
            try:
                self._start = input.tell() if input.seekable() else None
            except (AttributeError, OSError, ValueError):
                self._start = None
            self.reopenable = self._start is not None
        else:
            raise TypeError(
                f"{what}: the source must be a path, a file:// or http(s):// URL, bytes or a file-like object, "
                f"got {type(input).__name__}"
            )

    def iterator(self) -> ByteChunkIterator:
        if self._bytes is not None:
            data = memoryview(self._bytes)
            pos = [0]

            def read_bytes(n: int) -> bytes:
                chunk = data[pos[0] : pos[0] + n]
                pos[0] += len(chunk)
                return bytes(chunk)

            return ByteChunkIterator(read_bytes, lambda: None, self._chunk_size, self.name)
        if self._path is not None:
            try:
                f = open(self._path, "rb")  # noqa: SIM115 - closed by the iterator's release
            except FileNotFoundError:
                raise FileNotFoundError(f"{self._what}: no such file: {self._path!r}") from None
            except IsADirectoryError:
                raise IsADirectoryError(f"{self._what}: {self._path!r} is a directory, not a file") from None
            except PermissionError:
                raise PermissionError(f"{self._what}: permission denied reading {self._path!r}") from None
            return ByteChunkIterator(f.read, f.close, self._chunk_size, self.name)
        if self._start is not None:
            self._file.seek(self._start)
        elif self._used:
            raise ValueError(
                f"{self._what}: the file-like source {self.name} cannot be seeked, so it can be read only once; "
                "pass a path, bytes or a seekable file to iterate again"
            )
        self._used = True
        return ByteChunkIterator(self._file.read, lambda: None, self._chunk_size, self.name)


def _redact(url: str) -> str:
    """The URL without a user name or password, for error messages."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url
    if parts.username is None and parts.password is None:
        return url
    host = parts.hostname or ""
    if parts.port is not None:
        host = f"{host}:{parts.port}"
    return urllib.parse.urlunsplit((parts.scheme, host, parts.path, parts.query, parts.fragment))


class URLDataSource(DataSource):
    """An http(s) URL (a string or a ``urllib.request.Request``) streamed in chunks; ``file://`` URLs and plain
    paths are read as :class:`FileDataSource` does."""

    def __init__(self, url: Any, chunk_size: int = DEFAULT_CHUNK_SIZE, what: str = "URLDataSource") -> None:
        self._what = what
        self._chunk_size = _check_chunk_size(chunk_size, what)
        if isinstance(url, urllib.request.Request):
            self._url: Any = url
            self.name = _redact(url.full_url)
        elif isinstance(url, str) and url.lower().startswith(("http://", "https://")):
            self._url = url
            self.name = _redact(url)
        else:
            raise TypeError(f"{what}: expected an http(s):// URL or urllib.request.Request, got {url!r}")

    def iterator(self) -> ByteChunkIterator:
        try:
            response = urllib.request.urlopen(self._url, timeout=URL_TIMEOUT_S)  # noqa: S310 - http(s) only
        except urllib.error.HTTPError as e:
            status, reason = e.code, e.reason
            e.close()
            raise OSError(f"{self._what}: GET {self.name} failed: HTTP {status} {reason}") from None
        except urllib.error.URLError as e:
            raise OSError(f"{self._what}: cannot fetch {self.name}: {e.reason}") from None
        except (TimeoutError, OSError) as e:
            raise OSError(f"{self._what}: cannot fetch {self.name}: {e}") from None
        name = self.name

        def read(n: int) -> bytes:
            try:
                return response.read(n)
            except (TimeoutError, OSError) as e:
                raise OSError(f"{self._what}: reading {name} failed: {e}") from None

        return ByteChunkIterator(read, response.close, self._chunk_size, name, blocking=True)


def data_source(source: Any, what: str, chunk_size: int = DEFAULT_CHUNK_SIZE) -> DataSource:
    """The :class:`DataSource` for ``source``: a :class:`DataSource` as is, an http(s) URL or ``Request`` as a
    :class:`URLDataSource`, anything else as a :class:`FileDataSource`; ``what`` names the caller in errors."""
    if isinstance(source, DataSource):
        return source
    if isinstance(source, urllib.request.Request) or (
        isinstance(source, str) and source.lower().startswith(("http://", "https://"))
    ):
        return URLDataSource(source, chunk_size, what)
    if isinstance(source, str):
        scheme = _SCHEME.match(source)
        if scheme and scheme.group(1).lower() != "file":
            raise ValueError(f"{what}: unsupported URL scheme {scheme.group(1)!r} (use http://, https:// or file://)")
    return FileDataSource(source, chunk_size, what)
