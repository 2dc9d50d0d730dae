"""Training speed against the peers (issue 29): ndflow on each backend, eager PyTorch and Keras 3 on TensorFlow.

    python benchmarks/train_peers.py [--threads 1,2] [--models cnn,mlp,lstm] [--steps 5] [--rounds 6]
        [--warmup 5] [--keras-python PATH] [--fit-overhead] [--fit-batches 20]

Three models, each built from the same initial weights (the ndflow model's, copied into the others) and fed
the same seeded batch in every library:

- ``cnn``: conv 3x3 (32) + relu, max-pool 2x2, conv 3x3 (64) + relu, flatten, dense 10 + softmax on 28x28x1
  inputs, a batch of 64, categorical cross-entropy;
- ``mlp``: dense 784 -> 256 + relu -> 128 + relu -> 10 + softmax, a batch of 128, categorical cross-entropy;
- ``lstm``: embedding (10000 words, 64 values) -> LSTM (128, sigmoid recurrent activation) -> dense 1 +
  sigmoid over 50 int32 token ids, a batch of 32, binary cross-entropy;

all trained with Adam (learning rate 0.001, epsilon 1e-7). The runtimes, each timed per training step (forward,
backward and update, the loss read back as a Python float):

- ``ndflow cpu`` and ``ndflow torch``: ``model.train_on_batch(x, y)`` on that backend (torch: only where torch
  imports), the flag ``CPU_THREADS`` set to the thread count;
- ``PyTorch eager``: the models in ``torch.nn`` as a PyTorch program writes them (NCHW convolutions, logits
  with ``cross_entropy`` / ``binary_cross_entropy_with_logits``, ``nn.LSTM(batch_first=True)`` with
  ``b_ih`` = Keras's bias and ``b_hh`` = 0), ``torch.optim.Adam`` and ``zero_grad(set_to_none=True)``,
  ``torch.set_num_threads`` set to the thread count;
- ``Keras 3 / TF``: ``model.train_on_batch`` after ``compile`` with default settings, in a worker process
  (``benchmarks/train_keras_worker.py``) run by another Python, ``--keras-python`` (default: the environment
  variable ``NDFLOW_KERAS_PYTHON``; without either, Keras is skipped), since TensorFlow cannot share a process
  with torch. One worker per thread count, its TensorFlow sized to that many intra-op threads (one inter-op).

Each runtime first runs ``--warmup`` untimed steps; then in each of ``--rounds`` rounds every runtime runs
``--steps`` timed steps, the order rotating from round to round. A figure is the median over all timed steps.
The first step's losses (same weights, same batch) must agree within a relative 1e-3; a warning row says when
they do not. ``--fit-overhead`` also times, for the mlp, ``model.fit(x, y, batch_size=128, epochs=1,
verbose=0)`` over ``--fit-batches`` batches against as many ``train_on_batch`` calls (issue 29's target: fit's
overhead beyond the steps at most 5%). Prints one Markdown table per thread count with the machine.
"""

from __future__ import annotations

import os

# torch's OpenMP threads spin after each op unless told otherwise; next to the cpu backend that spinning
# slows it several times over (see benchmarks/train.py). Set before torch is imported.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import argparse  # noqa: E402
import json  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections.abc import Callable  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))

from machine import describe, load  # noqa: E402

import ndflow as nf  # noqa: E402

MODELS = ("cnn", "mlp", "lstm")
BATCH = {"cnn": 64, "mlp": 128, "lstm": 32}
VOCAB, SEQ = 10000, 50
RUNTIMES = ("ndflow cpu", "ndflow torch", "PyTorch eager", "Keras 3 / TF")
WORKER = Path(__file__).resolve().parent / "train_keras_worker.py"
LOSS_RTOL = 1e-3


def _torch() -> Any:
    """torch, or None where it does not import."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def make_batch(name: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(x, y for ndflow and Keras, labels for PyTorch) of ``name``'s batch, from a fixed seed."""
    rng = np.random.default_rng(0)
    n = BATCH[name]
    if name == "lstm":
        x = rng.integers(0, VOCAB, (n, SEQ)).astype(np.int32)
        y = rng.integers(0, 2, (n, 1)).astype(np.float32)
        return x, y, y
    x = rng.random((n, 28, 28, 1) if name == "cnn" else (n, 784), dtype=np.float32)
    labels = rng.integers(0, 10, n)
    return x, np.eye(10, dtype=np.float32)[labels], labels


