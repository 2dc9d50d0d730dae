"""Choosing the GPU: the adapter and the device the webgpu backend runs on, and whether it is the default.

The high-performance adapter is taken unless ``NDFLOW_WEBGPU_ADAPTER`` names another (a case-insensitive
substring of the adapter's device, description or vendor, e.g. ``llvmpipe`` for Mesa's software Vulkan
driver). ``shader-f16`` is requested when the adapter has it (for the ``WEBGPU_FLOAT16`` flag). The backend
comes before cpu only on a hardware adapter (:func:`priority`); a software one is slower than the cpu backend.
"""

from __future__ import annotations

import glob
import os
import sys
from dataclasses import dataclass
from typing import Any

# wgpu's adapter types of a GPU (``CPU`` is a software rasterizer), and the software drivers' names.
HARDWARE_TYPES = ("discretegpu", "integratedgpu", "virtualgpu")
SOFTWARE_NAMES = ("llvmpipe", "lavapipe", "swiftshader", "basic render", "softpipe")


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


def is_hardware(adapter: Any) -> bool:
    """Whether an adapter is a GPU: not a CPU rasterizer (Mesa's lavapipe/llvmpipe, SwiftShader, Windows's
    Basic Render Driver), which wgpu reports as adapter type ``CPU``."""
    info = adapter.info
    if str(info.get("adapter_type", "")).lower() not in HARDWARE_TYPES:
        return False
    text = " ".join(str(info.get(k, "")) for k in ("device", "description", "vendor")).lower()
    return not any(name in text for name in SOFTWARE_NAMES)


def gpu_signs() -> bool:
    """Cheap signs (no import) that a GPU driver may be there: always on macOS (Metal) and Windows (D3D12);
    on Linux a DRM render node, NVIDIA's device node or WSL2's GPU bridge."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(glob.glob("/dev/dri/renderD*")) or any(os.path.exists(p) for p in ("/dev/nvidiactl", "/dev/dxg"))


def hardware_adapter() -> bool:
    """Whether the adapter the backend would open is a GPU. Imports wgpu and asks for the adapter only where
    :func:`gpu_signs` says a driver may exist (that takes about 0.5 s on a software driver)."""
    if not gpu_signs():
        return False
    try:
        return is_hardware(choose_adapter())
    except NoAdapterError:
        return False


def priority() -> int:
    """The webgpu backend's priority, evaluated when the engine first chooses a backend: 2 (above cpu's 1,
    below torch's 3 on CUDA) on a hardware adapter, else 0 (a software adapter: chosen only by name)."""
    return 2 if hardware_adapter() else 0


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
