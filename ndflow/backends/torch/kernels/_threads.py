"""When a torch kernel on the CPU is worth torch's intra-op threads, and running it on one thread when not.

torch parallelizes an op over its OpenMP threads once it holds 32768 elements (oneDNN convolutions: always).
Each parallel op wakes the sleeping threads (``OMP_WAIT_POLICY=PASSIVE``, which ``import ndflow`` sets so that
idle threads do not spin next to other work), and on a small machine a wake-up costs more than the op: on the
2-core reference machine (a VM) about 10-90 us per op, while a 2x2 max pool of 64x64x16 values takes 20-40 us
on one thread, a ReLU of 65536 values 5 us, a 3x3 convolution of 38 MFLOP 230 us. With another process busy
on the second core, a two-thread op waits for a descheduled thread and takes up to 30x longer (a filter
gradient of the training benchmark: 3.7 ms on two threads, 0.11-0.24 ms on one).

So each CPU kernel estimates its work and runs on a single thread below a threshold (the thread count is set
for the kernel's duration and restored after, 0.2-0.3 us); larger work keeps torch's threads, where splitting
it pays for the wake-up. Products and convolutions count FLOPs (the cpu backend's kernels start their threads
from 40 MFLOP); other kernels count the values of their inputs. The thresholds sit at about 100-300 us of
single-thread work: on a quiet machine a wake-up costs 7-15 us and two threads win a little earlier, on a busy
one they lose far later, so the thresholds lean to the side whose mistakes cost least. Kernels under 32768
input values are left alone (torch runs them on one thread anyway). Nothing changes on CUDA, nor when torch
has one thread.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import torch

# Work at and above which a kernel keeps torch's threads: about 100-300 us of work on one thread.
PARALLEL_ELEMENTS = 1 << 19  # values read by an element-wise, pooling, reduction ... kernel
PARALLEL_FLOPS = 24e6  # floating-point operations of a convolution with a k x k filter (~190 GFLOP/s on one core)
PARALLEL_GEMM_FLOPS = 12e6  # of a matrix product or 1x1 convolution (~80 GFLOP/s on one core)
SMALL_ELEMENTS = 32768  # torch's grain: below it torch stays on the calling thread by itself

Kernel = Callable[[Any, tuple, Any], Any]
Parallel = Callable[[tuple, Any], bool]


def on_one_thread(fn: Kernel, backend: Any, inputs: tuple, attrs: Any) -> Any:
    """``fn(backend, inputs, attrs)`` with torch limited to the calling thread, the thread count restored after."""
    threads = torch.get_num_threads()
    if threads == 1:
        return fn(backend, inputs, attrs)
    torch.set_num_threads(1)
    try:
        return fn(backend, inputs, attrs)
    finally:
        torch.set_num_threads(threads)


def by_elements(fn: Kernel) -> Kernel:
    """``fn`` on one thread when its inputs hold between :data:`SMALL_ELEMENTS` and :data:`PARALLEL_ELEMENTS`
    values (on the CPU)."""

    def run(backend: Any, inputs: tuple, attrs: Any) -> Any:
        if backend.is_cuda:
            return fn(backend, inputs, attrs)
        n = 0
        for t in inputs:
            n += t.size
        if n < SMALL_ELEMENTS or n >= PARALLEL_ELEMENTS:
            return fn(backend, inputs, attrs)
        return on_one_thread(fn, backend, inputs, attrs)

    return run


def by_estimate(fn: Kernel, parallel: Parallel) -> Kernel:
    """``fn`` on one thread unless ``parallel(inputs, attrs)`` says its work is worth the threads (on the CPU)."""

    def run(backend: Any, inputs: tuple, attrs: Any) -> Any:
        if backend.is_cuda or parallel(inputs, attrs):
            return fn(backend, inputs, attrs)
        return on_one_thread(fn, backend, inputs, attrs)

    return run


def _stride_product(attrs: Any) -> int:
    """The product of a convolution's spatial strides (an int, or a list of ints)."""
    strides = attrs.get("strides", 1) if attrs else 1
    if isinstance(strides, int):
        return max(strides, 1) ** 2
    return max(math.prod(strides), 1)


def conv_forward_flops(inputs: tuple, attrs: Any) -> bool:
    """Inputs ``(x, filter, ...)`` with a filter ``[*k, in, out]`` (or ``[*k, in, multiplier]`` for depthwise):
    about ``2 * output positions * channels in * k * out`` FLOPs, the output positions estimated as the input's
    over the strides (the channel axis of either data format)."""
    x, f = inputs[0], inputs[1]
    channels_in = f.shape[-2] if f.shape and f.shape[-2] else 1
    flops = 2.0 * x.size * f.size / channels_in / _stride_product(attrs)
    return flops >= (PARALLEL_GEMM_FLOPS if math.prod(f.shape[:-2]) == 1 else PARALLEL_FLOPS)


def conv_input_grad_flops(inputs: tuple, attrs: Any) -> bool:
    """Inputs ``(dy, filter)`` with a filter ``[*k, in, out]``: every value of dy meets ``k * in`` taps."""
    dy, f = inputs[0], inputs[1]
    return 2.0 * dy.size * f.size / (f.shape[-1] or 1) >= _limit(f.shape)


def _limit(filter_shape: tuple[int, ...]) -> float:
    """The FLOPs from which a convolution with this filter keeps the threads (1x1: a matrix product)."""
    return PARALLEL_GEMM_FLOPS if math.prod(filter_shape[:-2]) == 1 else PARALLEL_FLOPS


def depthwise_input_grad_flops(inputs: tuple, attrs: Any) -> bool:
    """Inputs ``(dy, filter)`` of a depthwise filter ``[*k, in, multiplier]``: ``k`` taps per value of dy."""
    dy, f = inputs[0], inputs[1]
    return 2.0 * dy.size * f.size / ((f.shape[-1] * f.shape[-2]) or 1) >= PARALLEL_FLOPS


def filter_grad_flops(inputs: tuple, attrs: Any) -> bool:
    """Inputs ``(x, dy)``, attribute ``filter_shape`` ``[*k, in, out]``: ``k * in`` products per value of dy."""
    shape = attrs["filter_shape"]
    return 2.0 * inputs[1].size * math.prod(shape) / (shape[-1] or 1) >= _limit(shape)


def depthwise_filter_grad_flops(inputs: tuple, attrs: Any) -> bool:
    """Inputs ``(x, dy)``, attribute ``filter_shape`` ``[*k, in, multiplier]``: ``k`` products per value of dy."""
    return 2.0 * inputs[1].size * math.prod(attrs["filter_shape"][:-2]) >= PARALLEL_FLOPS


def matmul_flops(inputs: tuple, attrs: Any) -> bool:
    """Inputs ``(a, b, ...)``: ``2 * a.size * columns of the product`` FLOPs (batch broadcast aside)."""
    a, b = inputs[0], inputs[1]
    if len(b.shape) < 2:
        return True
    columns = b.shape[-2] if attrs and attrs.get("transpose_b") else b.shape[-1]
    batch_b = b.size // (b.shape[-1] * b.shape[-2]) if b.shape[-1] and b.shape[-2] else 1
    batch_a = a.size // (a.shape[-1] * a.shape[-2]) if len(a.shape) >= 2 and a.shape[-1] and a.shape[-2] else 1
    broadcast = batch_b // batch_a if batch_b > batch_a and batch_a else 1
    return 2.0 * a.size * columns * broadcast >= PARALLEL_GEMM_FLOPS
