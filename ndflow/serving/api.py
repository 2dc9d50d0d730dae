"""The ASGI app (Starlette): TensorFlow Serving's REST API (model status, metadata, ``:predict``), ``/healthz``,
``/readyz`` and ``/metrics``, with the registry's version polling and the batchers run in its lifespan.

Model runs happen in a thread pool, never on the event loop. Every error is TensorFlow Serving's body
``{"error": "..."}`` with its HTTP status; nothing a request sends stops the server."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import logging
import re
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from . import codec
from .batching import Batcher
from .config import CONFIG_ENV, ServeConfig
from .errors import ServingError, invalid, not_found
from .metrics import Metrics
from .registry import Registry
from .runner import Servable

LOG = logging.getLogger("ndflow.serving")
_ROUTE = re.compile(
    r"^/v1/models/(?P<name>[^/:]+)(?:/versions/(?P<version>[^/:]+)|/labels/(?P<label>[^/:]+))?"
    r"(?P<tail>/metadata|:[A-Za-z]+)?/?$"
)


def _starlette() -> Any:
    try:
        import starlette.applications
    except ImportError:
        raise ImportError(
            "ndflow.serving needs Starlette (and uvicorn to serve it): pip install 'ndflow[serve]' "
            "(or pip install starlette uvicorn prometheus-client)"
        ) from None
    return starlette


def _backend_ready() -> None:
    from ..core.engine import ENGINE

    if not ENGINE.backend.wait_ready(120.0):
        LOG.warning("the backend's compiled kernels are still loading after 120 s; serving meanwhile")


def _tune_gc() -> None:
    """``ServeConfig.tune_gc``: the objects alive now (modules, models, libraries) out of the collector's scans, and
    the youngest generation collected every 20,000 allocations (never fewer than the process had set)."""
    import gc

    gc.collect()
    gc.freeze()
    first, *rest = gc.get_threshold()
    gc.set_threshold(max(first, 20_000), *rest)


def _json(body: Any, status: int = 200) -> Any:
    from starlette.responses import Response

    return Response(json.dumps(body, separators=(",", ":")), status, media_type="application/json")


def _error(exc: ServingError) -> Any:
    return _json(exc.body(), exc.status)


class ServingState:
    """What one app holds: the settings, the registry, the thread pool, the metrics and the batchers."""

    def __init__(self, config: ServeConfig) -> None:
        self.config = config
        self.metrics = Metrics()
        self.registry = Registry(config.models, warm_up=config.warm_up, on_retire=self._retired)
        self.executor: ThreadPoolExecutor | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.poller: asyncio.Task | None = None
        self.stopping = False
        self.started = False
        self.arriving: collections.Counter[str] = collections.Counter()  # predict requests not yet decoded

    # -- lifespan -------------------------------------------------------------------------------------------
    async def startup(self) -> None:
        """Load the models (in a thread), then poll their folders for new versions."""
        self.loop = asyncio.get_running_loop()
        if self.config.backend is not None:
            from ..core.globals import set_backend

            set_backend(self.config.backend)
        self.executor = ThreadPoolExecutor(self.config.threads, thread_name_prefix="ndflow-serve")
        # The backend at full speed before the warm-up runs (the cpu backend loads its compiled kernels in the
        # background: until then its convolutions run several times slower, and the load takes a core).
        await self.loop.run_in_executor(self.executor, _backend_ready)
        await self.loop.run_in_executor(self.executor, self.registry.load_all)
        if self.config.tune_gc:
            _tune_gc()
        for s in self.registry.servables():
            self.metrics.loads.labels(s.name, "ok").inc()
        if self.config.poll_s > 0:
            self.poller = self.loop.create_task(self._poll())
        self.started = True
        LOG.info("serving %s", ", ".join(f"{s.name} v{s.version}" for s in self.registry.servables()),
                 extra={"event": "ready"})  # fmt: skip

    async def shutdown(self) -> None:
        """Stop polling, run what the batchers hold, retire every version and stop the threads."""
        self.stopping = True
        if self.poller is not None:
            self.poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.poller
        batchers = [s.batcher for s in self.registry.servables() if s.batcher is not None]
        await asyncio.gather(*(b.aclose() for b in batchers))
        if self.executor is not None:
            await asyncio.get_running_loop().run_in_executor(self.executor, self.registry.close)
            self.executor.shutdown(wait=True)
        else:
            self.registry.close()
        LOG.info("stopped", extra={"event": "stopped"})

    async def _poll(self) -> None:
        assert self.loop is not None and self.executor is not None
        while True:
            await asyncio.sleep(self.config.poll_s)
            before = {e.name: dict(e.statuses) for e in self.registry.entries.values()}
            switched = await self.loop.run_in_executor(self.executor, self.registry.poll)
            for name, _ in switched:
                self.metrics.loads.labels(name, "ok").inc()
            for entry in self.registry.entries.values():
                for version, status in entry.statuses.items():
                    if status.error_message and before[entry.name].get(version) is not status:
                        self.metrics.loads.labels(entry.name, "failed").inc()

    def poke(self, name: str) -> None:
        """A request for ``name`` failed before reaching its batcher: the batcher need not wait for it."""
        entry = self.registry.entries.get(name)
        servable = entry.current if entry is not None else None
        if servable is not None and servable.batcher is not None:
            servable.batcher.poke()

    def _retired(self, servable: Servable) -> None:
        batcher = servable.batcher
        if batcher is not None and self.loop is not None:
            self.loop.call_soon_threadsafe(batcher.close)

    # -- predict --------------------------------------------------------------------------------------------
    def _batcher(self, servable: Servable) -> Batcher | None:
        if self.config.max_batch < 2 or not servable.batchable:
            return None
        if servable.batcher is None:
            assert self.executor is not None
            name = servable.name
            servable.batcher = Batcher(servable.run, self.config.max_batch, self.config.batch_timeout_ms / 1000,
                                       self.executor, lambda n, rows: self.metrics.batch(name, n, rows),
                                       lambda: self.arriving[name])  # fmt: skip
        return servable.batcher

    async def predict(self, servable: Servable, decoded: codec.Decoded, deadline: float) -> dict[str, Any]:
        """The outputs of one request: batched with others when the model allows it. The servable's lease is
        released when the work is done, even if the request timed out before."""
        loop = asyncio.get_running_loop()
        batcher = self._batcher(servable)
        item = None
        try:
            if batcher is not None and not batcher.closed and decoded.rows is not None and decoded.rows >= 1:
                item = batcher.submit(decoded.feeds, decoded.rows)
                work: asyncio.Future = item.future
            else:
                if self.executor is None:
                    raise ServingError("the server is not running", "UNAVAILABLE")
                work = loop.run_in_executor(self.executor, servable.run, decoded.feeds)
        except BaseException:
            self.registry.release(servable)
            raise
        work.add_done_callback(lambda _: self.registry.release(servable))
        try:
            return await asyncio.wait_for(asyncio.shield(work), max(0.0, deadline - time.monotonic()))
        except TimeoutError:
            if item is not None and not item.started:
                work.cancel()
            work.add_done_callback(_consume)
            raise ServingError(f"Deadline exceeded: the request took over {self.config.request_timeout_s:g} s",
                               "DEADLINE_EXCEEDED") from None  # fmt: skip


def _consume(future: asyncio.Future) -> None:
    if not future.cancelled():
        future.exception()  # a timed-out request's late error is not "never retrieved"


async def _read_body(request: Any, limit: int) -> bytes:
    length = request.headers.get("content-length")
    too_big = ServingError(f"the request body is over the size limit of {limit} bytes", "PAYLOAD_TOO_LARGE")
    if length is not None and length.isdigit() and int(length) > limit:
        raise too_big
    chunks, size = [], 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > limit:
            raise too_big
        chunks.append(chunk)
    return b"".join(chunks)


def _version(text: str | None) -> int | None:
    if text is None:
        return None
    if not text.isdigit():
        raise invalid(f"the model version must be a non-negative integer, got '{text}'")
    return int(text)


def _make_routes(state: ServingState) -> list[Any]:
    from starlette.routing import Route

    metrics, registry = state.metrics, state.registry

    async def v1(request: Any) -> Any:
        started = time.monotonic()
        path = request.scope["path"]
        match = _ROUTE.match(path)
        name = match["name"] if match else ""
        label = name if name in registry.entries else "_unknown"
        tail = (match["tail"] or "") if match else ""
        method = {"": "status", "/metadata": "metadata", ":predict": "predict"}.get(tail, "other")
        try:
            if match is None:
                raise not_found(f"Malformed request: {request.method} {path}")
            if match["label"] is not None:
                raise not_found(f"Unrecognized servable version label: {match['label']} (labels are not supported)")
            version = _version(match["version"])
            if tail.startswith(":") and tail != ":predict":
                raise invalid(
                    f"'{tail[1:]}' is not supported: ndflow serve answers :predict, model status and metadata"
                )
            want = "POST" if tail == ":predict" else "GET"
            if request.method != want:
                raise ServingError(f"Malformed request: {request.method} {path} ({tail or 'status'} takes {want})",
                                   "INVALID_ARGUMENT", 405)  # fmt: skip
            if method == "predict":
                response = await _predict(request, name, version, started)
            elif method == "metadata":
                response = _json(_metadata(name, version))
            else:
                response = _json(registry.status(name, version))
            code = response.status_code
        except ServingError as exc:
            response, code = _error(exc), exc.status
            if method == "predict":
                LOG.info("predict failed", extra={"event": "predict", "model": name, "status": code,
                                                  "error": exc.message})  # fmt: skip
        metrics.observe(label, method, code, time.monotonic() - started)
        return response

    async def _predict(request: Any, name: str, version: int | None, started: float) -> Any:
        deadline = started + state.config.request_timeout_s
        arriving = name in registry.entries  # counted while its body is read and decoded (see Batcher.arriving)
        if arriving:
            state.arriving[name] += 1
        try:
            raw = await _read_body(request, state.config.max_body_bytes)
            try:
                body = codec.loads(raw)
            except (ValueError, UnicodeDecodeError) as exc:
                raise invalid(f"JSON Parse error: {exc}") from None
            servable = registry.acquire(name, version)
            metrics.in_flight.inc()
            handed = False
            try:
                decoded = codec.decode(body, servable.signature)
                handed = True  # from here the lease is released when the model's work is done
                state.arriving[name] -= 1
                arriving = False
                outputs = await state.predict(servable, decoded, deadline)
                result = codec.encode(outputs, decoded.columnar, decoded.rows)
            finally:
                metrics.in_flight.dec()
                if not handed:
                    registry.release(servable)
        finally:
            if arriving:
                state.arriving[name] -= 1
                state.poke(name)
        ms = round((time.monotonic() - started) * 1000, 3)
        LOG.debug("predict", extra={"event": "predict", "model": name, "version": servable.version, "status": 200,
                                    "rows": decoded.rows, "ms": ms})  # fmt: skip
        return _json(result)

    def _metadata(name: str, version: int | None) -> dict[str, Any]:
        servable = registry.acquire(name, version)
        try:
            spec = {"name": name, "signature_name": "", "version": str(servable.version)}
            return {"model_spec": spec, "metadata": {"signature_def": codec.signature_def(servable.signature)}}
        finally:
            registry.release(servable)

    async def healthz(request: Any) -> Any:
        return _json({"status": "ok"})

    async def readyz(request: Any) -> Any:
        ready = state.started and not state.stopping and registry.ready()
        models = {s.name: {"version": str(s.version), "batchable": s.batchable, "warmed_up": s.warmed}
                  for s in registry.servables()}  # fmt: skip
        return _json({"ready": ready, "models": models}, 200 if ready else 503)

    async def metrics_route(request: Any) -> Any:
        from starlette.responses import Response

        body, content_type = metrics.render()
        return Response(body, media_type=content_type)

    async def not_found_route(request: Any) -> Any:
        return _json({"error": f"Malformed request: {request.method} {request.url.path}"}, 404)

    return [
        Route("/v1/{rest:path}", v1, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
        Route("/healthz", healthz, methods=["GET"]),
        Route("/readyz", readyz, methods=["GET"]),
        Route("/metrics", metrics_route, methods=["GET"]),
        Route("/{rest:path}", not_found_route, methods=["GET", "POST", "PUT", "DELETE", "PATCH"]),
    ]


def app(models: Mapping[str, Any] | Iterable[Any] | ServeConfig, **options: Any) -> Any:
    """An ASGI app serving ``models`` with TensorFlow Serving's REST API.

    ``models``: paths (a model folder, ``MODEL/1/``-style version folders, a ``model.json``, an ``npm://`` or
    http URL), ``NAME=PATH`` strings, a ``{name: path}`` mapping, or a :class:`ServeConfig`; ``options`` are
    ServeConfig's fields (``max_batch``, ``batch_timeout_ms``, ``max_body_bytes``, ``request_timeout_s``,
    ``poll_s``, ``threads``, ``backend``). The models load when the app starts (its lifespan), so run it with a
    server that runs the lifespan (uvicorn does); ``app.state.serving`` is the :class:`ServingState`."""
    starlette = _starlette()
    config = models if isinstance(models, ServeConfig) else ServeConfig(models=models, **options)  # type: ignore[arg-type]
    if isinstance(models, ServeConfig) and options:
        raise TypeError("app: give the options in the ServeConfig, not as keywords too")
    state = ServingState(config)

    @contextlib.asynccontextmanager
    async def lifespan(_app: Any) -> AsyncIterator[None]:
        await state.startup()
        try:
            yield
        finally:
            await state.shutdown()

    application = starlette.applications.Starlette(routes=_make_routes(state), lifespan=lifespan)
    application.state.serving = state
    return application


def app_from_env() -> Any:
    """The app of a worker process of ``ndflow serve --workers N`` (its settings in ``NDFLOW_SERVE_CONFIG``)."""
    import os

    text = os.environ.get(CONFIG_ENV)
    if not text:
        raise RuntimeError(f"app_from_env: the environment variable {CONFIG_ENV} is not set")
    log = os.environ.get("NDFLOW_SERVE_LOG")
    if log:
        from .logs import configure

        level, _, fmt = log.partition(",")
        configure(level, fmt or "json")
    return app(ServeConfig.from_json(text))
