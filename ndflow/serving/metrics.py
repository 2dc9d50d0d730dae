"""Prometheus metrics of the server (prometheus-client): requests by model, method and status code, request
latency, batch sizes, the models' load events, and ndflow's ``memory()`` as gauges.

Each app has its own registry, so that several apps can live in one process (tests). With several worker
processes (``PROMETHEUS_MULTIPROC_DIR`` set, as ``ndflow serve --workers N`` does), the values are written to
that folder and ``/metrics`` sums the workers' (prometheus-client's multi-process mode)."""

from __future__ import annotations

import os
from typing import Any

from ..core.globals import memory
from .errors import ServingError

LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)


def _prometheus() -> Any:
    try:
        import prometheus_client
    except ImportError:
        raise ImportError(
            "ndflow.serving needs prometheus-client for its metrics: pip install 'ndflow[serve]' "
            "(or pip install prometheus-client)"
        ) from None
    return prometheus_client


class Metrics:
    """The server's metrics; ``render()`` is the ``/metrics`` body and its content type."""

    def __init__(self) -> None:
        prom = _prometheus()
        self._prom = prom
        self.multiprocess = bool(os.environ.get("PROMETHEUS_MULTIPROC_DIR"))
        self.registry = prom.CollectorRegistry(auto_describe=True)
        reg = self.registry
        self.requests = prom.Counter("ndflow_serve_requests", "Requests answered, by model, method and HTTP status",
                                     ["model", "method", "code"], registry=reg)  # fmt: skip
        self.latency = prom.Histogram("ndflow_serve_request_seconds", "Time to answer a request, by model and method",
                                      ["model", "method"], buckets=LATENCY_BUCKETS, registry=reg)  # fmt: skip
        self.batch_requests = prom.Histogram("ndflow_serve_batch_requests", "Requests merged into one model run",
                                             ["model"], buckets=BATCH_BUCKETS, registry=reg)  # fmt: skip
        self.batch_rows = prom.Histogram("ndflow_serve_batch_rows", "Rows (instances) in one model run",
                                         ["model"], buckets=BATCH_BUCKETS, registry=reg)  # fmt: skip
        self.loads = prom.Counter("ndflow_serve_model_loads", "Model versions loaded (ok) or failed to load",
                                  ["model", "result"], registry=reg)  # fmt: skip
        gauge: dict[str, Any] = {"registry": reg}
        if self.multiprocess:
            gauge["multiprocess_mode"] = "livesum"
        self.in_flight = prom.Gauge("ndflow_serve_in_flight", "Predict requests being answered", **gauge)
        self.num_tensors = prom.Gauge("ndflow_memory_num_tensors", "memory().num_tensors", **gauge)
        self.num_bytes = prom.Gauge("ndflow_memory_num_bytes", "memory().num_bytes", **gauge)
        self.num_buffers = prom.Gauge("ndflow_memory_num_data_buffers", "memory().num_data_buffers", **gauge)

    def observe(self, model: str, method: str, code: int, seconds: float) -> None:
        self.requests.labels(model, method, str(code)).inc()
        self.latency.labels(model, method).observe(seconds)

    def batch(self, model: str, requests: int, rows: int) -> None:
        self.batch_requests.labels(model).observe(requests)
        self.batch_rows.labels(model).observe(rows)

    def update_memory(self) -> None:
        info = memory()
        self.num_tensors.set(info.num_tensors)
        self.num_bytes.set(info.num_bytes)
        self.num_buffers.set(info.num_data_buffers)

    def render(self) -> tuple[bytes, str]:
        """The text exposition of every metric (all workers' in multi-process mode)."""
        self.update_memory()
        prom = self._prom
        if self.multiprocess:
            from prometheus_client import multiprocess

            registry = prom.CollectorRegistry()
            multiprocess.MultiProcessCollector(registry)
            return prom.generate_latest(registry), prom.CONTENT_TYPE_LATEST
        return prom.generate_latest(self.registry), prom.CONTENT_TYPE_LATEST


def error_code(exc: BaseException) -> int:
    """The HTTP status a failed request is counted under."""
    return exc.status if isinstance(exc, ServingError) else 500
