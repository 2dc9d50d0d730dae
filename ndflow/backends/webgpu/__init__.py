"""The webgpu backend (wgpu-py): tensors in GPU storage buffers, WGSL programs compiled on first use."""

from . import kernels  # noqa: F401  (registers the kernels)
from .backend import WebGPUBackend
from .device import NoAdapterError
from .kernels.common import GPU_KERNELS
from .kernels.forward import FORWARDED

__all__ = ["FORWARDED", "GPU_KERNELS", "NoAdapterError", "WebGPUBackend"]
