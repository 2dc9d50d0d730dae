"""The ``ndflow`` command: ``demo`` (a short tour), ``info`` (version, backends, flags), ``predict`` (run a
model) and ``bench`` (time a model, its FLOP rate and its slowest kernels); ``ndflow --version``.

``predict`` and ``bench`` report a user's mistake (a missing file, a bad flag value, an input the model cannot
take) as one ``ndflow predict: error: ...`` line on stderr, exit status 2 (the command line) or 1 (the files);
see ``ndflow.converter.cli_common``."""

from __future__ import annotations

import argparse
import sys


def _versions() -> list[str]:
    import importlib.metadata as md
    import platform

    out = [f"python {platform.python_version()}"]
    for package in ("numpy", "torch", "wgpu", "tqdm"):
        try:
            out.append(f"{package} {md.version(package)}")
        except md.PackageNotFoundError:
            pass
    return out


def _info() -> int:
    import ndflow as nf

    print(f"ndflow {nf.__version__}")
    print(f"with {', '.join(_versions())}")
    active = nf.get_backend()
    from ndflow.backends import coverage

    print("backends (highest priority first):")
    for name, kernels in coverage().items():
        mark = " (active)" if name == active else ""
        backend = nf.find_backend(name)
        where = getattr(backend, "description", None) if backend is not None else "failed to initialize"
        detail = f", {where()}" if callable(where) else (f", {where}" if where else "")
        print(f"  {name}{mark}: {len(kernels)} kernels{detail}")
    print("flags:")
    for name, value in nf.env().features().items():
        print(f"  {name} = {value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from .version import __version__

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
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv and argv[0] in ("predict", "bench"):  # their own parsers take every argument after the command
        args = argparse.Namespace(command=argv[0], rest=argv[1:])
    else:
        args = parser.parse_args(argv)
    if args.command == "predict":
        from .converter.cli_predict import main as predict_main

        return predict_main(args.rest)
    if args.command == "bench":
        from .bench import main as bench_main

        return bench_main(args.rest)
    if args.command == "info":
        return _info()
    from .converter.cli_common import CliError, check_backend, report

    try:
        check_backend(args.backend)
    except CliError as err:
        return report("ndflow demo", err)
    from .demo import run_demo

    return run_demo(args.backend)


if __name__ == "__main__":
    sys.exit(main())
