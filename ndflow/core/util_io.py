"""The part of ``nf.util`` that meets the platform: the clock, text encoding, ``fetch``, typed arrays, promises.

TF.js asks its platform object (browser or Node) for these; ndflow's platform is Python: ``now`` is
``time.perf_counter`` in milliseconds, text is encoded with Python's codecs, and ``fetch`` is a blocking
HTTP request through ``urllib`` whose response is also awaitable (``await nf.util.fetch(url)`` returns the
same response), so ported ``await`` lines keep working.
"""

from __future__ import annotations

import inspect
import json
import time
from collections.abc import Callable, Generator, Mapping
from typing import Any

import numpy as np

from .coroutines import sleep as _sleep

_TYPED_DTYPES = (np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.uint8), np.dtype(np.uint32))
_STORAGE = {"float32": np.float32, "complex64": np.float32, "int32": np.int32, "bool": np.uint8}


def now() -> float:
    """A monotonic time in milliseconds (fractional), for measuring durations."""
    return time.perf_counter() * 1000.0


def encode_string(s: str, encoding: str = "utf-8") -> bytes:
    """``s`` encoded to bytes (TF.js: a ``Uint8Array``)."""
    if not isinstance(s, str):
        raise TypeError(f"encode_string: argument 's' must be a str, got {type(s).__name__}")
    return s.encode(encoding or "utf-8")


def decode_string(data: bytes | bytearray | memoryview | np.ndarray, encoding: str = "utf-8") -> str:
    """Bytes (or a uint8 numpy array) decoded to text."""
    if isinstance(data, np.ndarray):
        data = data.astype(np.uint8).tobytes()
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"decode_string: argument 'bytes' must be bytes, got {type(data).__name__}")
    return bytes(data).decode(encoding or "utf-8")


def is_typed_array(a: object) -> bool:
    """Whether ``a`` is what TF.js calls a typed array: a numpy array of float32, int32, uint8 or uint32."""
    return isinstance(a, np.ndarray) and a.dtype in _TYPED_DTYPES


def is_promise(obj: object) -> bool:
    """Whether ``obj`` can be awaited (TF.js: has a ``then`` method)."""
    return inspect.isawaitable(obj)


def flatten(arr: Any, result: list[Any] | None = None, skip_typed_array: bool = False) -> list[Any]:
    """The leaves of nested lists, tuples and numpy arrays, in order (appended to ``result`` when given). Numbers,
    booleans, strings, bytes, awaitables and ``None`` are leaves; with ``skip_typed_array`` so are typed arrays."""
    out: list[Any] = [] if result is None else result
    _flatten_into(arr, out, skip_typed_array)
    return out


def _flatten_into(arr: Any, out: list[Any], skip_typed_array: bool) -> None:
    if arr is None or isinstance(arr, bool | int | float | str | bytes | np.generic) or is_promise(arr):
        out.append(arr)
    elif isinstance(arr, np.ndarray):
        if skip_typed_array and is_typed_array(arr):
            out.append(arr)
        else:
            out.extend(arr.reshape(-1).tolist())
    elif isinstance(arr, list | tuple):
        for item in arr:
            _flatten_into(item, out, skip_typed_array)
    elif isinstance(arr, Mapping):  # an array-like object: its keys 0 .. max index, in order
        keys = [int(k) for k in arr if isinstance(k, int) or (isinstance(k, str) and k.isdigit())]
        for i in range(max(keys, default=-1) + 1):
            _flatten_into(arr.get(i, arr.get(str(i))), out, skip_typed_array)
    else:
        raise TypeError(f"flatten: cannot flatten a {type(arr).__name__} (expected numbers, strings or nested lists)")


def to_typed_array(a: Any, dtype: str | None) -> np.ndarray:
    """Values (nested lists allowed) as a flat numpy array in ``dtype``'s storage; bool: ``round(x) != 0``."""
    if dtype == "string":
        raise TypeError("to_typed_array: cannot convert strings to a typed array")
    if dtype is not None and dtype not in _STORAGE:
        raise ValueError(f"to_typed_array: unknown data type {dtype!r}")
    values = np.asarray(flatten(a) if isinstance(a, list | tuple) else a)
    if dtype == "bool":
        return (np.round(values.astype(np.float64)) != 0).astype(np.uint8).reshape(-1)
    return values.astype(_STORAGE[dtype or "float32"]).reshape(-1)


def create_scalar_value(value: Any, dtype: str) -> np.ndarray | bytes:
    """One value in ``dtype``'s storage: bytes for ``string``, else a one-element numpy array."""
    return encode_string(value) if dtype == "string" else to_typed_array([value], dtype)


