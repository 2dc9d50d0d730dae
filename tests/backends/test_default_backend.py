"""The backend of first use: the fastest where ndflow runs (torch on a GPU, else cpu; webgpu by name only),
ranked lazily, and ``import ndflow`` importing none of the optional libraries; both safe when threads start at
once."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
import threading
import time

import pytest

import ndflow as nf
import ndflow.backends
from ndflow.backends.cpu import CPUBackend
from ndflow.backends.torch import device as torch_device
from ndflow.backends.webgpu import device as webgpu_device
from ndflow.core import kernel_registry
from ndflow.core.engine import BACKEND_ENV_VAR, ENGINE

OPTIONAL = ("torch", "wgpu", "numba")


@pytest.fixture
def first_use():
    """Forget the engine's choice and ranking, as right after ``import ndflow``; restore both afterwards.

    Optional backends get their lazy priority back (evaluated again on the next ranking)."""
    before = nf.get_backend()
    factories = dict(ENGINE._factories)
    for name in ndflow.backends.OPTIONAL:
        if name in ENGINE._factories:
            ENGINE._factories[name] = (ENGINE._factories[name][0], ndflow.backends._priority(name))
    ENGINE._backend, ENGINE.backend_name = None, None
    yield
    ENGINE._factories.clear()
    ENGINE._factories.update(factories)
    nf.set_backend(before)


def run_python(code: str, **env: str) -> dict:
    """Run ``code`` in a fresh interpreter; the JSON it prints last."""
    environ = {**os.environ, **env}
    out = subprocess.run([sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def no_gpu_here() -> bool:
    """No sign of a CUDA/ROCm driver for torch on this machine (the default must then be cpu)."""
    return not torch_device.gpu_driver_present()


# ---------------------------------------------------------------------------------------------
# import ndflow
# ---------------------------------------------------------------------------------------------
def test_import_ndflow_imports_no_optional_library():
    code = (
        "import json, sys; import ndflow as nf; "  # a blocked import (.ci/hide) leaves None in sys.modules
        f"names = {OPTIONAL!r} + ('ndflow.layers', 'ndflow.converter'); "
        "print(json.dumps({m: sys.modules.get(m) is not None for m in names}))"
    )
    loaded = run_python(code)
    assert loaded == dict.fromkeys(loaded, False)


def test_first_op_without_gpu_runs_on_cpu_without_importing_torch():
    if not no_gpu_here():
        pytest.skip("this machine shows signs of a GPU driver")
    code = (
        "import json, sys; import ndflow as nf; x = nf.tensor([1.0]); y = x + 1; y.data_sync(); "
        "print(json.dumps({'backend': nf.get_backend(), 'names': nf.engine().backend_names(), "
        f"'loaded': [m for m in {OPTIONAL!r} if sys.modules.get(m) is not None]}}))"
    )
    info = run_python(code, NDFLOW_BACKEND="")
    assert info["backend"] == "cpu"
    assert info["names"][0] == "cpu"
    assert "torch" not in info["loaded"] and "wgpu" not in info["loaded"]


def test_lazy_namespace_members_load_on_access():
    assert nf.sequential is nf.layers.sequential
    assert nf.load_graph_model.__module__.startswith("ndflow.converter")
    assert nf.io.__name__ == "ndflow.io"
    assert {"sequential", "load_graph_model", "io", "layers"} <= set(dir(nf))
    with pytest.raises(AttributeError, match="no_such_name"):
        nf.no_such_name  # noqa: B018


def test_env_var_picks_the_backend_of_first_use(first_use, monkeypatch):
    monkeypatch.setenv(BACKEND_ENV_VAR, "cpu")
    assert nf.get_backend() == "cpu"


def test_env_var_naming_an_unknown_backend_warns_and_ranks(first_use, monkeypatch, caplog):
    monkeypatch.setenv(BACKEND_ENV_VAR, "no_such_backend")
    with caplog.at_level(logging.WARNING, logger="ndflow"):
        chosen = nf.get_backend()
    assert chosen == next(n for n in ENGINE.backend_names() if nf.find_backend(n) is not None)
    assert "no_such_backend" in caplog.text


# ---------------------------------------------------------------------------------------------
# priorities evaluated lazily
# ---------------------------------------------------------------------------------------------
def test_priority_function_is_called_once_when_ranking(first_use):
    calls = []

    def priority() -> int:
        calls.append(1)
        return 500

    assert nf.register_backend("test_lazy_top", CPUBackend, priority=priority)
    try:
        assert calls == []  # registering ranks nothing
        assert ENGINE.backend_names()[0] == "test_lazy_top"
        assert nf.get_backend() == "test_lazy_top"
        ENGINE.backend_names()
        assert calls == [1] and ENGINE.priority("test_lazy_top") == 500
    finally:
        nf.set_backend("cpu")
        nf.remove_backend("test_lazy_top")


def test_a_failing_priority_ranks_last(first_use, caplog):
    def broken() -> int:
        raise RuntimeError("probe exploded")

    assert nf.register_backend("test_lazy_broken", CPUBackend, priority=broken)
    try:
        with caplog.at_level(logging.WARNING, logger="ndflow"):
            assert ENGINE.backend_names()[-1] == "test_lazy_broken"
        assert "probe exploded" in caplog.text
        assert nf.get_backend() != "test_lazy_broken"
    finally:
        nf.set_backend("cpu")
        nf.remove_backend("test_lazy_broken")


def test_kernel_loader_runs_once_on_first_lookup():
    calls = []

    def loader() -> None:
        calls.append(1)
        nf.register_kernel("Add", "test_lazy_kernels", lambda *a: None)

    kernel_registry.register_kernel_loader("test_lazy_kernels", loader)
    try:
        assert calls == []
        assert nf.get_kernel("Add", "test_lazy_kernels") is not None
        assert [k.kernel_name for k in nf.get_kernels_for_backend("test_lazy_kernels")] == ["Add"]
        assert calls == [1]
    finally:
        kernel_registry.unregister_kernel("Add", "test_lazy_kernels")


def test_threads_that_start_at_once_share_one_backend(first_use):
    made = []

    def slow_factory() -> CPUBackend:
        time.sleep(0.2)  # a backend that takes a while to start (torch, a GPU device)
        made.append(CPUBackend())
        return made[-1]

    ENGINE.register_backend("test_slow_start", slow_factory, priority=10)
    tensors: list = [None] * 4

    def first_op(i: int) -> None:
        tensors[i] = nf.tensor([1.0, 2.0])

    threads = [threading.Thread(target=first_op, args=(i,)) for i in range(4)]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(made) == 1 and nf.get_backend() == "test_slow_start"
        assert all(t is not None and t.data_id in made[0].data for t in tensors)
    finally:
        nf.dispose([t for t in tensors if t is not None])
        nf.set_backend("cpu")
        ENGINE._instances.pop("test_slow_start", None)


def test_a_lookup_during_a_load_waits_for_the_whole_table():
    started, seen = threading.Event(), []

    def loader() -> None:
        nf.register_kernel("Add", "test_slow_kernels", lambda *a: None)
        started.set()
        time.sleep(0.2)
        nf.register_kernel("Sub", "test_slow_kernels", lambda *a: None)

    kernel_registry.register_kernel_loader("test_slow_kernels", loader)
    first = threading.Thread(target=lambda: nf.get_kernel("Add", "test_slow_kernels"))
    try:
        first.start()
        started.wait(5)
        seen.append(nf.get_kernel("Sub", "test_slow_kernels"))  # while the loader sleeps in the other thread
        first.join()
        assert seen[0] is not None
        kernel_registry.unregister_kernel("Sub", "test_slow_kernels")
    finally:
        first.join()
        kernel_registry.unregister_kernel("Add", "test_slow_kernels")


def test_unregistering_before_the_first_lookup_loads_the_kernels_first():
    kernel_registry.register_kernel_loader(
        "test_lazy_unregister", lambda: nf.register_kernel("Add", "test_lazy_unregister", lambda *a: None)
    )
    kernel_registry.unregister_kernel("Add", "test_lazy_unregister")  # the loader ran, then this removed it
    assert nf.get_kernel("Add", "test_lazy_unregister") is None


# ---------------------------------------------------------------------------------------------
# torch: first only on a GPU
# ---------------------------------------------------------------------------------------------
def test_gpu_driver_signs(monkeypatch):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(torch_device.os.path, "exists", lambda path: path == "/proc/driver/nvidia/version")
    assert torch_device.gpu_driver_present()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # every device hidden
    assert not torch_device.gpu_driver_present()
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "-1")
    assert not torch_device.gpu_driver_present()


def test_torch_ranks_by_its_device(first_use):
    pytest.importorskip("torch")
    names = ENGINE.backend_names()
    if torch_device.cuda_available():
        assert names.index("torch") < names.index("cpu") and ENGINE.priority("torch") == 3
    else:
        assert names.index("torch") > names.index("cpu") and ENGINE.priority("torch") == 0
        assert nf.env().get("TORCH_DEVICE") == "cpu"


def test_default_is_cpu_without_cuda(first_use):
    pytest.importorskip("torch")
    if torch_device.cuda_available():
        pytest.skip("this machine has CUDA: torch comes first")
    assert nf.get_backend() == "cpu"


def test_simulated_cuda_puts_torch_first(first_use, monkeypatch):
    monkeypatch.setattr(torch_device, "cuda_available", lambda: True)
    assert torch_device.default_device() == "cuda"
    assert torch_device.preferred() and torch_device.priority() == 3
    names = ENGINE.backend_names()
    assert names[0] == ("torch" if "torch" in ENGINE._factories else "cpu")  # registered only where installed
    nf.env().set("TORCH_DEVICE", "cpu")  # asked for the CPU (NDFLOW_FLAGS=TORCH_DEVICE=cpu): cpu's kernels win
    assert not torch_device.preferred() and torch_device.priority() == 0


def test_simulated_gpu_machine_runs_first_op_on_torch(first_use, monkeypatch):
    torch = pytest.importorskip("torch")
    from ndflow.backends.torch import TorchBackend

    monkeypatch.setattr(torch_device, "preferred", lambda: True)  # as where torch sees CUDA
    assert nf.get_backend() == "torch"
    assert isinstance(nf.backend(), TorchBackend)
    t = nf.tensor([1.0, 2.0])
    try:
        assert isinstance(nf.backend().values(t.data_id), torch.Tensor)
    finally:
        t.dispose()


def test_torch_device_flag_before_torch_is_imported():
    pytest.importorskip("torch")
    if torch_device.cuda_available():
        pytest.skip("needs a machine without CUDA")
    code = (
        "import json, logging, sys; import ndflow as nf; nf.env().set('TORCH_DEVICE', 'cuda'); "
        "first = nf.engine().backend_names()[0]; imported = sys.modules.get('torch') is not None; "
        "logging.disable(logging.WARNING); chosen = nf.get_backend(); "
        "print(json.dumps({'first': first, 'imported': imported, 'chosen': chosen, "
        "'kernels': len(nf.get_kernels_for_backend('torch'))}))"
    )
    info = run_python(code, NDFLOW_BACKEND="")
    assert info["first"] == "torch"  # asked for a GPU: ranked first ...
    assert not info["imported"]  # ... without importing torch to rank it
    assert info["chosen"] == "cpu"  # no CUDA here: it fails to initialize and cpu takes over (as documented)
    assert info["kernels"] >= 177  # the kernels load on first lookup


# ---------------------------------------------------------------------------------------------
# webgpu: by name only
# ---------------------------------------------------------------------------------------------
def test_webgpu_is_never_the_default_and_opens_no_adapter_to_rank(first_use, monkeypatch):
    if "webgpu" not in ENGINE._factories:
        pytest.skip("wgpu is not installed")

    def never() -> None:
        raise AssertionError("ranking must not open an adapter")

    monkeypatch.setattr(webgpu_device, "choose_adapter", never)
    monkeypatch.setattr(torch_device, "cuda_available", lambda: True)  # even next to a CUDA torch
    assert webgpu_device.priority() == 0
    names = ENGINE.backend_names()
    assert names.index("webgpu") > names.index("cpu")
