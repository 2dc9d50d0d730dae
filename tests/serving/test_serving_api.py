"""TensorFlow Serving's REST API served by ``ndflow.serving`` on a loopback port: model status, metadata,
``:predict`` in the row and columnar formats (named multi-input/multi-output, b64 strings), the operations
endpoints, and every kind of bad request: each gets TF Serving's error body and status, ``memory()`` is back to
its baseline after it, and the server keeps answering."""

from __future__ import annotations

import base64
import json

import numpy as np
import pytest
from serve_helpers import (
    ServerThread,
    dense_model,
    graph_basic,
    multi_model,
    needs_serve,
    predict_local,
    save,
    strings_model,
)

import ndflow as nf

pytestmark = needs_serve
LIMIT = 256 * 1024


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    save(dense_model(), root / "dense" / "1")
    save(multi_model(), root / "multi")
    save(dense_model(batch=1), root / "fixed")
    graph_basic(root / "basic")
    strings_model(root / "strings")
    return root


@pytest.fixture(scope="module")
def server(models):
    import httpx

    import ndflow.serving as serving

    app = serving.app({n: str(models / n) for n in ("dense", "multi", "fixed", "basic", "strings")},
                      max_batch=8, batch_timeout_ms=2, poll_s=0, max_body_bytes=LIMIT, tune_gc=False)  # fmt: skip
    with ServerThread(app) as running, httpx.Client(base_url=running.url, timeout=30) as client:
        running.client = client
        yield running


def test_model_status(server):
    want = {"model_version_status": [{"version": "1", "state": "AVAILABLE",
                                      "status": {"error_code": "OK", "error_message": ""}}]}  # fmt: skip
    assert server.client.get("/v1/models/dense").json() == want
    assert server.client.get("/v1/models/dense/versions/1").json() == want
    r = server.client.get("/v1/models/dense/versions/7")
    assert r.status_code == 404 and "version 7" in r.json()["error"]