def ndflow_model(name: str) -> nf.LayersModel:
    """``name`` as an ``nf.sequential`` model on the current backend, compiled with Adam."""
    model = nf.sequential()
    layers = nf.layers
    if name == "cnn":
        model.add(layers.conv2d(filters=32, kernel_size=3, activation="relu", input_shape=[28, 28, 1]))
        model.add(layers.max_pooling2d(pool_size=2))
        model.add(layers.conv2d(filters=64, kernel_size=3, activation="relu"))
        model.add(layers.flatten())
        model.add(layers.dense(units=10, activation="softmax"))
    elif name == "mlp":
        model.add(layers.dense(units=256, activation="relu", input_shape=[784]))
        model.add(layers.dense(units=128, activation="relu"))
        model.add(layers.dense(units=10, activation="softmax"))
    else:
        model.add(layers.embedding(input_dim=VOCAB, output_dim=64, input_length=SEQ))
        # Keras 3's recurrent activation (TF.js's default is hardSigmoid)
        model.add(layers.lstm(units=128, recurrent_activation="sigmoid"))
        model.add(layers.dense(units=1, activation="sigmoid"))
    loss = "binaryCrossentropy" if name == "lstm" else "categoricalCrossentropy"
    model.compile(optimizer=nf.train.adam(0.001), loss=loss)  # TF.js's Adam: epsilon 1e-7
    return model


