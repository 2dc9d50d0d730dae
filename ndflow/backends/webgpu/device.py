"""Choosing the GPU: the adapter and the device the webgpu backend runs on, and whether it is the default.

The high-performance adapter is taken unless ``NDFLOW_WEBGPU_ADAPTER`` names another (a case-insensitive
substring of the adapter's device, description or vendor, e.g. ``llvmpipe`` for Mesa's software Vulkan
driver). ``shader-f16`` is requested when the adapter has it (for the ``WEBGPU_FLOAT16`` flag). The backend is
never the default (:func:`priority`): it runs where it is asked for by name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any


class NoAdapterError(RuntimeError):
    """No WebGPU adapter (GPU, or software Vulkan driver) is available on this machine."""


@dataclass
class GPU:
    """The device and what it can do."""

    adapter: Any
    device: Any
    name: str
    has_f16: bool
    limits: dict[str, int]


def _adapter_name(adapter: Any) -> str:
    info = adapter.info
    parts = [info.get("device", ""), info.get("description", ""), info.get("vendor", "")]
    kind = info.get("adapter_type", "")
    return " / ".join(p for p in parts if p) + (f" ({kind}, {info.get('backend_type', '')})" if kind else "")


def _matches(adapter: Any, wanted: str) -> bool:
    info = adapter.info
    text = " ".join(str(info.get(k, "")) for k in ("device", "description", "vendor", "architecture"))
    return wanted.lower() in text.lower()


def choose_adapter() -> Any:
    """The adapter the backend opens; :class:`NoAdapterError` with the reason when there is none."""
    try:
        import wgpu
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise NoAdapterError("the 'wgpu' package is not installed (pip install 'ndflow[webgpu]')") from exc
    wanted = os.environ.get("NDFLOW_WEBGPU_ADAPTER", "").strip()
    adapter = None
    try:
        if wanted:
            for candidate in wgpu.gpu.enumerate_adapters_sync():
                if _matches(candidate, wanted):
                    adapter = candidate
                    break
            if adapter is None:
                names = [_adapter_name(a) for a in wgpu.gpu.enumerate_adapters_sync()]
                raise NoAdapterError(f"NDFLOW_WEBGPU_ADAPTER={wanted!r} matches no adapter (found: {names or 'none'})")
        else:
            adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    except NoAdapterError:
        raise
    except Exception as exc:  # wgpu-native raises when no Vulkan/Metal/D3D12 driver is present
        raise NoAdapterError(f"no WebGPU adapter: {exc}") from exc
    if adapter is None:
        raise NoAdapterError(
            "no WebGPU adapter (no GPU driver; on Linux `apt-get install mesa-vulkan-drivers` gives a software one)"
        )
    return adapter


def priority() -> int:
    """The webgpu backend's priority: 0, below cpu's 1, on every adapter, so that it runs only when asked for
    by name (``nf.set_backend("webgpu")``, ``NDFLOW_BACKEND=webgpu``). On a software adapter (lavapipe,
    llvmpipe) it is many times slower than the cpu backend; on a GPU, each kernel's submission costs about
    20 us in wgpu-py, more than the cpu backend's whole kernel for most TF.js-sized ops, and no GPU has yet
    measured it faster on a whole model. Choosing it would also mean opening an adapter on the first op: a
    second or more, and a broken driver could take the process down with it."""
    return 0


def open_gpu() -> GPU:
    """The adapter and device to use; :class:`NoAdapterError` with the reason when there is none."""
    adapter = choose_adapter()
    has_f16 = "shader-f16" in adapter.features
    limits = dict(adapter.limits)
    wanted_limits = {
        k: limits[k]
        for k in ("max-storage-buffer-binding-size", "max-buffer-size", "max-storage-buffers-per-shader-stage")
        if k in limits
    }
    device = adapter.request_device_sync(
        required_features=["shader-f16"] if has_f16 else [], required_limits=wanted_limits
    )
    return GPU(adapter, device, _adapter_name(adapter), has_f16, dict(device.limits))