def test_metadata_layers_and_graph(server):
    meta = server.client.get("/v1/models/multi/metadata").json()
    assert meta["model_spec"] == {"name": "multi", "signature_name": "", "version": "1"}
    sig = meta["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["method_name"] == "tensorflow/serving/predict"
    assert sorted(sig["inputs"]) == ["a", "b"] and sorted(sig["outputs"]) == ["o1", "o2"]
    a = sig["inputs"]["a"]
    assert a["dtype"] == "DT_FLOAT"
    assert a["tensor_shape"]["dim"] == [{"size": "-1", "name": ""}, {"size": "3", "name": ""}]
    graph = server.client.get("/v1/models/basic/versions/1/metadata").json()
    sig = graph["metadata"]["signature_def"]["signature_def"]["serving_default"]
    assert sig["inputs"]["features"]["name"] == "x:0"
    assert sig["outputs"]["probs"]["tensor_shape"]["dim"][1]["size"] == "4"
    assert sig["outputs"]["shape"]["dtype"] == "DT_INT32" and sig["outputs"]["shape"]["tensor_shape"]["unknown_rank"]


def test_predict_row_and_columnar_match_model_predict(server, models):
    x = np.array([[1, 2, 3], [-4, 5.5, 6]], np.float32)
    (want,) = predict_local(models / "dense" / "1" / "model.json", x)
    rows = server.client.post("/v1/models/dense:predict", json={"instances": x.tolist()})
    assert rows.status_code == 200 and list(rows.json()) == ["predictions"]
    np.testing.assert_allclose(rows.json()["predictions"], want, rtol=1e-6)
    cols = server.client.post("/v1/models/dense/versions/1:predict",
                              json={"signature_name": "serving_default", "inputs": x.tolist()})  # fmt: skip
    np.testing.assert_allclose(cols.json()["outputs"], want, rtol=1e-6)
    key = next(iter(server.client.get("/v1/models/dense/metadata").json()["metadata"]["signature_def"]
                    ["signature_def"]["serving_default"]["inputs"]))  # fmt: skip
    named = server.client.post("/v1/models/dense:predict", json={"inputs": {key: x.tolist()}})
    np.testing.assert_allclose(named.json()["outputs"], want, rtol=1e-6)


def test_named_multi_input_multi_output(server, models):
    a = np.array([[1, 2, 3], [0, 1, 0]], np.float32)
    b = np.array([[0.5, -1], [2, 2]], np.float32)
    o1, o2 = predict_local(models / "multi" / "model.json", a, b)
    instances = [{"a": a[i].tolist(), "b": b[i].tolist()} for i in range(2)]
    rows = server.client.post("/v1/models/multi:predict", json={"instances": instances}).json()["predictions"]
    assert [sorted(r) for r in rows] == [["o1", "o2"], ["o1", "o2"]]
    np.testing.assert_allclose([r["o1"] for r in rows], o1, rtol=1e-6)
    np.testing.assert_allclose([r["o2"] for r in rows], o2, rtol=1e-6)
    cols = server.client.post("/v1/models/multi:predict", json={"inputs": {"a": a.tolist(), "b": b.tolist()}}).json()
    np.testing.assert_allclose(cols["outputs"]["o1"], o1, rtol=1e-6)
    np.testing.assert_allclose(cols["outputs"]["o2"], o2, rtol=1e-6)


def test_graph_model_columnar_and_row(server):
    x = [[1, 2, 3], [4, 5, 6], [0, 0, 1]]
    out = server.client.post("/v1/models/basic:predict", json={"inputs": {"features": x}}).json()["outputs"]
    assert sorted(out) == ["probs", "shape"] and out["shape"] == [3, 4]
    assert np.array(out["probs"]).shape == (3, 4)
    # the row format needs every output batched: `shape` is not, as TF Serving answers
    r = server.client.post("/v1/models/basic:predict", json={"instances": x})
    assert r.status_code == 400 and "columnar" in r.json()["error"]


def test_b64_strings_in_and_out(server):
    raw = [b"\x00\xffbinary", "héllo".encode()]
    body = {"inputs": {"text": [{"b64": base64.b64encode(v).decode()} for v in raw], "x": [[1, 2], [3, 4]]}}
    out = server.client.post("/v1/models/strings:predict", json=body).json()["outputs"]
    assert [base64.b64decode(v["b64"]) for v in out["echo_bytes"]] == raw
    assert out["neg"] == [[-1, -2], [-3, -4]]
    rows = {"instances": [{"text": "plain", "x": [1, 2]}, {"text": {"b64": "YWI="}, "x": [0, 0]}]}
    preds = server.client.post("/v1/models/strings:predict", json=rows).json()["predictions"]
    assert [base64.b64decode(p["echo_bytes"]["b64"]) for p in preds] == [b"plain", b"ab"]


def test_fixed_batch_model_takes_its_batch(server, models):
    assert server.state.registry.entries["fixed"].current.batchable is False
    ok = server.client.post("/v1/models/fixed:predict", json={"instances": [[1, 2, 3]]})
    assert ok.status_code == 200
    r = server.client.post("/v1/models/fixed:predict", json={"instances": [[1, 2, 3], [1, 2, 3]]})
    assert r.status_code == 400 and "exactly 1" in r.json()["error"]


def test_operations_endpoints(server):
    assert server.client.get("/healthz").json() == {"status": "ok"}
    ready = server.client.get("/readyz")
    assert ready.status_code == 200 and ready.json()["ready"] is True
    assert ready.json()["models"]["dense"] == {"version": "1", "batchable": True, "warmed_up": True}
    server.client.post("/v1/models/dense:predict", json={"instances": [[1, 2, 3]]})
    text = server.client.get("/metrics").text
    assert 'ndflow_serve_requests_total{code="200",method="predict",model="dense"}' in text
    for name in ("ndflow_serve_request_seconds_bucket", "ndflow_serve_batch_rows_bucket", "ndflow_memory_num_tensors",
                 "ndflow_memory_num_bytes", "ndflow_serve_in_flight"):  # fmt: skip
        assert name in text, name


BAD = [
    ("malformed JSON", "dense:predict", b'{"instances": [[1, 2, 3]', 400, "JSON Parse error"),
    ("not an object", "dense:predict", b"[[1, 2, 3]]", 400, "JSON object"),
    ("both formats", "dense:predict", b'{"instances": [[1,2,3]], "inputs": [[1,2,3]]}', 400, "exactly one"),
    ("no inputs", "dense:predict", b'{"signature_name": "serving_default"}', 400, "exactly one"),
    ("unknown key", "dense:predict", b'{"instances": [[1,2,3]], "foo": 1}', 400, "unknown key"),
    ("wrong signature", "dense:predict", b'{"signature_name": "x", "instances": [[1,2,3]]}', 400, "signature"),
    ("empty instances", "dense:predict", b'{"instances": []}', 400, "non-empty"),
    ("wrong input name", "multi:predict", b'{"inputs": {"a": [[1,2,3]], "c": [[1,2]]}}', 400, "unknown input"),
    ("missing input", "multi:predict", b'{"instances": [{"a": [1,2,3]}]}', 400, "missing input"),
    ("plain rows, 2 inputs", "multi:predict", b'{"instances": [[1,2,3]]}', 400, "2 inputs"),
    ("mixed instances", "multi:predict", b'{"instances": [{"a": [1,2,3], "b": [1,2]}, [1]]}', 400, "mixes"),
    ("wrong shape", "dense:predict", b'{"instances": [[1, 2]]}', 400, "shape [3]"),
    ("wrong rank", "dense:predict", b'{"inputs": [1, 2, 3]}', 400, "expected shape"),
    ("ragged instances", "dense:predict", b'{"instances": [[1, 2, 3], [1, 2]]}', 400, "ragged"),
    (
        "ragged named",
        "multi:predict",
        b'{"instances": [{"a": [1,2,3], "b": [1,2]}, {"a": [1,2], "b": [1,2]}]}',
        400,
        "ragged",
    ),  # fmt: skip
    ("text for floats", "dense:predict", b'{"instances": [["a", "b", "c"]]}', 400, "expected numbers"),
    ("bools for floats", "dense:predict", b'{"instances": [[true, false, true]]}', 400, "true/false"),
    ("objects for floats", "dense:predict", b'{"instances": [[{"x": 1}, 2, 3]]}', 400, "b64"),
    ("b64 for floats", "dense:predict", b'{"inputs": [[{"b64": "AA=="}, 2, 3]]}', 400, "b64"),
    ("bad b64", "strings:predict", b'{"inputs": {"text": [{"b64": "!!"}], "x": [[1, 2]]}}', 400, "base64"),
    ("numbers for strings", "strings:predict", b'{"inputs": {"text": [1], "x": [[1, 2]]}}', 400, "string input"),
    ("unknown model", "nope:predict", b'{"instances": [[1, 2, 3]]}', 404, "Servable not found"),
    ("unknown version", "dense/versions/9:predict", b'{"instances": [[1, 2, 3]]}', 404, "Specific(dense, 9)"),
    ("bad version", "dense/versions/x:predict", b'{"instances": [[1, 2, 3]]}', 400, "integer"),
    ("label", "dense/labels/stable:predict", b'{"instances": [[1, 2, 3]]}', 404, "label"),
    ("classify", "dense:classify", b'{"examples": []}', 400, "not supported"),
    ("too large", "dense:predict", b'{"instances": [' + b"[1,2,3]," * (LIMIT // 8) + b"[1,2,3]]}", 413, "size limit"),
]


@pytest.mark.parametrize("what, path, body, status, says", BAD, ids=[b[0] for b in BAD])
def test_bad_requests_get_tf_serving_errors(server, what, path, body, status, says):
    before = nf.memory().num_tensors
    r = server.client.post(f"/v1/models/{path}", content=body, headers={"content-type": "application/json"})
    assert r.status_code == status, r.text
    assert list(r.json()) == ["error"] and says in r.json()["error"], r.json()
    assert nf.memory().num_tensors == before
    ok = server.client.post("/v1/models/dense:predict", json={"instances": [[1, 2, 3]]})
    assert ok.status_code == 200 and nf.memory().num_tensors == before


def test_wrong_method_and_paths(server):
    r = server.client.get("/v1/models/dense:predict")
    assert r.status_code == 405 and "POST" in r.json()["error"]
    assert server.client.post("/v1/models/dense").status_code == 405
    assert server.client.get("/v2/anything").json()["error"].startswith("Malformed request")
    assert server.client.get("/v1/models/nope/metadata").status_code == 404


def test_body_over_the_limit_without_content_length(server):
    def chunks():
        yield b'{"instances": ['
        for _ in range(LIMIT // 8 + 10):
            yield b"[1,2,3],"
        yield b"[1,2,3]]}"

    r = server.client.post("/v1/models/dense:predict", content=chunks())
    assert r.status_code == 413 and "size limit" in r.json()["error"]


def test_nan_and_infinity_pass_through(server):
    body = b'{"inputs": {"text": ["a"], "x": [[NaN, Infinity]]}}'
    r = server.client.post("/v1/models/strings:predict", content=body)
    assert r.status_code == 200
    assert json.loads(r.text)["outputs"]["neg"][0][1] == float("-inf")