class NdflowRuntime:
    """``model.train_on_batch`` on one ndflow backend, that backend made current before each run of steps."""

    def __init__(self, backend: str, name: str, weights: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> None:
        self.backend = backend
        nf.set_backend(backend)
        self.model = ndflow_model(name)
        self.model.set_weights(weights)
        self.x, self.y = nf.tensor(x), nf.tensor(y)

    def run(self, n: int) -> list[tuple[float, float]]:
        nf.set_backend(self.backend)
        return [_timed(lambda: float(self.model.train_on_batch(self.x, self.y))) for _ in range(n)]

    def close(self) -> None:
        nf.set_backend(self.backend)
        nf.dispose([self.x, self.y])
        self.model.optimizer.dispose()  # an optimizer passed to compile() as an object is the caller's
        self.model.dispose()


class TorchRuntime:
    """The model in eager PyTorch with the ndflow model's weights."""

    def __init__(self, name: str, weights: list[np.ndarray], x: np.ndarray, labels: np.ndarray) -> None:
        torch = _torch()
        self.torch, self.net = torch, torch_model(name, weights)
        self.opt = torch.optim.Adam(self.net.parameters(), lr=0.001, eps=1e-7)
        if name == "cnn":
            self.x = torch.from_numpy(x).permute(0, 3, 1, 2).contiguous()
        else:
            self.x = torch.from_numpy(x)
        self.target = torch.from_numpy(labels)
        fn = torch.nn.functional
        self.loss_fn = fn.binary_cross_entropy_with_logits if name == "lstm" else fn.cross_entropy

    def step(self) -> float:
        self.opt.zero_grad(set_to_none=True)
        loss = self.loss_fn(self.net(self.x), self.target)
        loss.backward()
        self.opt.step()
        return loss.item()

    def run(self, n: int) -> list[tuple[float, float]]:
        return [_timed(self.step) for _ in range(n)]

    def close(self) -> None:
        pass


def torch_model(name: str, weights: list[np.ndarray]) -> Any:
    """``name`` in ``torch.nn`` (logits out: the loss applies softmax / sigmoid), the weights copied from ndflow's
    layouts: HWIO filters to OIHW, dense kernels transposed (the first dense layer's rows of the cnn reordered
    from NHWC flattening to NCHW's), the LSTM's kernels transposed (both gate orders are i, f, c, o)."""
    torch = _torch()
    nn = torch.nn
    if name == "cnn":
        k1, b1, k2, b2, k3, b3 = weights
        side = int(round((k3.shape[0] // k2.shape[-1]) ** 0.5))
        dense = k3.reshape(side, side, k2.shape[-1], -1).transpose(2, 0, 1, 3).reshape(k3.shape[0], -1)
        net = nn.Sequential(
            nn.Conv2d(1, 32, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3), nn.ReLU(), nn.Flatten(),
            nn.Linear(k3.shape[0], 10),
        )  # fmt: skip
        values = [k1.transpose(3, 2, 0, 1), b1, k2.transpose(3, 2, 0, 1), b2, dense.T, b3]
    elif name == "mlp":
        net = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10))
        values = [w.T if w.ndim == 2 else w for w in weights]
    else:
        emb, kernel, recurrent, bias, dk, db = weights
        net = TextLSTM(nn)
        values = [emb, kernel.T, recurrent.T, bias, np.zeros_like(bias), dk.T, db]
    params = list(net.parameters())
    if len(params) != len(values):
        raise RuntimeError(f"{name}: {len(params)} torch parameters for {len(values)} weights")
    with torch.no_grad():
        for param, value in zip(params, values, strict=True):
            if tuple(param.shape) != value.shape:
                raise RuntimeError(f"{name}: torch parameter {tuple(param.shape)} for a weight {value.shape}")
            param.copy_(torch.from_numpy(np.ascontiguousarray(value)))
    return net


def TextLSTM(nn: Any) -> Any:  # noqa: N802 (a class made where torch is imported)
    """Embedding -> LSTM (last hidden state) -> one logit."""

    class _TextLSTM(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embedding = nn.Embedding(VOCAB, 64)
            self.lstm = nn.LSTM(64, 128, batch_first=True)
            self.dense = nn.Linear(128, 1)

        def forward(self, tokens: Any) -> Any:
            _, (h, _) = self.lstm(self.embedding(tokens))
            return self.dense(h[-1])

    return _TextLSTM()


class KerasWorker:
    """A ``train_keras_worker.py`` process (one thread count) spoken to by JSON lines."""

    def __init__(self, python: str, threads: int) -> None:
        self.log = tempfile.TemporaryFile(mode="w+")
        environ = {**os.environ, "TF_CPP_MIN_LOG_LEVEL": "3"}
        self.proc = subprocess.Popen(
            [python, str(WORKER), "--threads", str(threads)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, env=environ, bufsize=1,
        )  # fmt: skip
        self.versions = self._answer()

    def _answer(self) -> dict[str, Any]:
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line:
            self.proc.wait(timeout=30)
            raise RuntimeError(f"the Keras worker exited ({self.proc.returncode}): {self.log_tail()}")
        answer = json.loads(line)
        if not answer.get("ok"):
            raise RuntimeError(f"the Keras worker failed: {answer.get('error')}")
        return answer

    def log_tail(self, chars: int = 1500) -> str:
        self.log.seek(0)
        return self.log.read()[-chars:].strip() or "(no output)"

    def request(self, **message: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message) + "\n")
        self.proc.stdin.flush()
        return self._answer()

    def close(self) -> None:
        if self.proc.poll() is None:
            try:
                self.request_quit()
                self.proc.wait(timeout=30)
            except (OSError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
        self.log.close()

    def request_quit(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"op": "quit"}) + "\n")
        self.proc.stdin.close()


class KerasRuntime:
    """The model in the Keras worker; the worker times its own steps."""

    def __init__(self, worker: KerasWorker, name: str, weights: list[np.ndarray], x: np.ndarray, y: np.ndarray):
        self.worker = worker
        with tempfile.TemporaryDirectory() as folder:
            path = os.path.join(folder, f"{name}.npz")
            np.savez(path, x=x, y=y, **{f"w{i}": w for i, w in enumerate(weights)})
            worker.request(op="build", model=name, npz=path)

    def run(self, n: int) -> list[tuple[float, float]]:
        answer = self.worker.request(op="steps", n=n)
        return list(zip(answer["ms"], answer["losses"], strict=True))

    def close(self) -> None:
        pass


def _timed(step: Callable[[], float]) -> tuple[float, float]:
    """(ms, loss) of one step."""
    start = time.perf_counter()
    loss = step()
    return (time.perf_counter() - start) * 1000, loss


def measure(name: str, args: argparse.Namespace, worker: KerasWorker | None) -> dict[str, Any]:
    """{runtime: (median ms, first loss)} for ``name`` (the runtimes available), rounds interleaved."""
    x, y, labels = make_batch(name)
    nf.set_backend("cpu")
    source = ndflow_model(name)
    weights = [np.array(w.read().data_sync()).reshape(w.shape) for w in source.weights]
    source.optimizer.dispose()
    source.dispose()
    makers: dict[str, Callable[[], Any]] = {"ndflow cpu": lambda: NdflowRuntime("cpu", name, weights, x, y)}
    if args.torch_backend:
        makers["ndflow torch"] = lambda: NdflowRuntime("torch", name, weights, x, y)
    if _torch() is not None:
        makers["PyTorch eager"] = lambda: TorchRuntime(name, weights, x, labels)
    if worker is not None:
        makers["Keras 3 / TF"] = lambda: KerasRuntime(worker, name, weights, x, y)
    runtimes: dict[str, Any] = {}
    first: dict[str, float] = {}
    times: dict[str, list[float]] = {r: [] for r in makers}
    try:
        for runtime, make in makers.items():
            runtimes[runtime] = make()
        for runtime, rt in runtimes.items():
            steps = rt.run(args.warmup)
            if steps:
                first[runtime] = steps[0][1]
        names = list(runtimes)
        for r in range(args.rounds):
            for runtime in names[r % len(names) :] + names[: r % len(names)]:
                steps = runtimes[runtime].run(args.steps)
                first.setdefault(runtime, steps[0][1])
                times[runtime].extend(ms for ms, _ in steps)
    finally:
        for rt in runtimes.values():
            rt.close()
        nf.set_backend("cpu")
    return {runtime: (statistics.median(times[runtime]), first[runtime]) for runtime in runtimes}


def disagreements(result: dict[str, Any]) -> list[str]:
    """The runtimes whose first loss differs from ndflow cpu's by more than :data:`LOSS_RTOL` (relative)."""
    ref = result["ndflow cpu"][1]
    return [
        f"{runtime} {loss:.6f} vs ndflow cpu {ref:.6f}"
        for runtime, (_, loss) in result.items()
        if abs(loss - ref) > LOSS_RTOL * max(abs(ref), 1e-6)
    ]


def _cell(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def table(results: dict[str, dict[str, Any]]) -> str:
    """The Markdown table of one thread count: ms per step and the ratios, a warning row per disagreement."""
    lines = [
        "| model | ndflow cpu ms | ndflow torch ms | PyTorch eager ms | Keras 3 / TF ms | ndflow cpu / PyTorch | "
        "ndflow cpu / Keras | ndflow torch / PyTorch |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for name, result in results.items():
        ms = {runtime: result[runtime][0] if runtime in result else None for runtime in RUNTIMES}

        def ratio(a: str, b: str, ms: dict[str, float | None] = ms) -> str:
            x, y = ms[a], ms[b]
            return "—" if x is None or y is None else f"{x / y:.2f}x"

        cells = [_cell(ms[r]) for r in RUNTIMES]
        ratios = [ratio("ndflow cpu", "PyTorch eager"), ratio("ndflow cpu", "Keras 3 / TF"),
                  ratio("ndflow torch", "PyTorch eager")]  # fmt: skip
        lines.append(f"| {name} | " + " | ".join(cells + ratios) + " |")
        for problem in disagreements(result):
            lines.append(f"| {name} | warning: first losses differ: {problem} |" + " |" * 6)
    return "\n".join(lines)


def loss_table(results: dict[str, dict[str, Any]]) -> str:
    """The first step's loss of every runtime (same weights, same batch)."""
    lines = ["| model | " + " | ".join(f"{r} first loss" for r in RUNTIMES) + " | agree |", "|---" * 6 + "|"]
    for name, result in results.items():
        cells = [_cell(result[r][1] if r in result else None, 6) for r in RUNTIMES]
        agree = "no" if disagreements(result) else f"yes (rel. {LOSS_RTOL:g})"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {agree} |")
    return "\n".join(lines)


def fit_overhead(backend: str, args: argparse.Namespace) -> tuple[float, float]:
    """(median ms of ``model.fit`` over ``--fit-batches`` batches of the mlp, median ms of as many
    ``train_on_batch`` calls on the same batches), alternating over ``--rounds``."""
    nf.set_backend(backend)
    rng = np.random.default_rng(1)
    n = args.fit_batches * BATCH["mlp"]
    x_np = rng.random((n, 784), dtype=np.float32)
    y_np = np.eye(10, dtype=np.float32)[rng.integers(0, 10, n)]
    model = ndflow_model("mlp")
    x, y = nf.tensor(x_np), nf.tensor(y_np)
    b = BATCH["mlp"]
    batches = [(nf.tensor(x_np[i : i + b]), nf.tensor(y_np[i : i + b])) for i in range(0, n, b)]

    def fit() -> float:
        model.fit(x, y, batch_size=b, epochs=1, verbose=0)
        return 0.0

    def steps() -> float:
        return sum(float(model.train_on_batch(bx, by)) for bx, by in batches)

    fits, loops = [], []
    try:
        fit(), steps()  # warm-up
        for r in range(args.rounds):
            pair = [(fit, fits), (steps, loops)]
            for fn, out in pair if r % 2 == 0 else pair[::-1]:
                out.append(_timed(fn)[0])
    finally:
        nf.dispose([x, y, *[t for pair in batches for t in pair]])
        model.optimizer.dispose()
        model.dispose()
        nf.set_backend("cpu")
    return statistics.median(fits), statistics.median(loops)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="benchmarks/train_peers.py", description=__doc__.splitlines()[0])
    p.add_argument("--threads", default="1,2", help="thread counts, comma-separated (1,2)")
    p.add_argument("--models", default="cnn,mlp,lstm", help="models, comma-separated (cnn,mlp,lstm)")
    p.add_argument("--steps", type=int, default=5, help="timed steps per runtime per round (5)")
    p.add_argument("--rounds", type=int, default=6, help="rounds, the runtimes' order rotating (6)")
    p.add_argument("--warmup", type=int, default=5, help="untimed steps per runtime first (5)")
    p.add_argument(
        "--keras-python",
        default=os.environ.get("NDFLOW_KERAS_PYTHON"),
        help="a Python with tensorflow and keras for the Keras worker (default: $NDFLOW_KERAS_PYTHON)",
    )
    p.add_argument("--fit-overhead", action="store_true", help="also time the mlp's fit against train_on_batch")
    p.add_argument("--fit-batches", type=int, default=20, help="batches of --fit-overhead's epoch (20)")
    args = p.parse_args(argv)
    for flag in ("steps", "rounds", "fit_batches"):
        if getattr(args, flag) < 1:
            p.error(f"--{flag.replace('_', '-')} must be positive, got {getattr(args, flag)}")
    if args.warmup < 0:
        p.error(f"--warmup must be 0 or more, got {args.warmup}")
    try:
        args.threads = [int(t) for t in args.threads.split(",") if t.strip()]
    except ValueError:
        p.error(f"--threads must be comma-separated integers, got {args.threads!r}")
    if not args.threads or min(args.threads) < 1:
        p.error("--threads must name positive thread counts")
    args.models = [m.strip().lower() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in args.models if m not in MODELS]
    if unknown or not args.models:
        p.error(f"--models: unknown model {unknown[0]!r} (cnn, mlp, lstm)" if unknown else "--models names none")
    if args.keras_python and not os.access(args.keras_python, os.X_OK):
        source = "--keras-python" if any(a.startswith("--keras") for a in argv or sys.argv) else "NDFLOW_KERAS_PYTHON"
        p.error(f"{source}: {args.keras_python!r} is not an executable file")
    return args


def set_threads(n: int) -> None:
    """``n`` threads for the cpu backend (``CPU_THREADS``) and for torch (PyTorch and the torch backend)."""
    nf.env().set("CPU_THREADS", n)
    torch = _torch()
    if torch is not None:
        torch.set_num_threads(n)


def start_worker(python: str | None, threads: int) -> KerasWorker | None:
    """A Keras worker of ``threads`` threads, or None (why printed)."""
    if not python:
        print("Keras 3 / TF: skipped (no --keras-python and no NDFLOW_KERAS_PYTHON)")
        return None
    try:
        return KerasWorker(python, threads)
    except (OSError, RuntimeError, ValueError) as exc:
        print(f"Keras 3 / TF: skipped ({exc})")
        return None


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    torch = _torch()
    args.torch_backend = torch is not None and nf.find_backend("torch") is not None
    if torch is None:
        print("PyTorch eager and ndflow torch: skipped (torch is not installed)")
    nf.set_backend("cpu")
    # the compiled (numba) kernels load in the background; time the steady state, as after a few seconds of training
    from ndflow.backends.cpu.numba import kernels, warmup

    if kernels() is None:
        warmup.wait(300)
    print(describe())
    for threads in args.threads:
        set_threads(threads)
        worker = start_worker(args.keras_python, threads)
        try:
            results = {name: measure(name, args, worker) for name in args.models}
            versions = [f"torch {torch.__version__}" if torch is not None else "torch —"]
            if worker is not None:
                versions += [f"tensorflow {worker.versions['tensorflow']}", f"keras {worker.versions['keras']}"]
            else:
                versions += ["tensorflow —", "keras —"]
        finally:
            if worker is not None:
                worker.close()
        print(f"\n### {threads} thread{'s' if threads > 1 else ''}\n")
        print(f"{load()}; {', '.join(versions)}; ms per training step, median of {args.rounds} rounds x "
              f"{args.steps} steps after {args.warmup} warm-up steps\n")  # fmt: skip
        print(table(results))
        print()
        print(loss_table(results))
        if args.fit_overhead:
            backends = ["cpu"] + (["torch"] if args.torch_backend else [])
            print("\n| backend | mlp fit ms | train_on_batch loop ms | fit overhead |\n|---|---|---|---|")
            for backend in backends:
                fit_ms, loop_ms = fit_overhead(backend, args)
                print(f"| ndflow {backend} | {fit_ms:.1f} | {loop_ms:.1f} | {(fit_ms / loop_ms - 1) * 100:+.1f}% |")
            print(f"\n({args.fit_batches} batches of {BATCH['mlp']}; the target: fit's overhead at most 5%)")
    print(f"\ntensors left: {nf.memory().num_tensors}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
