"""``load_graph_model(url, {"from_tf_hub": True})`` as TF.js 4.22 does it: the module URL gets ``/`` (when it has
none), ``model.json`` and ``?tfjs-format=file``; the weight shards are requested beside it with the same query
string. Served by a loopback server in a thread that, like TF Hub, answers only URLs with that query."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf

BASIC = Path(__file__).resolve().parent.parent / "fixtures" / "graph_models" / "basic"
QUERY = "?tfjs-format=file"


@pytest.fixture
def hub():
    """A server for the basic graph model at ``/google/basic/1/``; ``requests`` lists the paths asked for."""
    files = {f"/google/basic/1/{p.name}{QUERY}": p.read_bytes() for p in BASIC.iterdir()}
    requests: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_GET(self) -> None:
            requests.append(self.path)
            body = files.get(self.path)
            self.send_response(200 if body is not None else 404)
            self.send_header("Content-Length", str(len(body or b"")))
            self.end_headers()
            self.wfile.write(body or b"")

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    host, port = httpd.server_address[:2]
    yield f"http://{host}:{port}/google/basic/1", requests
    httpd.shutdown()
    httpd.server_close()
    thread.join(timeout=5)


def _check_prediction(model) -> None:
    expected = json.loads((BASIC / "expected.json").read_text())
    spec = expected["inputs"][0]
    x = nf.tensor(np.array(spec["values"], np.float32).reshape(spec["shape"]))
    out = model.execute({"x": x}, ["out"])
    np.testing.assert_allclose(out.data_sync(), expected["outputs"][0]["values"], rtol=1e-5, atol=1e-6)
    nf.dispose([x, out])


@pytest.mark.parametrize("slash", ["", "/"])
def test_from_tf_hub_requests_model_and_shards_with_the_query(hub, slash):
    url, requests = hub
    model = nf.load_graph_model(url + slash, {"from_tf_hub": True})
    assert requests == [
        f"/google/basic/1/model.json{QUERY}",
        f"/google/basic/1/group1-shard1of2.bin{QUERY}",
        f"/google/basic/1/group1-shard2of2.bin{QUERY}",
    ]
    assert model.model_url == f"{url}/model.json{QUERY}"
    _check_prediction(model)
    model.dispose()


def test_without_from_tf_hub_the_url_is_taken_as_is(hub):
    url, requests = hub
    with pytest.raises(ValueError, match=r"failed with status code 404"):
        nf.load_graph_model(url + "/model.json")
    assert requests == ["/google/basic/1/model.json"]
