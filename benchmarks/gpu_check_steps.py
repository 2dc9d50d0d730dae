"""Steps 1 and 2 of ``benchmarks/gpu_check.py``: the machine, and conformance against TF.js fixtures.

Conformance reuses the test suite's own case lists and checkers (``tests/ops/oracle_cases.py``,
``tests/gradients/grad_cases.py``, the graph-model fixtures' ``expected.json``): a case passes here exactly
when its test would pass on that backend, with TF.js's tolerances (1e-3 absolute for float32, 1e-1 where
the backend stores floats in 16 bits).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.metadata as md
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from gpu_check_common import Budget, use

import ndflow as nf

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
GRAPH_FIXTURES = [
    "basic",
    "while_loop",
    "tensor_array",
    "tensor_list",
    "functions",
    "cond_v1",
    "dynamic",
    "initializer",
]
# (test module, its case list, every k-th case taken): the lists the tests run with run_case/check_grad_case.
# All of them (~2,100 cases): ~3 s on the cpu backend; a time cap per backend stops a slow one evenly.
OP_FAMILIES = [
    ("test_core_ops_oracle", "CASES", 1),
    ("test_elementwise", "CASES", 1),
    ("test_conv", "PLAIN", 1),
    ("test_reduction", "CASES", 1),
    ("test_pool_norm", "CASES", 1),
    ("test_image", "CASES", 1),
    ("test_transform", "CASES", 1),
]
GRAD_FAMILIES = [("test_grad_core", "CASES", 1), ("test_grad_nn", "PLAIN", 1), ("test_grad_transform", "CASES", 1)]
LANES_PER_SM = 128  # fp32 FMA lanes per SM (Ampere/Hopper)


def _version(package: str) -> str | None:
    try:
        return md.version(package)
    except md.PackageNotFoundError:
        return None


def nvidia_smi() -> dict[str, Any] | None:
    """name, driver, max SM clock (MHz), memory of GPU 0 from nvidia-smi; None where the tool is missing."""
    if shutil.which("nvidia-smi") is None:
        return None
    query = "name,driver_version,clocks.max.sm,memory.total"
    out = (
        subprocess.run(
            ["nvidia-smi", f"--query-gpu={query}", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        .stdout.strip()
        .splitlines()[0]
    )
    name, driver, clock, memory = (p.strip() for p in out.split(","))
    return {"name": name, "driver": driver, "max_sm_clock_mhz": float(clock), "memory_total_mib": float(memory)}


def machine_info(gpu_labels: list[str], device: str, webgpu_note: str) -> dict[str, Any]:
    """Step 1: processor, GPU, versions, fp32 peak, the webgpu adapter, ndflow's C modules, the environment."""
    info: dict[str, Any] = {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpu_count": os.cpu_count(),
        "ndflow": nf.__version__,
        "numpy": np.__version__,
        "torch": _version("torch"),
        "wgpu": _version("wgpu"),
        "env": {k: os.environ.get(k) for k in ("VK_DRIVER_FILES", "LD_LIBRARY_PATH", "PYTHONPATH")},
        "device_arg": device,
    }
    try:
        from machine import cpu_name

        info["cpu"] = cpu_name()
    except Exception as exc:  # noqa: BLE001 - informational only
        info["cpu"] = f"unknown ({exc})"
    try:
        from ndflow.backends.cpu.native import native_split
        from ndflow.core.dispatch import compiled

        info["c_dispatch"] = bool(compiled.enabled())
        info["c_native_split"] = bool(native_split.available())
    except Exception as exc:  # noqa: BLE001
        info["c_modules_error"] = f"{type(exc).__name__}: {exc}"
    try:
        info["nvidia_smi"] = nvidia_smi()
    except Exception as exc:  # noqa: BLE001
        info["nvidia_smi"] = f"failed: {type(exc).__name__}: {exc}"
    if "torch-cuda" in gpu_labels:
        try:
            import torch

            props = torch.cuda.get_device_properties(0)
            info["cuda"] = {
                "torch_cuda": torch.version.cuda,
                "name": props.name,
                "sms": props.multi_processor_count,
                "memory_gib": props.total_memory / 2**30,
                "capability": f"{props.major}.{props.minor}",
            }
            smi = info["nvidia_smi"]
            if isinstance(smi, dict):
                peak = props.multi_processor_count * smi["max_sm_clock_mhz"] * 1e6 * LANES_PER_SM * 2 / 1e9
                info["fp32_peak_gflops"] = peak
                info["fp32_peak_formula"] = (
                    f"{props.multi_processor_count} SMs x {smi['max_sm_clock_mhz']:.0f} MHz x {LANES_PER_SM} lanes x "
                    f"2 FLOP = {peak:.0f} GFLOP/s"
                )
        except Exception as exc:  # noqa: BLE001 - the rest of the machine is still worth recording
            info["cuda"] = f"failed: {type(exc).__name__}: {exc}"
    elif _version("torch"):
        info["cuda"] = "not available (no GPU or --device cpu)"
    if "webgpu" in gpu_labels:
        backend = nf.find_backend("webgpu")
        info["webgpu"] = {
            "description": backend.description(),
            "adapter": backend.gpu.name,
            "info": {k: str(v) for k, v in dict(backend.gpu.adapter.info).items()},
            "shader_f16": backend.gpu.has_f16,
        }
    else:
        info["webgpu"] = webgpu_note
    return info


