"""Models over HTTP(S) with urllib (TF.js ``io/http.ts``).

``load()`` GETs the model.json, then each weight file named in its manifest relative to the model.json's URL
(``weight_path_prefix`` or ``weight_url_converter`` change that; the model.json's query string is kept);
``save()`` POSTs a ``multipart/form-data`` body with a ``model.json`` part (its manifest naming
``./model.weights.bin``) and a ``model.weights.bin`` part, as TF.js's http handler does.

``request_init`` is the Python form of fetch's RequestInit: ``{"method": str, "headers": {name: value}}``.
``fetch_func(url, request_init)`` replaces urllib; it returns ``bytes`` (status 200) or a response object with
``status`` (or ``status_code``) and ``read()`` (or ``content``/``body``).
"""

from __future__ import annotations

import os
import urllib.error
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .handlers import check_group_data, check_weight_path, register_load_router, register_save_router, url_scheme
from .model_json import artifacts_for_model_json, dumps_model_json, model_json_for_artifacts, parse_model_json
from .types import ModelArtifacts, SaveResult, concatenate_buffers, model_artifacts_info
from .weights import group_byte_range

OCTET_STREAM_MIME_TYPE = "application/octet-stream"
JSON_TYPE = "application/json"
DEFAULT_TIMEOUT_S = 60.0

FetchFunc = Callable[[str, Mapping[str, Any]], Any]


@dataclass
class Response:
    """The part of a fetch ``Response`` the handlers use."""

    status: int
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)
    url: str = ""

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def read(self) -> bytes:
        return self.body


def is_http_scheme(url: Any) -> bool:
    """Whether ``url`` starts with ``http://`` or ``https://``."""
    return isinstance(url, str) and url_scheme(url) in ("http", "https")


def parse_url(url: str) -> tuple[str, str]:
    """``(prefix up to the last '/', query suffix)`` of a model.json URL (TF.js ``parseUrl``)."""
    last_slash = url.rfind("/")
    last_query = url.rfind("?")
    suffix = url[last_query:] if last_query > last_slash else ""
    return url[:last_slash] + "/", suffix


def default_fetch(
    url: str,
    request_init: Mapping[str, Any] | None = None,
    timeout: float | None = None,
    max_bytes: int | None = None,
) -> Response:
    """fetch() with urllib, for http(s) URLs only; an HTTP error status comes back as a Response, not raised.
    With ``max_bytes``, a body that is larger (by its ``Content-Length``, or once that many bytes are read)
    raises a ValueError naming the URL, its size and the limit, without reading the rest."""
    if not is_http_scheme(url):
        raise ValueError(f"refusing to fetch {url!r}: only http:// and https:// URLs are fetched")
    init = dict(request_init or {})
    # here, not at the top: urllib.request (with http, email and ssl) is tens of ms of loading a cached model
    from urllib.request import Request, urlopen

    req = Request(url, data=init.get("body"), headers=dict(init.get("headers") or {}), method=init.get("method", "GET"))
    try:
        with urlopen(req, timeout=timeout or DEFAULT_TIMEOUT_S) as r:
            if max_bytes is None:
                return Response(r.status, r.read(), dict(r.headers.items()), url)
            length = str(r.headers.get("Content-Length") or "").strip()
            if length.isdigit() and int(length) > max_bytes:
                raise ValueError(
                    f"{url}: Content-Length is {int(length)} bytes, but the weight specs describe {max_bytes}; "
                    "refusing to read it"
                )
            body = r.read(max_bytes + 1)
            if len(body) > max_bytes:
                raise ValueError(f"{url}: the body is larger than the {max_bytes} bytes the weight specs describe")
            return Response(r.status, body, dict(r.headers.items()), url)
    except urllib.error.HTTPError as e:
        return Response(e.code, e.read() or b"", dict(e.headers.items()) if e.headers else {}, url)


