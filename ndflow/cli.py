"""The ``ndflow`` command: ``demo`` (a short tour) and ``info`` (version, backends, flags)."""

from __future__ import annotations

import argparse
import sys


def _info() -> int:
    import ndflow as nf

    print(f"ndflow {nf.__version__}")
    active = nf.get_backend()
    from ndflow.backends import coverage

    print("backends (highest priority first):")
    for name, kernels in coverage().items():
        mark = " (active)" if name == active else ""
        print(f"  {name}{mark}: {len(kernels)} kernels")
    print("flags:")
    for name, value in nf.env().features().items():
        print(f"  {name} = {value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ndflow", description="TensorFlow.js for Python")
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="a short tour: tensors, tidy, memory, async reads, debug mode")
    demo.add_argument("--backend", default=None, help="backend to run the tour on (default: the best available)")
    sub.add_parser("info", help="version, backends and flags")
    args = parser.parse_args(argv)
    if args.command == "info":
        return _info()
    from .demo import run_demo

    return run_demo(args.backend)


if __name__ == "__main__":
    sys.exit(main())