PROBE = "import ndflow as nf; b = nf.find_backend('webgpu'); print(b.gpu.name if b is not None else '')"


def probe_webgpu() -> tuple[bool, str]:
    """Whether the webgpu backend opens an adapter here, and its name or the error. It is tried in a child
    process first (60 s at most): a broken driver can abort the process inside wgpu-native."""
    try:
        child = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    except subprocess.TimeoutExpired:
        return False, "opening the webgpu adapter took over 60 s in a child process"
    if child.returncode != 0 or not child.stdout.strip():
        tail = (child.stderr.strip().splitlines() or ["no adapter"])[-1]
        return False, f"child process exit {child.returncode}: {tail[:300]}"
    try:
        backend = nf.find_backend("webgpu")
    except Exception as exc:  # noqa: BLE001
        return False, f"{type(exc).__name__}: {exc}"
    if backend is None:
        return False, "nf.find_backend('webgpu') returned None (wgpu missing or no adapter)"
    return True, backend.gpu.name


# -- conformance ----------------------------------------------------------------------------------------
def _import_tests() -> None:
    for sub in ("ops", "gradients", "converter"):
        path = str(ROOT / "tests" / sub)
        if path not in sys.path:
            sys.path.insert(0, path)


FAMILY_ERRORS: dict[str, str] = {}  # test module -> why its cases could not be read


def _pick(module: str, attr: str, every: int, quick: bool) -> list[dict]:
    try:
        cases = list(getattr(importlib.import_module(module), attr))
    except Exception as exc:  # noqa: BLE001 - one family's import failure leaves the others
        FAMILY_ERRORS[module] = f"{type(exc).__name__}: {exc}"
        return []
    cases = [c for c in cases if not c["id"].split("__")[0].endswith("_async") and not c["id"].startswith("meshgrid")]
    step = 40 if quick else every
    return cases[::step]


def _round_robin(groups: list[list[Any]]) -> list[Any]:
    out, i = [], 0
    while any(i < len(g) for g in groups):
        out += [g[i] for g in groups if i < len(g)]
        i += 1
    return out


def _graph_case(name: str) -> dict[str, Any]:
    return {"id": f"graph_model__{name}", "kind": "graph", "name": name}


