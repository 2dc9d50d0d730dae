"""Serve TF.js models on Ray Serve: the same app as ``ndflow serve`` (TensorFlow Serving's REST API, batching,
metrics, hot reload) in every replica, with Ray Serve routing requests across the replicas.

    python examples/ray_serve.py                       # a small demo model, 2 replicas, one request, then stop
    python examples/ray_serve.py models/emotion --replicas 4 --keep
    python examples/ray_serve.py models/emotion --autoscale --keep   # 1..4 replicas following the load

Needs Ray Serve: pip install 'ndflow[ray]'. Requests go to http://127.0.0.1:PORT/v1/models/NAME:predict.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
import urllib.request

import ndflow as nf


def demo_model(folder: str) -> str:
    """A small layers model (3 features -> 2 outputs) saved as version 1 of ``folder``/demo."""
    path = os.path.join(folder, "demo", "1")
    os.makedirs(path)
    model = nf.sequential(layers=[nf.layers.dense(units=2, input_shape=[3], kernel_initializer="ones")])
    model.save(f"file://{path}")
    model.dispose()
    return os.path.dirname(path)


def call(url: str, body: dict | None = None) -> dict:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return json.loads(response.read())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("models", nargs="*", help="[NAME=]PATH as for ndflow serve (default: a demo model)")
    parser.add_argument("--replicas", type=int, default=2, help="replicas (default 2)")
    parser.add_argument("--autoscale", action="store_true", help="1 to 4 replicas, following the load")
    parser.add_argument("--port", type=int, default=0, help="HTTP port (default: a free one)")
    parser.add_argument("--max-batch", type=int, default=16, help="batching in each replica (default 16)")
    parser.add_argument("--keep", action="store_true", help="keep serving until Ctrl-C")
    args = parser.parse_args()
    try:
        import ray
        from ray import serve
    except ImportError:
        print("this example needs Ray Serve: pip install 'ndflow[ray]'", file=sys.stderr)
        return 1
    from ndflow.serving import deployment
    from ndflow.serving.config import model_map

    with tempfile.TemporaryDirectory(prefix="ndflow-ray-") as tmp:
        models = args.models or [demo_model(tmp)]
        if args.port == 0:
            import socket

            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                args.port = s.getsockname()[1]
        scaling = {"min_replicas": 1, "max_replicas": 4, "target_ongoing_requests": 8} if args.autoscale else None
        app = deployment(models, num_replicas=None if scaling else args.replicas, autoscaling_config=scaling,
                         ray_actor_options={"num_cpus": 0}, max_batch=args.max_batch, poll_s=2.0)  # fmt: skip
        ray.init(include_dashboard=False, log_to_driver=False)
        try:
            serve.start(http_options={"host": "127.0.0.1", "port": args.port})
            serve.run(app.bind(), name="ndflow", route_prefix="/")
            base = f"http://127.0.0.1:{args.port}"
            name = next(iter(model_map(models)))
            meta = call(f"{base}/v1/models/{name}/metadata")
            inputs = meta["metadata"]["signature_def"]["signature_def"]["serving_default"]["inputs"]
            print(f"serving {name} version {meta['model_spec']['version']} at {base}/v1/models/{name}")
            if not args.models:
                out = call(f"{base}/v1/models/{name}:predict", {"instances": [[1.0, 2.0, 3.0]]})
                print(f"predict [[1, 2, 3]] -> {out['predictions']}")
            else:
                print("inputs: " + ", ".join(f"{k} {[int(d['size']) for d in v['tensor_shape']['dim']]}"
                                             for k, v in inputs.items()))  # fmt: skip
            states = serve.status().applications["ndflow"].deployments["ndflow-serving"].replica_states
            print(f"replicas: {dict(states)}")
            while args.keep:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass
        finally:
            serve.shutdown()
            ray.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