def convert_backend_values_and_array_buffer(data: Any, dtype: str) -> Any:
    """Raw bytes (or an array) as the values of ``dtype``: float32/int32 read as such; bool and string from
    int32 words narrowed to uint8. Lists pass unchanged."""
    if isinstance(data, list):
        return data
    if dtype not in ("float32", "int32", "bool", "string"):
        raise ValueError(f"convert_backend_values_and_array_buffer: unknown dtype {dtype!r}")
    if isinstance(data, np.ndarray):
        raw = data
    elif isinstance(data, bytes | bytearray | memoryview):
        raw = np.frombuffer(bytes(data), np.float32 if dtype == "float32" else np.int32)
    else:
        raise TypeError(
            f"convert_backend_values_and_array_buffer: expected bytes or an array, got {type(data).__name__}"
        )
    if dtype == "float32":
        return raw.astype(np.float32, copy=False)
    if dtype == "int32":
        return raw.astype(np.int32, copy=False)
    return raw.astype(np.int32).astype(np.uint8)


async def repeated_try(
    check_fn: Callable[[], bool],
    delay_fn: Callable[[int], float] | None = None,
    max_counter: int | None = None,
) -> None:
    """Call ``check_fn`` until it returns true, sleeping ``delay_fn(try_count)`` milliseconds between tries (0 by
    default); raise ``TimeoutError`` after ``max_counter`` failed tries. A coroutine, as TF.js's returns a Promise."""
    tries = 0
    while not check_fn():
        tries += 1
        delay = delay_fn(tries) if delay_fn is not None else 0
        if max_counter is not None and tries >= max_counter:
            raise TimeoutError(f"repeated_try: the check did not pass in {max_counter} tries")
        await _sleep(max(float(delay), 0.0) / 1000.0)


class FetchResponse:
    """What :func:`fetch` returns, shaped like the Fetch API's ``Response``: ``ok``, ``status``,
    ``status_text``, ``url``, ``headers`` and the body through ``array_buffer()``, ``text()``, ``json()`` (plain
    methods here; awaiting the response itself returns it)."""

    def __init__(self, url: str, status: int, status_text: str, headers: dict[str, str], body: bytes) -> None:
        self.url, self.status, self.status_text, self.headers, self.body = url, status, status_text, headers, body
        self.ok = 200 <= status < 300

    def array_buffer(self) -> bytes:
        return self.body

    def text(self) -> str:
        return self.body.decode("utf-8")

    def json(self) -> Any:
        return json.loads(self.body)

    def __await__(self) -> Generator[Any, None, FetchResponse]:
        return self
        yield  # pragma: no cover - makes this a generator

    def __repr__(self) -> str:
        return f"<FetchResponse {self.status} {self.url!r} ({len(self.body)} bytes)>"


def fetch(path: str, request_inits: Mapping[str, Any] | None = None) -> FetchResponse:
    """Request ``path`` (http, https or file URL) and return the whole response. Blocking; the response can also be
    awaited. ``request_inits`` takes the Fetch API's ``method``, ``headers`` and ``body``. As the Fetch API, an
    HTTP error status is a response with ``ok`` false; an unreachable host raises ``ConnectionError``."""
    if not isinstance(path, str):
        raise TypeError(f"fetch: argument 'path' must be a URL string, got {type(path).__name__}")
    inits = dict(request_inits or {})
    unknown = set(inits) - {"method", "headers", "body"}
    if unknown:
        raise ValueError(f"fetch: unsupported request_inits keys {sorted(unknown)} (supported: method, headers, body)")
    body = inits.get("body")
    if isinstance(body, str):
        body = body.encode("utf-8")
    import urllib.error  # here: urllib.request (with http, email and ssl) is tens of ms of ``import ndflow``
    import urllib.request

    request = urllib.request.Request(
        path, data=body, headers=dict(inits.get("headers") or {}), method=inits.get("method")
    )
    try:
        with urllib.request.urlopen(request) as reply:  # noqa: S310 - the caller's URL, as TF.js's fetch
            status = getattr(reply, "status", None) or 200
            return FetchResponse(
                reply.geturl(), status, getattr(reply, "reason", "") or "", dict(reply.headers), reply.read()
            )
    except urllib.error.HTTPError as err:
        return FetchResponse(path, err.code, str(err.reason), dict(err.headers or {}), err.read())
    except urllib.error.URLError as err:
        raise ConnectionError(f"fetch: cannot reach {path!r}: {err.reason}") from None
