"""What a webgpu device allows, read from the device: the largest buffer a program may bind, workgroups per
dimension and storage buffers per stage. :class:`DeviceLimits` (a mixin of the backend) folds dispatches into a
grid within the limit and checks a program before anything is allocated or recorded, raising
:class:`LimitError`, on which the kernels fall back to the cpu kernel (kernels/common.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .buffers import max_binding_bytes


class LimitError(RuntimeError):
    """A program needs more than the device allows (buffer size, workgroups per dimension, storage buffers)."""


def fold_groups(groups: int, limit: int, dims: int = 3) -> tuple[int, int, int]:
    """``groups`` workgroups as a grid of at most ``limit`` per dimension, x first, then y (then z when
    ``dims`` is 3): programs recover the linear index as ``x + (y + z * ny) * nx``; the last dimension may
    still exceed ``limit`` (``run`` reports it)."""
    x = min(groups, limit)
    rest = -(-groups // x) if x else 0
    if dims == 2:
        return (x, rest, 1)
    y = min(rest, limit)
    return (x, y, -(-rest // y) if y else 0)


class DeviceLimits:
    """The backend's limits (it holds ``gpu``, the opened device, and ``data``, its records)."""

    gpu: Any
    data: dict

    @property
    def max_binding_bytes(self) -> int:
        """The largest buffer a program may bind (maxStorageBufferBindingSize and maxBufferSize)."""
        return max_binding_bytes(self.gpu.limits)

    @property
    def max_groups(self) -> int:
        """maxComputeWorkgroupsPerDimension."""
        return self.gpu.limits.get("max-compute-workgroups-per-dimension", 65535)

    def fold(self, groups: int, dims: int = 2) -> tuple[int, int, int]:
        """``groups`` workgroups folded into a grid within this device's limit (see :func:`fold_groups`)."""
        return fold_groups(groups, self.max_groups, dims)

    def _check_limits(
        self,
        key: tuple,
        inputs: Sequence[tuple[str, Any]],
        outputs: Sequence,
        grid: tuple,
        n_bindings: int,
        float16: bool,
    ) -> None:
        """Raise :class:`LimitError` (naming the program, the tensor, its bytes and the limit) when the program
        cannot run on this device."""
        limit = self.max_binding_bytes
        sized = [(name, self.data[t.data_id].shape, t.dtype) for name, t in inputs]
        for name, shape, dtype in [*sized, *outputs]:
            nbytes = math.prod(shape) * (2 if float16 and dtype == "float32" else 4)
            if (nbytes + 3) & ~3 > limit:
                raise LimitError(
                    f"webgpu program {key[0]!r}: tensor {name!r} of shape {tuple(shape)} ({dtype}) needs {nbytes} "
                    f"bytes, above the device's maxStorageBufferBindingSize/maxBufferSize of {limit} bytes"
                )
        if max(grid) > self.max_groups:
            raise LimitError(
                f"webgpu program {key[0]!r}: dispatch of {tuple(grid)} workgroups exceeds the device's "
                f"maxComputeWorkgroupsPerDimension of {self.max_groups}"
            )
        most = self.gpu.limits.get("max-storage-buffers-per-shader-stage", 8)
        if n_bindings > most:
            raise LimitError(
                f"webgpu program {key[0]!r}: binds {n_bindings} storage buffers, above the device's "
                f"maxStorageBuffersPerShaderStage of {most}"
            )