def _as_response(result: Any, url: str) -> Response:
    if isinstance(result, Response):
        return result
    if isinstance(result, bytes | bytearray | memoryview):
        return Response(200, bytes(result), {}, url)
    status = getattr(result, "status", None)
    if status is None:
        status = getattr(result, "status_code", None)
    if status is None:
        raise TypeError(f"fetch_func returned {type(result).__name__}: expected bytes or a response with a status")
    if hasattr(result, "read"):
        body = result.read()
    else:
        body = getattr(result, "content", None)
        body = getattr(result, "body", b"") if body is None else body
    return Response(int(status), bytes(body or b""), {}, url)


def fetch_bytes(
    url: str,
    request_init: Mapping[str, Any] | None = None,
    what: str = "file",
    fetch_func: FetchFunc | None = None,
    timeout: float | None = None,
) -> bytes:
    """The body of a successful GET of ``url``; a ValueError naming the URL and status otherwise."""
    init = dict(request_init or {})
    result = fetch_func(url, init) if fetch_func is not None else default_fetch(url, init, timeout)
    response = _as_response(result, url)
    if not response.ok:
        raise ValueError(f"{what} could not be loaded: request to {url} failed with status code {response.status}")
    return response.body


def _multipart(parts: list[tuple[str, str, str, bytes]]) -> tuple[bytes, str]:
    """A multipart/form-data body of (field name, file name, content type, data) parts, and its content type."""
    boundary = f"----ndflowFormBoundary{uuid.uuid4().hex}"
    chunks = []
    for name, filename, ctype, data in parts:
        chunks.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"; filename="{filename}"\r\n'
            f"Content-Type: {ctype}\r\n\r\n".encode()
        )
        chunks.append(data)
        chunks.append(b"\r\n")
    chunks.append(f"--{boundary}--\r\n".encode())
    return b"".join(chunks), f"multipart/form-data; boundary={boundary}"


