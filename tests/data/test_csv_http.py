"""nf.data.csv over http: a local ``http.server`` in a thread (no network needed)."""

from __future__ import annotations

import http.server
import socket
import threading
import urllib.request

import pytest

from ndflow.data.csv import csv

ROWS = 20_000
BIG = ("x,y,label\n" + "".join(f"{i},{i / 8},{i % 2}\n" for i in range(ROWS))).encode()


class _Handler(http.server.BaseHTTPRequestHandler):
    sent: list[int] = []  # bytes written per request, to see that the client reads lazily

    def log_message(self, *args) -> None:  # keep test output quiet
        pass

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/boston.csv":
            body = b"crim,rm,medv\n0.1,6.5,24\n0.2,7.1,21.6\n"
        elif self.path == "/big.csv":
            body = BIG
        elif self.path == "/chunked.csv":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            for piece in (b"a,b\n1,", b"2\n3", b",4\n"):
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
            self.wfile.write(b"0\r\n\r\n")
            return
        else:
            self.send_error(404, "Not Found")
            return
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()
    thread.join()


def test_reads_a_url(server):
    ds = csv(server + "/boston.csv", {"columnConfigs": {"medv": {"isLabel": True}}})
    assert ds.column_names() == ["crim", "rm", "medv"]
    want = [
        {"xs": {"crim": 0.1, "rm": 6.5}, "ys": {"medv": 24.0}},
        {"xs": {"crim": 0.2, "rm": 7.1}, "ys": {"medv": 21.6}},
    ]
    assert list(ds) == want
    assert list(ds) == want  # each iterator fetches the URL again, as TF.js does


def test_request_object(server):
    assert len(list(csv(urllib.request.Request(server + "/boston.csv")))) == 2


def test_chunked_transfer(server):
    assert list(csv(server + "/chunked.csv")) == [{"a": 1.0, "b": 2.0}, {"a": 3.0, "b": 4.0}]


def test_url_is_streamed(server):
    it = csv(server + "/big.csv").iterator()
    assert next(it) == {"x": 0.0, "y": 0.0, "label": 0.0}
    assert it.bytes_read <= 64 * 1024 < len(BIG)  # one chunk read, not the whole body
    assert sum(1 for _ in it) == ROWS - 1
    assert it.bytes_read == len(BIG)


def test_http_error_names_the_url(server):
    url = server + "/missing.csv"
    with pytest.raises(OSError, match=rf"nf.data.csv: GET {url} failed: HTTP 404 Not Found") as info:
        csv(url).column_names()
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_credentials_are_not_shown(server):
    url = server.replace("http://", "http://user:secret@") + "/missing.csv"
    with pytest.raises(OSError) as info:
        list(csv(url))
    assert "secret" not in str(info.value) and "/missing.csv" in str(info.value)


def test_unreachable_url_names_it():
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}/data.csv"
    with pytest.raises(OSError, match=f"nf.data.csv: cannot fetch {url}"):
        list(csv(url))


def test_async_iteration_reads_in_a_worker_thread(server):
    import asyncio

    async def main():
        rows = [row async for row in csv(server + "/big.csv")]
        return len(rows), rows[-1]

    count, last = asyncio.run(main())
    assert count == ROWS and last == {"x": ROWS - 1.0, "y": (ROWS - 1) / 8, "label": float((ROWS - 1) % 2)}
