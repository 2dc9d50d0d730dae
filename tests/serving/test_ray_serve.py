"""The serving app on Ray Serve (``ndflow.serving.deployment``): a local Ray instance with 2 replicas answers TF
Serving requests as the app does. Skipped when Ray Serve is not installed (it is the ``ray`` extra, not part of
the test extra)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest
from serve_helpers import dense_model, free_port, needs_serve, predict_local, save

RAY = importlib.util.find_spec("ray") is not None and importlib.util.find_spec("ray.serve") is not None
pytestmark = [needs_serve, pytest.mark.skipif(not RAY, reason="Ray Serve is not installed: pip install 'ndflow[ray]'")]


def test_deployment_settings_are_checked():
    from ndflow.serving import deployment

    with pytest.raises(ValueError, match="not both"):
        deployment(["m"], num_replicas=2, autoscaling_config={"min_replicas": 1, "max_replicas": 2})
    scaled = deployment(["m"], autoscaling_config={"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8})
    assert scaled.name == "ndflow-serving"


def test_two_replicas_on_a_local_ray(tmp_path):
    import httpx
    import ray
    from ray import serve

    from ndflow.serving import deployment

    save(dense_model(), tmp_path / "dense" / "1")
    xs = np.array([[1, 2, 3], [4, 5, 6]], np.float32)
    (want,) = predict_local(tmp_path / "dense" / "1" / "model.json", xs)
    port = free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        serve.start(http_options={"host": "127.0.0.1", "port": port})
        app = deployment([str(tmp_path / "dense")], num_replicas=2, ray_actor_options={"num_cpus": 0.5}, poll_s=0)
        serve.run(app.bind(), name="ndflow", route_prefix="/")
        states = serve.status().applications["ndflow"].deployments["ndflow-serving"].replica_states
        assert dict(states) == {"RUNNING": 2}
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=60) as client:
            for _ in range(6):
                r = client.post("/v1/models/dense:predict", json={"instances": xs.tolist()})
                assert r.status_code == 200
                np.testing.assert_allclose(r.json()["predictions"], want, rtol=1e-6)
            bad = client.post("/v1/models/dense:predict", json={"instances": [[1, 2]]})
            assert bad.status_code == 400 and "shape" in bad.json()["error"]
            assert client.get("/v1/models/dense").json()["model_version_status"][0]["state"] == "AVAILABLE"
    finally:
        serve.shutdown()
        ray.shutdown()
