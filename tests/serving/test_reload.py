"""Model versions: the highest version folder is served, a new one is picked up while requests keep coming (none
dropped, the old version disposed once its requests are done), a version that fails to load leaves the serving
one in place and is reported in the model status; a model no version of which loads stops the start; a
graceful shutdown finishes the requests in flight; a request over its time limit gets 504."""

from __future__ import annotations

import asyncio
import threading
import time

import numpy as np
import pytest
from serve_helpers import ServerThread, dense_model, needs_serve, predict_local, save

import ndflow as nf

pytestmark = needs_serve
X = [[1.0, 2.0, 3.0]]


def _client(url):
    import httpx

    return httpx.Client(base_url=url, timeout=30)


def _wait(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


def test_highest_version_is_served(tmp_path):
    import ndflow.serving as serving

    save(dense_model(seed=1), tmp_path / "m" / "1")
    save(dense_model(seed=2), tmp_path / "m" / "2")
    (want,) = predict_local(tmp_path / "m" / "2" / "model.json", np.array(X, np.float32))
    with (
        ServerThread(serving.app([str(tmp_path / "m")], poll_s=0, tune_gc=False)) as running,
        _client(running.url) as client,
    ):
        status = client.get("/v1/models/m").json()["model_version_status"]
        assert [(s["version"], s["state"]) for s in status] == [("2", "AVAILABLE")]
        np.testing.assert_allclose(client.post("/v1/models/m:predict", json={"instances": X}).json()["predictions"],
                                   want, rtol=1e-6)  # fmt: skip
        assert client.post("/v1/models/m/versions/1:predict", json={"instances": X}).status_code == 404


def test_hot_reload_under_traffic_and_a_failed_reload(tmp_path):
    import ndflow.serving as serving

    save(dense_model(seed=1), tmp_path / "m" / "1")
    before = nf.memory().num_tensors
    app = serving.app([str(tmp_path / "m")], poll_s=0.05, max_batch=8, batch_timeout_ms=1, tune_gc=False)
    failures: list[str] = []
    versions: set[str] = set()
    stop = threading.Event()
    with ServerThread(app) as running, _client(running.url) as client:

        def traffic():
            while not stop.is_set():
                r = client.post("/v1/models/m:predict", json={"instances": X})
                if r.status_code != 200:
                    failures.append(r.text)
                versions.add(client.get("/v1/models/m/metadata").json()["model_spec"]["version"])

        threads = [threading.Thread(target=traffic) for _ in range(3)]
        for t in threads:
            t.start()
        time.sleep(0.1)
        save(dense_model(seed=2), tmp_path / "m" / "2")
        _wait(lambda: "2" in versions)
        # version 3 is damaged: reported, and version 2 keeps serving
        (tmp_path / "m" / "3").mkdir()
        (tmp_path / "m" / "3" / "model.json").write_text('{"modelTopology": ')
        _wait(lambda: any(s["version"] == "3" for s in client.get("/v1/models/m").json()["model_version_status"]))
        time.sleep(0.1)
        stop.set()
        for t in threads:
            t.join()
        status = {s["version"]: s for s in client.get("/v1/models/m").json()["model_version_status"]}
        assert status["2"]["state"] == "AVAILABLE" and status["1"]["state"] == "END"
        assert status["3"]["state"] == "END" and status["3"]["status"]["error_code"] != "OK"
        assert "model.json" in status["3"]["status"]["error_message"]
        assert client.post("/v1/models/m:predict", json={"instances": X}).status_code == 200
        assert client.get("/v1/models/m/metadata").json()["model_spec"]["version"] == "2"
        metrics = client.get("/metrics").text
        assert 'ndflow_serve_model_loads_total{model="m",result="failed"} 1.0' in metrics
        old = running.state.registry.entries["m"].current
        assert old.version == 2
    assert not failures, failures[:3]
    assert nf.memory().num_tensors == before


def test_a_plain_folder_is_version_1_and_a_model_that_never_loads_stops_the_start(tmp_path):
    from ndflow.serving.api import ServingState
    from ndflow.serving.config import ServeConfig
    from ndflow.serving.registry import LoadError, versions_of

    save(dense_model(), tmp_path / "plain")
    assert versions_of(str(tmp_path / "plain")) == {1: str(tmp_path / "plain" / "model.json")}
    (tmp_path / "broken" / "1").mkdir(parents=True)
    (tmp_path / "broken" / "1" / "model.json").write_text("not json")
    state = ServingState(
        ServeConfig(models=[str(tmp_path / "plain"), str(tmp_path / "broken")], poll_s=0, tune_gc=False)
    )
    with pytest.raises(LoadError, match="broken.*not a model.json"):
        asyncio.run(state.startup())
    state.executor.shutdown()


def _slow(running, name: str, seconds: float) -> None:
    """Make the served version of ``name`` take ``seconds`` longer per run."""
    servable = running.state.registry.entries[name].current
    run = servable.run

    def slow(feeds):
        time.sleep(seconds)
        return run(feeds)

    servable.run = slow


def test_graceful_shutdown_finishes_requests_in_flight(tmp_path):
    import ndflow.serving as serving

    save(dense_model(), tmp_path / "m")
    app = serving.app([str(tmp_path / "m")], poll_s=0, max_batch=64, batch_timeout_ms=5, tune_gc=False)
    results: list[int] = []
    running = ServerThread(app).__enter__()
    _slow(running, "m", 0.4)
    with _client(running.url) as client:
        t = threading.Thread(target=lambda: results.append(client.post("/v1/models/m:predict",
                                                                       json={"instances": X}).status_code))  # fmt: skip
        t.start()
        _wait(lambda: running.state.metrics.in_flight._value.get() == 1)
        running.stop()  # while the model runs the request
        t.join()
    assert results == [200]
    assert running.state.registry.closed


def test_request_timeout_is_504(tmp_path):
    import ndflow.serving as serving

    save(dense_model(), tmp_path / "m")
    before = nf.memory().num_tensors
    app = serving.app(
        [str(tmp_path / "m")], poll_s=0, max_batch=64, batch_timeout_ms=5, request_timeout_s=0.05, tune_gc=False
    )
    with ServerThread(app) as running, _client(running.url) as client:
        _slow(running, "m", 0.3)
        r = client.post("/v1/models/m:predict", json={"instances": X})
        assert r.status_code == 504 and "Deadline exceeded" in r.json()["error"]
        time.sleep(0.3)  # the late result is dropped, and the version's lease given back
        assert running.state.registry.entries["m"].current.leases == 0
    assert nf.memory().num_tensors == before
