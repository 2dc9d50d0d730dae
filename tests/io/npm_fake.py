"""A fake npm registry for the npm:// tests: a loopback HTTP server in a thread serving package documents and
tarballs built in the test, with the integrity the test chooses."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import quote, unquote

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures"
GRAPH_MODEL = FIXTURES / "graph_models" / "basic"
LAYERS_MODEL = FIXTURES / "io" / "tfjs" / "layers_model"


def make_tarball(files: dict[str, bytes], top: str = "package", links: dict[str, str] | None = None) -> bytes:
    """A .tgz with ``files`` (path -> bytes) below the folder ``top`` (no folder when ``top`` is ''), and symlinks
    ``links`` (path -> target); member names are used as given, so ``../x`` makes a hostile tarball."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.size, info.mode = len(data), 0o644
            tar.addfile(info, io.BytesIO(data))
        for name, target in (links or {}).items():
            info = tarfile.TarInfo(f"{top}/{name}" if top else name)
            info.type, info.linkname = tarfile.SYMTYPE, target
            tar.addfile(info)
    return buf.getvalue()


def model_files() -> dict[str, bytes]:
    """A package with the basic graph model in ``models/graph/`` and a layers model in ``models/layers/``."""
    files = {"package.json": b'{"name": "demo"}', "README.md": b"demo", "data/other.json": b'{"a": 1}'}
    for folder, where in ((GRAPH_MODEL, "models/graph"), (LAYERS_MODEL, "models/layers")):
        for p in sorted(folder.iterdir()):
            if p.name != "expected.json":
                files[f"{where}/{p.name}"] = p.read_bytes()
    return files


def sri(data: bytes, algo: str = "sha512") -> str:
    """The Subresource Integrity string of ``data``."""
    return f"{algo}-{base64.b64encode(hashlib.new(algo, data).digest()).decode()}"


class FakeRegistry:
    """Packages (name -> version -> (tarball bytes, dist overrides)) and dist-tags, and the paths requested."""

    def __init__(self, httpd: ThreadingHTTPServer) -> None:
        self.httpd = httpd
        self.packages: dict[str, dict[str, tuple[bytes, dict]]] = {}
        self.tags: dict[str, dict[str, str]] = {}
        self.requests: list[str] = []

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def tarball_url(self, name: str, version: str) -> str:
        return f"{self.url}/tarballs/{quote(name, safe='')}-{version}.tgz"

    def add(self, name: str, version: str, tarball: bytes, tag: str | None = "latest", **dist: object) -> None:
        """Publish ``tarball`` as ``name@version`` (integrity computed unless given in ``dist``; None removes it)."""
        full = {"tarball": self.tarball_url(name, version), "integrity": sri(tarball), **dist}
        self.packages.setdefault(name, {})[version] = (tarball, {k: v for k, v in full.items() if v is not None})
        if tag:
            self.tags.setdefault(name, {})[tag] = version

    def document(self, name: str) -> dict:
        versions = {v: {"name": name, "version": v, "dist": d} for v, (_, d) in self.packages[name].items()}
        return {"name": name, "dist-tags": self.tags.get(name, {}), "versions": versions}

    def tarball_requests(self) -> list[str]:
        return [p for p in self.requests if p.startswith("/tarballs/")]


@contextmanager
def fake_registry() -> Iterator[FakeRegistry]:
    """Serve a FakeRegistry on 127.0.0.1 (an ephemeral port) until the block ends."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _send(self, status: int, body: bytes, ctype: str = "application/json") -> None:
            self.send_response(status)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            registry.requests.append(self.path)
            if self.path.startswith("/tarballs/"):
                for name, versions in registry.packages.items():
                    for version, (data, _) in versions.items():
                        if self.path == f"/tarballs/{quote(name, safe='')}-{version}.tgz":
                            return self._send(200, data, "application/octet-stream")
                return self._send(404, b'{"error": "not found"}')
            name = unquote(self.path.lstrip("/"))
            if name not in registry.packages:
                return self._send(404, b'{"error": "Not found"}')
            return self._send(200, json.dumps(registry.document(name)).encode())

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    registry = FakeRegistry(httpd)
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield registry
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)
