"""``ndflow predict MODEL.json [--input FILE.npy|IMAGE] [--backend B]``: run a graph or layers model once,
print its outputs, then time it.

Without ``--input`` each input gets seeded random values (input ``i``: seed ``--seed + i``; floats in
[0, 1), ints in [0, 256)) bit-identical to the TF.js oracle's (``run_model.js``), so that the outputs can
be compared with TF.js's. Unknown dimensions are 1 (batch), 3 (channels, last) or 224 (others), as there.
An image ``--input`` becomes the model's input as ``--channels``, ``--resize`` and ``--scale`` say
(``cli.inputs``: decoded by ``nf.node`` / ``nf.browser``); ``--input NAME=FILE`` feeds the input named NAME,
the plain ``--input FILE`` ones fill the others in the model's order; a user's mistake is one
``ndflow predict: error: ...`` line on stderr (``cli.common``).
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import os
import statistics
import sys
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from .common import (
    FAILURE,
    LOAD_ERRORS,
    CliError,
    CliParser,
    count,
    file_failure,
    input_file,
    model_json_path,
    report,
    use_backend,
)
from .inputs import RESIZES, SCALES, ImageOptions, format_shape, load_array, load_image, scale_values


def mulberry32(n: int, seed: int = 42) -> np.ndarray:
    """The first ``n`` values of the mulberry32 stream of ``seed`` in [0, 1) (float64, as TF.js's oracle)."""
    mask = 0xFFFFFFFF
    i = np.arange(1, n + 1, dtype=np.uint64)
    a = ((np.uint64(seed & mask) + i * np.uint64(0x6D2B79F5)) & np.uint64(mask)).astype(np.uint32)
    with np.errstate(over="ignore"):
        t = (a ^ (a >> np.uint32(15))) * (a | np.uint32(1))
        t = (t + (t ^ (t >> np.uint32(7))) * (t | np.uint32(61))) ^ t
        r = t ^ (t >> np.uint32(14))
    return r.astype(np.float64) / 4294967296.0


def seeded(shape: Sequence[int], dtype: str = "float32", seed: int = 42, low: float = 0.0, high: float = 1.0) -> Any:
    """Seeded values as the oracle's ``seeded_input.seeded``: float32 ``low + u*(high-low)``, int32 its floor,
    bool ``u >= 0.5``."""
    shape = tuple(int(d) for d in shape)
    n = int(np.prod(shape, dtype=np.int64)) if shape else 1
    u = mulberry32(n, seed)
    if dtype == "bool":
        return (u >= 0.5).reshape(shape)
    v = np.float64(low) + u * (np.float64(high) - np.float64(low))
    if dtype == "int32":
        return np.floor(v).astype(np.int32).reshape(shape)
    return v.astype(np.float32).reshape(shape)


def input_shape(shape: Sequence[int] | None) -> list[int]:
    """A concrete shape for a model input: unknown dims -> 1 (first), 3 (last), 224 (others)."""
    dims = list(shape or [])
    return [
        d if d is not None and d >= 0 else (1 if i == 0 else 3 if i == len(dims) - 1 else 224)
        for i, d in enumerate(dims)
    ]


def seeded_input(shape: Sequence[int] | None, dtype: str | None, index: int, seed: int = 42) -> np.ndarray:
    """The oracle's input ``index``: float32 in [0, 1), int inputs in [0, 256)."""
    dims = input_shape(shape)
    if dtype in ("int32", "uint8", "int64"):
        return seeded(dims, "int32", seed + index, 0, 256)
    return seeded(dims, dtype or "float32", seed + index)


def _load_model(path: str) -> tuple[str, Any]:
    from ndflow.layers.model_loading import load_any_model

    return load_any_model(path)


def _inputs_of(kind: str, model: Any) -> list[tuple[str, Any, Any]]:
    if kind == "graph":
        return [(i.name, i.shape, i.dtype) for i in model.inputs]
    names = list(getattr(model, "input_names", None) or [])  # the input layers' names, as the user gave them
    return [(names[k] if k < len(names) else getattr(t, "name", f"input_{k}"), list(t.shape), t.dtype)
            for k, t in enumerate(model.inputs)]  # fmt: skip


_LOOP: list[asyncio.AbstractEventLoop] = []


def run_coroutine(coro: Any) -> Any:
    """Run ``coro`` to completion on one event loop kept for the process (not from inside a running loop).

    ``asyncio.run`` makes and closes a loop on every call (0.15 ms), and on Python 3.11 it formats the finished
    task, result tensors included, when it puts the SIGINT handler back: 1.5 ms per FaceBoxes inference. TF.js's
    ``await model.executeAsync()`` runs in the loop already there; this is the same for a timed loop of runs."""
    if not _LOOP or _LOOP[0].is_closed():
        loop = asyncio.new_event_loop()
        _LOOP[:] = [loop]
        atexit.register(loop.close)  # closed when the process ends (no ResourceWarning)
    return _LOOP[0].run_until_complete(coro)


def _run(kind: str, model: Any, feeds: dict[str, Any], needs_async: bool) -> list[tuple[str, Any]]:
    if kind == "layers":
        xs = list(feeds.values())
        out = model.predict(xs[0] if len(xs) == 1 else xs)
        outs = out if isinstance(out, list | tuple) else [out]
        names = list(getattr(model, "output_names", [])) or [f"output_{k}" for k in range(len(outs))]
        return list(zip(names, outs, strict=False))
    names = [o.name for o in model.outputs]
    out = run_coroutine(model.execute_async(feeds, names)) if needs_async else model.execute(feeds, names)
    return list(zip(names, out if isinstance(out, list) else [out], strict=True))


def _summary(values: np.ndarray) -> str:
    if values.size == 0:
        return "empty"
    flat = values.ravel()
    first = ", ".join(f"{v:.6g}" for v in flat[:5].astype(np.float64))
    if values.dtype == np.bool_:
        return f"true={int(flat.sum())} first=[{first}]"
    f = flat.astype(np.float64)
    return f"min={f.min():.6g} max={f.max():.6g} mean={f.mean():.6g} sum={f.sum():.8g} first=[{first}]"


_HELP = """\
exit status: 0 done; 2 a mistake on the command line (a bad flag value, a path that does not exist, an
unknown backend); 1 a file that is not a model or a readable input, or an input the model cannot take.

images: an image --input is read with Pillow, converted to --channels, resized by --resize to the model's
input height and width, and its pixel values 0..255 mapped by --scale (integer inputs take 0..255 as they
are). A graph or layers model's image input is [batch, height, width, channels] or [height, width, channels].
  ndflow predict face-model/ --input face.jpg                   # channels and size from the model
  ndflow predict model.json --input photo.png --scale=-1-1 --resize crop
  ndflow predict mnist/ --input image=digit.png --scale 0-255  # by input name; 1 channel from the model
"""


def _parser() -> CliParser:
    p = CliParser(
        prog="ndflow predict",
        description="Run a TF.js graph or layers model once, print its outputs, then time it.",
        epilog=_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("model", help="model.json of a graph or layers model, or its folder")
    p.add_argument("--input", action="append", default=[], metavar="FILE",
                   help="an .npy file (fed as it is) or an image (PNG, JPEG, ...), one per model input in the "
                        "model's order, or NAME=FILE for the input named NAME; without --input each input gets "
                        "seeded random values")  # fmt: skip
    p.add_argument("--backend", default=None, help="ndflow backend (default: the best available)")
    p.add_argument("--seed", type=int, default=42, help="seed of the random inputs (input i uses seed + i)")
    p.add_argument("--warmup", type=count(0), default=1, help="untimed runs before timing (default 1)")
    p.add_argument("--runs", type=count(0), default=5, help="timed runs (default 5; 0: no timing)")
    image = p.add_argument_group("image inputs", "how an --input image becomes the model's input")
    image.add_argument("--channels", choices=("auto", "1", "3", "4"), default="auto",
                       help="1: grayscale, 3: RGB, 4: RGBA; auto (default): as many as the model's input has, "
                            "RGB when its shape does not say")  # fmt: skip
    image.add_argument("--scale", choices=("auto", *SCALES), default="auto",
                       help="the range pixel values 0..255 are mapped onto in a float input; auto (default): "
                            "0-1. Integer inputs take 0..255")  # fmt: skip
    image.add_argument("--resize", choices=RESIZES, default="stretch",
                       help="stretch (default): to the model's height and width; crop: cover them keeping the "
                            "aspect ratio, cutting the overhang evenly; pad: fit inside them keeping the aspect "
                            "ratio, black borders; none: keep the image's size, which must be the model's. "
                            "A height or width the model leaves open follows the image's aspect ratio")  # fmt: skip
    return p


def split_input(arg: str) -> tuple[str | None, str]:
    """``--input NAME=FILE`` as (NAME, FILE); a plain FILE (or a file whose own name has '=') as (None, FILE)."""
    name, sep, path = arg.partition("=")
    if sep and name and path and not os.path.exists(arg) and os.sep not in name:
        return name, path
    return None, arg


def assign_inputs(given: Sequence[tuple[str | None, str]], names: Sequence[str]) -> dict[str, str]:
    """Each model input's file: the named ones by name, the others in the model's order."""
    named: dict[str, str] = {}
    for name, path in given:
        if name is None:
            continue
        if name not in names:
            listed = ", ".join(repr(n) for n in names)
            raise CliError(f"--input {name}={path}: the model has no input {name!r} (its inputs: {listed})")
        if name in named:
            raise CliError(f"--input {name}=...: input {name!r} is given twice")
        named[name] = path
    rest = iter(path for name, path in given if name is None)
    return {n: named[n] if n in named else next(rest, "") for n in names}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of ``ndflow predict``; returns the exit status (a user's mistake: one line on stderr)."""
    try:
        return _predict(list(sys.argv[1:] if argv is None else argv))
    except CliError as err:
        return report("ndflow predict", err)


def _predict(argv: list[str]) -> int:
    args = _parser().parse_args(scale_values(argv))
    model_json_path(args.model)
    given = [split_input(arg) for arg in args.input]
    for _, path in given:
        input_file(path)
    options = ImageOptions(
        channels=None if args.channels == "auto" else int(args.channels),
        scale=None if args.scale == "auto" else args.scale,
        resize=args.resize,
    )

    import ndflow as nf

    previous = nf.get_backend()
    feeds: dict[str, Any] = {}
    model = None
    try:
        use_backend(args.backend)
        t0 = time.perf_counter()
        try:
            kind, model = _load_model(args.model)
            specs = _inputs_of(kind, model)
        except LOAD_ERRORS as exc:
            raise file_failure(args.model, exc) from None
        load_ms = (time.perf_counter() - t0) * 1000
        if args.input and len(args.input) != len(specs):
            names = ", ".join(repr(name) for name, _, _ in specs)
            raise CliError(f"the model has {len(specs)} input(s) ({names}), got {len(args.input)} --input")
        paths = assign_inputs(given, [name for name, _, _ in specs])
        for k, (name, shape, dtype) in enumerate(specs):
            if args.input:
                path = paths[name]
                if path.lower().endswith(".npy"):
                    arr = load_array(path, name, shape, dtype)
                else:
                    arr = load_image(path, shape, dtype, options, name)
            else:
                arr = seeded_input(shape, dtype, k, args.seed)
            want = "int32" if dtype in ("int32", "uint8", "int64") else (dtype or None)
            feeds[name] = nf.tensor(arr, list(arr.shape), want)
        print(f"{args.model} [{kind}] backend={nf.get_backend()} load={load_ms:.0f}ms")
        print("inputs: " + " ".join(f"{n}{list(t.shape)}:{t.dtype}" for n, t in feeds.items()))
        needs_async = kind == "graph" and model.needs_async()
        try:
            outs = _run(kind, model, feeds, needs_async)
        except ValueError as exc:  # what the model's checks and ops say of inputs they cannot take
            shapes = ", ".join(f"{n!r} {format_shape(list(t.shape))}" for n, t in feeds.items())
            raise CliError(f"{args.model} failed on the inputs {shapes}: {exc}", FAILURE) from None
        for name, t in outs:
            print(f"  {name} shape={list(t.shape)} {t.dtype} {_summary(np.asarray(t.numpy()))}")
        nf.dispose([t for _, t in outs])
        if args.runs > 0:
            times = []
            for i in range(args.warmup + args.runs):
                start = time.perf_counter()
                o = _run(kind, model, feeds, needs_async)
                for _, t in o:
                    t.data_sync()
                elapsed = (time.perf_counter() - start) * 1000
                nf.dispose([t for _, t in o])
                if i >= args.warmup:
                    times.append(elapsed)
            print(f"time median={statistics.median(times):.2f}ms min={min(times):.2f}ms "
                  f"(warmup {args.warmup}, runs {args.runs})")  # fmt: skip
    finally:
        nf.dispose(list(feeds.values()))
        if model is not None:
            model.dispose()
        nf.set_backend(previous)
    return 0


if __name__ == "__main__":
    sys.exit(main())