def conformance_cases(quick: bool) -> list[tuple[str, dict]]:
    """(kind, case) pairs: op and gradient fixture cases and the graph-model fixtures, families interleaved so
    that a time cap cuts every family alike."""
    _import_tests()
    groups = [[("op", c) for c in _pick(m, a, k, quick)] for m, a, k in OP_FAMILIES]
    groups += [[("grad", c) for c in _pick(m, a, k, quick)] for m, a, k in GRAD_FAMILIES]
    graphs = GRAPH_FIXTURES[:2] if quick else GRAPH_FIXTURES
    groups.append([("graph", _graph_case(n)) for n in graphs])
    return _round_robin(groups)


def _max_error(message: str) -> float | None:
    found = re.search(r"max abs err ([-+0-9.eE]+|nan|inf)", message)
    return float(found.group(1)) if found else None


def run_graph_fixture(name: str, atol: float) -> float:
    """Run a graph-model fixture (execute_async) and compare with its expected.json; the max abs error."""
    from ndflow.converter import load_graph_model

    folder = FIXTURES / "graph_models" / name
    expected = json.loads((folder / "expected.json").read_text())
    model = load_graph_model(str(folder / "model.json"))
    feeds = {
        r["name"]: nf.tensor(np.array(r["values"]).reshape(r["shape"]), r["shape"], r["dtype"])
        for r in expected["inputs"]
    }
    outs: list = []
    try:
        names = [o["name"] for o in expected["outputs"]]
        result = asyncio.run(model.execute_async(feeds, names))
        outs = result if isinstance(result, list) else [result]
        worst = 0.0
        for t, rec in zip(outs, expected["outputs"], strict=True):
            if t.dtype != rec["dtype"] or list(t.shape) != rec["shape"]:
                raise AssertionError(f"{name} {rec['name']}: {t.dtype}{list(t.shape)} != {rec['dtype']}{rec['shape']}")
            got = np.asarray(t.data_sync(), dtype=np.float64).reshape(-1)
            want = np.array(rec["values"], dtype=np.float64).reshape(-1)
            err = float(np.max(np.abs(got - want))) if got.size else 0.0
            worst = max(worst, err)
            if not np.allclose(got, want, atol=atol, rtol=0, equal_nan=True):
                raise AssertionError(f"{name} {rec['name']}: max abs err {err:.3g} beyond atol={atol}")
        return worst
    finally:
        nf.dispose(list(feeds.values()) + outs)
        model.dispose()


def run_one(kind: str, case: dict) -> None:
    from oracle_cases import run_case, tolerance

    if kind == "op":
        run_case(case)
    elif kind == "grad":
        from grad_cases import check_grad_case

        check_grad_case(case)
    else:
        run_graph_fixture(case["name"], tolerance()[0])


def conformance(labels: list[str], budget: Budget, quick: bool, cap_s: dict[str, float]) -> dict[str, Any]:
    """Step 2: every chosen case on each backend; passed/failed/not run (time) and the failures."""
    cases = conformance_cases(quick)
    result: dict[str, Any] = {"cases": len(cases), "by_backend": {}, "family_errors": dict(FAMILY_ERRORS)}
    for label in labels:
        row: dict[str, Any] = {"passed": 0, "failed": 0, "not_run": 0, "failures": []}
        result["by_backend"][label] = row
        try:
            use(label)
        except Exception as exc:  # noqa: BLE001
            row["error"] = f"{type(exc).__name__}: {exc}"
            row["not_run"] = len(cases)
            continue
        start = time.perf_counter()
        for i, (kind, case) in enumerate(cases):
            if time.perf_counter() - start > cap_s.get(label, 60.0) or not budget.enough(20):
                row["not_run"] = len(cases) - i
                row["note"] = "time cap reached: remaining cases not run"
                break
            try:
                run_one(kind, case)
                row["passed"] += 1
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:  # noqa: BLE001 - pytest.fail raises a BaseException
                msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                row["failed"] += 1
                row["failures"].append(
                    {
                        "id": case["id"],
                        "kind": kind,
                        "max_error": _max_error(str(exc)),
                        "error": f"{type(exc).__name__}: {msg[:300]}",
                    }
                )
        row["seconds"] = round(time.perf_counter() - start, 2)
    use("cpu")
    return result
