"""``ndflow demo``: a short tour of tensors, tidy, memory counts, async reads and debug mode."""

from __future__ import annotations

import asyncio
import logging

import ndflow as nf


def _section(title: str) -> None:
    print(f"\n== {title} ==")


def _digits_demo() -> None:
    """The short version of examples/train_digits.py (needs the repository's examples/ folder)."""
    import importlib.util
    from pathlib import Path

    script = Path(nf.__file__).resolve().parent.parent / "examples" / "train_digits.py"
    if not script.exists():
        print("  (examples/train_digits.py is not next to this installation; run it from a checkout)")
        return
    spec = importlib.util.spec_from_file_location("ndflow_train_digits", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.short_demo(epochs=2, print_fn=lambda *args: print(" ", *args))


def run_demo(backend: str | None = None) -> int:
    if backend is not None and not nf.set_backend(backend):
        print(f"backend '{backend}' could not be initialized")
        return 1
    print(f"ndflow {nf.__version__} on backend '{nf.get_backend()}'")

    _section("tensors")
    a = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = nf.tensor([[0.0, 2.0], [4.0, 6.0]])
    print("a =", a)
    print(f"a.shape={a.shape} a.dtype={a.dtype} a.rank={a.rank} a.size={a.size}")
    with_ops = nf.tidy(lambda: [a @ b + 1, a.square().log().neg(), a[:, ::-1]])
    for text, t in zip(("a @ b + 1", "a.square().log().neg()", "a[:, ::-1]"), with_ops, strict=True):
        print(f"{text} = {t}")
    nf.dispose(with_ops)

    _section("tidy: intermediates are freed")
    before = nf.memory()
    print(f"before: num_tensors={before.num_tensors} num_bytes={before.num_bytes}")
    y = nf.tidy(lambda: nf.mean(nf.square(nf.sub(a, b))))
    after = nf.memory()
    print(f"mse = {y.data_sync()[0]}  (square and sub were disposed by tidy)")
    print(f"after:  num_tensors={after.num_tensors} num_bytes={after.num_bytes}  (+1: the returned mse)")

    _section("the leak loop of the seeds, with and without tidy")
    start = nf.memory().num_tensors
    for _ in range(100):
        nf.tidy(lambda: nf.mat_mul(nf.ones([50, 30]), nf.transpose(nf.ones([50, 30]))).dispose())
    print(f"100 iterations inside tidy: num_tensors {start} -> {nf.memory().num_tensors}")
    made = []
    for _ in range(10):
        x1, x2 = nf.ones([50, 30]), nf.ones([50, 30])
        x2t = nf.transpose(x2)
        made += [x1, x2, x2t, nf.mat_mul(x1, x2t)]
    print(f"10 iterations without tidy: num_tensors {start} -> {nf.memory().num_tensors} (4 per iteration)")
    nf.dispose(made)
    print(f"after disposing them by hand: num_tensors {nf.memory().num_tensors}")

    _section("asynchronous read")
    values = asyncio.run(y.data())
    print(f"await y.data() -> {values!r}")

    _section("debug mode: every kernel logged, NaN/Inf raises")
    logging.basicConfig(level=logging.INFO, format="  %(name)s: %(message)s")
    nf.enable_debug_mode()
    nf.tidy(lambda: nf.softmax(a @ b)).dispose()
    try:
        nf.tidy(lambda: nf.log(nf.sub(a, a)))
    except nf.ComputationError as exc:
        print(f"  caught: {exc}")
    nf.env().set("DEBUG", False)

    _section("autodiff and an optimizer")
    x = nf.tensor([1.0, 2.0, 3.0])
    dx = nf.grad(lambda t: nf.sum(t * t * t))(x)
    print(f"d/dx sum(x^3) at {x.data_sync().tolist()} = {dx.data_sync().tolist()}")
    w = nf.tidy(lambda: nf.variable(nf.zeros([1]), name="demo_w"))  # the zeros are freed, w keeps its data
    opt = nf.train.sgd(0.1)
    for _ in range(50):
        opt.minimize(lambda: nf.mean(nf.square(nf.sub(nf.mul(w, x), nf.mul(x, 2.0)))))
    print(f"fit y = 2x with sgd: w = {w.data_sync()[0]:.4f}")
    nf.dispose([x, dx])
    opt.dispose()
    w.dispose()

    _section("leak finder (beyond TF.js)")
    nf.env().set("TRACK_LEAKS", True)

    def leaky() -> None:
        nf.ones([16, 16])  # created and dropped without dispose()

    leaky()
    for report in nf.leaks():
        print(f"  {report}")
    nf.env().set("DISPOSE_UNREACHABLE", True)  # free what leaked
    nf.memory()
    nf.env().set("DISPOSE_UNREACHABLE", False)
    nf.env().set("TRACK_LEAKS", False)

    _section("deeplearn.js 0.x API")
    import ndflow.legacy as dl

    math = dl.NDArrayMathCPU()
    msd = math.scope(lambda keep, track: math.mean(math.square(math.sub(a, b))))
    print(f"math.scope(lambda keep, track: ...) -> {msd.getValues()}")
    msd.dispose()

    _section("training a small CNN on real digits (Layers API)")
    _digits_demo()

    nf.dispose([a, b, y])
    print(f"\nfinal memory: {nf.memory()}")
    return 0
