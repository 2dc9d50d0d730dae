"""GPU buffers reused by size and usage: freed buffers wait in a pool for the next request of that size.

Sizes are rounded up (to 16 bytes, then to a quarter power of two above 4 KiB) so that buffers of close sizes
are shared. The flag ``WEBGPU_DELETE_BUFFER_THRESHOLD`` (bytes, default -1: never) says when freed buffers are
really destroyed: once the pool holds more free bytes than the threshold, the freed buffer is released.
Rounding never makes a buffer bigger than the device binds (``max_size``): near that limit the size is exact.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from ...core.flags import env

env().register_flag("WEBGPU_DELETE_BUFFER_THRESHOLD", lambda: -1)


def bucket(nbytes: int, max_size: int | None = None) -> int:
    """The allocation size for a request of ``nbytes`` (at least 16, a multiple of 16; when that rounding would
    pass ``max_size``, the device's largest buffer it may bind, the request rounded up to 4 bytes only)."""
    size = max(16, (nbytes + 15) & ~15)
    if size > 4096:
        step = 1 << (size.bit_length() - 3)  # quarter powers of two: at most 25% waste
        size = (size + step - 1) // step * step
    if max_size is not None and size > max_size:
        size = max(16, (nbytes + 3) & ~3)
    return size


def max_binding_bytes(limits: dict[str, int]) -> int:
    """The largest buffer a program may bind: the smaller of the device's ``maxStorageBufferBindingSize`` and
    ``maxBufferSize`` (WebGPU's guaranteed minimums, 128 MiB and 256 MiB, where the device does not say)."""
    return min(limits.get("max-storage-buffer-binding-size", 1 << 27), limits.get("max-buffer-size", 1 << 28))


class BufferPool:
    """Acquire and release GPU buffers; counts the bytes allocated and the bytes waiting in the pool."""

    def __init__(self, device: Any, limits: dict[str, int] | None = None) -> None:
        self.device = device
        self.limits = limits  # the device's limits (read at each new allocation: tests may shrink them)
        self.free: dict[tuple[int, int], list[Any]] = defaultdict(list)
        self.num_bytes_allocated = 0
        self.num_bytes_free = 0
        self.num_buffers = 0
        self.num_reused = 0

    def acquire(self, nbytes: int, usage: int) -> Any:
        """A buffer of at least ``nbytes`` bytes with ``usage`` (a reused one when the pool has it)."""
        size = bucket(nbytes, None if self.limits is None else max_binding_bytes(self.limits))
        waiting = self.free.get((size, usage))
        if waiting:
            self.num_bytes_free -= size
            self.num_reused += 1
            return waiting.pop()
        buffer = self.device.create_buffer(size=size, usage=usage)
        self.num_bytes_allocated += size
        self.num_buffers += 1
        return buffer

    def release(self, buffer: Any) -> None:
        """Return a buffer: kept for reuse, or destroyed when the pool holds more than the threshold."""
        threshold = env().get("WEBGPU_DELETE_BUFFER_THRESHOLD")
        if threshold is not None and 0 <= threshold < self.num_bytes_free + buffer.size:
            self.num_bytes_allocated -= buffer.size
            self.num_buffers -= 1
            buffer.destroy()
            return
        self.free[(buffer.size, buffer.usage)].append(buffer)
        self.num_bytes_free += buffer.size

    def clear(self) -> None:
        """Destroy every buffer waiting in the pool."""
        for buffers in self.free.values():
            for buffer in buffers:
                self.num_bytes_allocated -= buffer.size
                self.num_buffers -= 1
                buffer.destroy()
        self.free.clear()
        self.num_bytes_free = 0