class HTTPRequest:
    """Load a model.json and its shards over HTTP(S), or POST a model as multipart form data (TF.js ``HTTPRequest``)."""

    DEFAULT_METHOD = "POST"

    def __init__(
        self,
        path: str,
        request_init: Mapping[str, Any] | None = None,
        fetch_func: FetchFunc | None = None,
        weight_path_prefix: str | None = None,
        weight_url_converter: Callable[[str], str] | None = None,
        on_progress: Callable[[float], None] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT_S,
    ) -> None:
        if not isinstance(path, str) or not path:
            raise ValueError("URL path for http must not be None or empty.")
        if fetch_func is not None and not callable(fetch_func):
            raise TypeError("fetch_func must be a function fetch_func(url, request_init)")
        if request_init is not None and request_init.get("body") is not None:
            raise ValueError("request_init is expected to have no pre-existing body, but has one.")
        self.path = path
        self.request_init = dict(request_init or {})
        self.fetch_func = fetch_func
        self.weight_path_prefix = weight_path_prefix
        self.weight_url_converter = weight_url_converter
        self.on_progress = on_progress
        self.timeout = timeout

    def __repr__(self) -> str:
        return f"HTTPRequest({self.path!r})"

    def _fetch(self, url: str, init: Mapping[str, Any], max_bytes: int | None = None) -> Response:
        if self.fetch_func is not None:
            return _as_response(self.fetch_func(url, init), url)
        return default_fetch(url, init, self.timeout, max_bytes)

    def save(self, artifacts: ModelArtifacts) -> SaveResult:
        """POST model.json and model.weights.bin as multipart/form-data; a non-2xx status raises."""
        if isinstance(artifacts, Mapping):
            artifacts = ModelArtifacts.from_dict(artifacts)
        if isinstance(artifacts.model_topology, bytes | bytearray):
            raise ValueError("HTTPRequest.save() does not support saving model topology in binary formats yet.")
        manifest = None
        if artifacts.weight_specs is not None:  # TF.js writes the group even without specs; ndflow leaves it out
            manifest = [{"paths": ["./model.weights.bin"], "weights": list(artifacts.weight_specs)}]
        model_json = dumps_model_json(model_json_for_artifacts(artifacts, manifest))
        parts = [("model.json", "model.json", JSON_TYPE, model_json.encode("utf-8"))]
        if artifacts.weight_data is not None:
            weights = concatenate_buffers(artifacts.weight_data)
            parts.append(("model.weights.bin", "model.weights.bin", OCTET_STREAM_MIME_TYPE, weights))
        body, content_type = _multipart(parts)
        init: dict[str, Any] = {"method": self.DEFAULT_METHOD, **self.request_init}
        headers = dict(init.get("headers") or {})
        headers["Content-Type"] = content_type
        init["headers"], init["body"] = headers, body
        response = self._fetch(self.path, init)
        if not response.ok:
            raise OSError(f"HTTPRequest.save() failed due to HTTP response status {response.status}.")
        return SaveResult(model_artifacts_info=model_artifacts_info(artifacts), responses=[response])

    def load_model_json(self) -> dict[str, Any]:
        """GET and parse the model.json (ValueError for a bad status or malformed JSON)."""
        response = self._fetch(self.path, self.request_init)
        if not response.ok:
            raise ValueError(
                f"Request to {self.path} failed with status code {response.status}. "
                "Please verify this URL points to the model JSON of the model to load."
            )
        return parse_model_json(response.body, self.path)

    def weight_urls(self, manifest: list[dict[str, Any]]) -> list[str]:
        """The URL of each weight file of the manifest, in order (paths checked to stay in the model's folder)."""
        prefix, suffix = parse_url(self.path)
        prefix = self.weight_path_prefix or prefix
        urls = []
        for group in manifest:
            for path in group["paths"]:
                clean = check_weight_path(path, self.path)
                urls.append(self.weight_url_converter(path) if self.weight_url_converter else prefix + clean + suffix)
        return urls

    def load(self) -> ModelArtifacts:
        """Fetch model.json, then its weight files, validated against the specs, into ModelArtifacts."""
        model_json = self.load_model_json()
        manifest = model_json.get("weightsManifest")
        if manifest is None:
            return artifacts_for_model_json(model_json)
        urls = iter(self.weight_urls(manifest))
        total = sum(len(g["paths"]) for g in manifest) or 1
        specs, parts, done = [], [], 0
        for i, group in enumerate(manifest):
            buffers = []
            _, most = group_byte_range(group["weights"])  # no shard may be larger than its whole group
            for path in group["paths"]:
                url = next(urls)
                response = self._fetch(url, self.request_init, most)
                if not response.ok:
                    raise ValueError(
                        f"{self.path}: weight file {path!r} is missing: request to {url} failed with status code "
                        f"{response.status}"
                    )
                length = str(response.headers.get("Content-Length") or "").strip()
                if most is not None and length.isdigit() and int(length) > most:
                    raise ValueError(
                        f"{self.path}: weight file {path!r} has {int(length)} bytes (Content-Length), but the weight "
                        f"specs of its group describe {most} bytes in all"
                    )
                buffers.append(response.body)
                done += 1
                if self.on_progress is not None:
                    self.on_progress(done / total)
            data = b"".join(buffers)
            check_group_data(i, group, data, self.path)
            specs.extend(group["weights"])
            parts.append(data)
        return artifacts_for_model_json(model_json, specs, b"".join(parts))


_OPTION_NAMES = ("request_init", "fetch_func", "weight_path_prefix", "weight_url_converter", "on_progress", "timeout")


def http(path: str, **load_options: Any) -> HTTPRequest:
    """An HTTP(S) handler; options: request_init, fetch_func, weight_path_prefix, weight_url_converter,
    on_progress, timeout (TF.js ``io.http``)."""
    unknown = sorted(set(load_options) - set(_OPTION_NAMES))
    if unknown:
        raise TypeError(f"http: unknown load options {unknown} (known: {', '.join(_OPTION_NAMES)})")
    return HTTPRequest(path, **load_options)


browser_http_request = http


def http_router(url: Any, load_options: Mapping[str, Any] | None = None) -> HTTPRequest | None:
    """Route ``http://`` and ``https://`` URLs to the HTTP handler."""
    if isinstance(url, os.PathLike) or not is_http_scheme(url):
        return None
    options = {k: v for k, v in (load_options or {}).items() if k in _OPTION_NAMES}
    return HTTPRequest(url, **options)


register_load_router(http_router)
register_save_router(http_router)
