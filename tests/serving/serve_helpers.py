"""Helpers of the serving tests: small models saved to folders, and the app run by uvicorn in a thread on a free
loopback port."""

from __future__ import annotations

import importlib.util
import json
import shutil
import socket
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ndflow as nf

MISSING = [m for m in ("starlette", "uvicorn", "prometheus_client", "httpx") if importlib.util.find_spec(m) is None]
#: Skip marker of the tests that start a server.
needs_serve = pytest.mark.skipif(
    bool(MISSING), reason=f"the serve extra is not installed ({', '.join(MISSING)}): pip install -e '.[test]'"
)
GRAPH_FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "graph_models"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def save(model: Any, folder: Path) -> Path:
    """Save a layers model to ``folder`` (created) and dispose it."""
    folder.mkdir(parents=True, exist_ok=True)
    model.save(f"file://{folder}")
    model.dispose()
    return folder


def dense_model(units: int = 2, seed: int = 1, batch: int | None = None) -> Any:
    """A Dense layer on 3 features (a fixed batch of ``batch`` when given)."""
    shape = {"batch_input_shape": [batch, 3]} if batch else {"input_shape": [3]}
    init = nf.initializers.random_normal(seed=seed)
    return nf.sequential(layers=[nf.layers.dense(units=units, kernel_initializer=init, **shape)])


def multi_model() -> Any:
    """Two named inputs ``a`` [3] and ``b`` [2], two named outputs ``o1`` [2] and ``o2`` [1]."""
    a = nf.input(shape=[3], name="a")
    b = nf.input(shape=[2], name="b")
    joined = nf.layers.concatenate().apply([a, b])
    init = nf.initializers.random_normal(seed=3)
    o1 = nf.layers.dense(units=2, name="o1", kernel_initializer=init).apply(joined)
    o2 = nf.layers.dense(units=1, name="o2", kernel_initializer=init).apply(joined)
    return nf.model(inputs=[a, b], outputs=[o1, o2])


def strings_model(folder: Path) -> Path:
    """A graph model: ``text`` (strings) -> ``echo_bytes`` (the same), ``x`` [-1, 2] -> ``neg`` (-x)."""

    def node(name: str, op: str, inputs: list[str], **attr: Any) -> dict:
        return {"name": name, "op": op, "attr": attr, **({"input": inputs} if inputs else {})}

    def placeholder(name: str, dims: list[int], dtype: str) -> dict:
        shape = {"shape": {"dim": [{"size": str(d)} for d in dims]}}
        return node(name, "Placeholder", [], dtype={"type": dtype}, shape=shape)

    nodes = [
        placeholder("text", [-1], "DT_STRING"),
        node("echo_bytes", "Identity", ["text"], T={"type": "DT_STRING"}),
        placeholder("x", [-1, 2], "DT_FLOAT"),
        node("neg", "Neg", ["x"], T={"type": "DT_FLOAT"}),
    ]
    folder.mkdir(parents=True, exist_ok=True)
    topology = {"node": nodes, "versions": {"producer": 7}}
    body = {"format": "graph-model", "modelTopology": topology, "weightsManifest": [{"paths": [], "weights": []}]}
    (folder / "model.json").write_text(json.dumps(body))
    return folder


def graph_basic(folder: Path) -> Path:
    """The hand-built ``basic`` graph model (input ``features`` [-1, 3], outputs ``probs`` and ``shape``)."""
    shutil.copytree(GRAPH_FIXTURES / "basic", folder)
    return folder


def predict_local(model_json: Path, *xs: np.ndarray) -> list[np.ndarray]:
    """What ``model.predict`` gives in this process for a saved layers model."""
    model = nf.load_layers_model(str(model_json))
    try:

        def run() -> list[np.ndarray]:
            out = model.predict([nf.tensor(x) for x in xs] if len(xs) > 1 else nf.tensor(xs[0]))
            return [t.numpy() for t in (list(out) if isinstance(out, list | tuple) else [out])]

        return nf.tidy(run)
    finally:
        model.dispose()


class ServerThread:
    """``app`` served by uvicorn in a thread on a free loopback port; ``url`` once started."""

    def __init__(self, app: Any) -> None:
        import uvicorn

        self.app = app
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False,
                                timeout_graceful_shutdown=10)  # fmt: skip
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.url = ""

    def __enter__(self) -> ServerThread:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.005)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(30)

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def state(self) -> Any:
        return self.app.state.serving
