"""Integer results of the webgpu backend on every adapter this machine has, not only the one this process opened.

wgpu picks its adapter once per process (``WGPU_BACKEND_TYPE`` forces Vulkan, Metal, D3D12 or OpenGL), and
the WGSL is translated per backend: to SPIR-V on Vulkan but to GLSL on OpenGL/GLES, where ``%`` with a negative
operand is undefined (Mesa's llvmpipe computed ``7 % -2`` as 5 there). So each adapter type present gets a fresh
interpreter (all started at once) running ``webgpu_adapter_check.py``: Mod and FloorDiv over int32 special
values against Python's ``%`` and ``//`` (TF.js's floorMod/floorDiv for ints, 0 for a zero divisor), a sweep of
the int32 kernels, and every int32 oracle fixture case, all against the cpu backend. A type without an adapter
here is skipped with the adapters that exist.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

wgpu = pytest.importorskip("wgpu", reason="the webgpu backend needs wgpu (pip install -e '.[webgpu]')")

CHECK = Path(__file__).resolve().parent / "webgpu_adapter_check.py"
BACKEND_TYPES = ["Vulkan", "Metal", "D3D12", "OpenGL"]


def _adapters() -> dict[str, list[str]]:
    """The adapters wgpu can open here, by backend type (enumeration ignores ``WGPU_BACKEND_TYPE``)."""
    found: dict[str, list[str]] = {}
    try:
        listed = wgpu.gpu.enumerate_adapters_sync()
    except Exception:  # noqa: BLE001 - no driver at all
        return found
    for adapter in listed:
        info = adapter.info
        found.setdefault(str(info.get("backend_type", "")), []).append(str(info.get("device", "")))
    return found


@pytest.fixture(scope="module")
def checks() -> Iterator[dict[str, subprocess.Popen | str]]:
    """One check process per adapter type present, all started at once (each takes a few seconds); a type
    without an adapter maps to the reason it is skipped."""
    adapters = _adapters()
    have = ", ".join(f"{k}: {v}" for k, v in adapters.items()) or "none"
    started: dict[str, subprocess.Popen | str] = {}
    for backend_type in BACKEND_TYPES:
        if backend_type not in adapters:
            started[backend_type] = f"no {backend_type} adapter on this machine (adapters: {have})"
            continue
        env = {k: v for k, v in os.environ.items() if k != "NDFLOW_WEBGPU_ADAPTER"}  # the type alone picks it
        env["WGPU_BACKEND_TYPE"] = backend_type
        started[backend_type] = subprocess.Popen(
            [sys.executable, str(CHECK), backend_type], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
    yield started
    for proc in started.values():
        if isinstance(proc, subprocess.Popen) and proc.poll() is None:
            proc.kill()
            proc.wait()


@pytest.mark.parametrize("backend_type", BACKEND_TYPES)
def test_int32_kernels_match_cpu_on_every_adapter(checks, backend_type):
    proc = checks[backend_type]
    if isinstance(proc, str):
        pytest.skip(proc)
    stdout, stderr = proc.communicate(timeout=300)
    lines = [line for line in stdout.splitlines() if line.startswith("{")]
    assert proc.returncode == 0 and lines, f"the check failed on {backend_type}:\n{stdout}\n{stderr[-3000:]}"
    report = json.loads(lines[-1])
    assert "error" not in report, f"{backend_type}: {report['error']}"
    where = f"{report['adapter']} ({report['checks']} checks)"
    assert report["problems"] == [], f"int32 results differ from the cpu backend on {where}:\n" + "\n".join(
        report["problems"]
    )
    assert report["leaked"] == 0, f"{where}: the check leaked {report['leaked']} tensors"
