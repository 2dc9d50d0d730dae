"""The kernels that only give their input a new shape (Reshape, ExpandDims, Identity), written once over a
backend's ``share`` (an output that reuses an input's data: one more owner, no copy)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...core import kernel_names as kn

Share = Callable[[Any, int, tuple[int, ...], str], tuple]
Kernel = Callable[[Any, tuple, Any], tuple]


def view_kernels(share: Share) -> dict[str, Kernel]:
    """Reshape, ExpandDims and Identity by kernel name, each returning ``share``'s output for its input."""

    def reshape(backend: Any, inputs: tuple, attrs: dict) -> tuple:
        (x,) = inputs
        return share(backend, x.data_id, tuple(attrs["shape"]), x.dtype)

    def expand_dims(backend: Any, inputs: tuple, attrs: dict) -> tuple:
        (x,) = inputs
        shape = list(x.shape)
        shape.insert(attrs["dim"], 1)
        return share(backend, x.data_id, tuple(shape), x.dtype)

    def identity(backend: Any, inputs: tuple, attrs: dict | None) -> tuple:
        (x,) = inputs
        return share(backend, x.data_id, x.shape, x.dtype)

    return {kn.Reshape: reshape, kn.ExpandDims: expand_dims, kn.Identity: identity}


def register_view_kernels(register: Callable[[str], Callable[[Kernel], Kernel]], share: Share) -> None:
    """Register :func:`view_kernels` with a backend's kernel decorator ``register(name)``."""
    for name, kernel in view_kernels(share).items():
        register(name)(kernel)
