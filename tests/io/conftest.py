"""io test helpers: a loopback HTTP server in a thread, and a multipart parser independent of ndflow."""

from __future__ import annotations

import email.parser
import email.policy
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "io"


class _Server:
    """What the test server serves (``files``: URL path -> bytes) and what it saw (``requests``)."""

    def __init__(self, httpd: ThreadingHTTPServer) -> None:
        self.httpd = httpd
        self.files: dict[str, bytes] = {}
        self.requests: list[dict] = []
        self.post_status = 200

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}"

    def serve_folder(self, folder: Path, prefix: str = "/") -> None:
        for p in folder.rglob("*"):
            if p.is_file():
                self.files[prefix + p.relative_to(folder).as_posix()] = p.read_bytes()


@pytest.fixture
def http_server():
    """A ThreadingHTTPServer on 127.0.0.1 (an ephemeral port), shut down after the test."""
    state: dict = {}

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:  # keep pytest output quiet
            pass

        def _record(self, body: bytes = b"") -> None:
            server.requests.append(
                {"method": self.command, "path": self.path, "headers": dict(self.headers.items()), "body": body}
            )

        def do_GET(self) -> None:
            self._record()
            data = server.files.get(self.path)
            if data is None:
                self.send_response(404)
                self.end_headers()
                return
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            self._record(body)
            self.send_response(server.post_status)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        do_PUT = do_POST  # noqa: N815 (http.server dispatches on this name)

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    server = _Server(httpd)
    state["thread"] = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    state["thread"].start()
    yield server
    httpd.shutdown()
    httpd.server_close()
    state["thread"].join(timeout=5)


def parse_multipart_body(body: bytes, content_type: str) -> list[dict]:
    """The parts of a multipart/form-data body (field, filename, content type, bytes), by the stdlib's parser."""
    msg = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(
        b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + body
    )
    assert msg.is_multipart(), "the body is not multipart"
    return [
        {
            "field": part.get_param("name", header="content-disposition"),
            "filename": part.get_filename(),
            "type": part.get_content_type(),
            "data": part.get_payload(decode=True),
        }
        for part in msg.iter_parts()
    ]


@pytest.fixture
def parse_multipart():
    """The multipart parser, as a fixture."""
    return parse_multipart_body


@pytest.fixture
def fixtures_dir() -> Path:
    """tests/fixtures/io."""
    return FIXTURES
