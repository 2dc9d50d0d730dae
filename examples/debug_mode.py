#!/usr/bin/env python3
"""Debug mode: every kernel timed and logged, and NaN/Inf caught at the kernel that made it.

``nf.enable_debug_mode()`` (the flag ``DEBUG``; ``math.enableDebugMode()`` in deeplearn.js)
logs each kernel through the ``ndflow`` logger: name, milliseconds, output rank, shape and size,
input shapes. It checks every float output and raises ``nf.ComputationError`` naming the
kernel that produced a NaN or an infinity, instead of letting it spread. It slows everything
down: use it to find a problem, not in production. ``nf.profile`` reports the same kernels
without the checks.

    python examples/debug_mode.py
"""

from __future__ import annotations

import logging
import sys

import ndflow as nf
from ndflow.legacy import Array1D, NDArrayMathCPU


def show_kernel_log() -> None:
    """A softmax over a product: one log line per kernel."""
    print("== kernels of softmax(a @ b) ==")
    a = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    b = nf.tensor([[0.5, 0.0], [0.0, 0.5]])
    y = nf.tidy(lambda: nf.softmax(nf.mat_mul(a, b)))
    print(f"result: {y.array_sync()}")
    nf.dispose([a, b, y])


def catch_nan() -> None:
    """``log(x - x)`` is ``-inf``: the ``Log`` kernel is named in the error."""
    print("== NaN/Inf check ==")
    x = nf.tensor([1.0, 2.0])
    try:
        nf.tidy(lambda: nf.log(nf.sub(x, x)))
    except nf.ComputationError as exc:
        print(f"caught ComputationError: {exc}")
    finally:
        x.dispose()


def legacy_debug_mode() -> None:
    """deeplearn.js's spelling: ``math.enableDebugMode()``."""
    print("== deeplearn.js: math.enableDebugMode() ==")
    math = NDArrayMathCPU()
    math.enableDebugMode()
    value = math.scope(lambda keep, track: math.sum(math.square(track(Array1D.new([1, 2, 3])))).get())
    print(f"math.sum(math.square([1, 2, 3])) = {value}")


def profile_without_debug() -> None:
    """``nf.profile``: the kernels and memory of a function, with debug mode off."""
    print("== nf.profile (debug mode off) ==")
    x = nf.ones([64, 64])
    info = nf.profile(lambda: nf.tidy(lambda: nf.mean(nf.relu(nf.mat_mul(x, x)))))
    print(f"kernels: {info.kernel_names}; new tensors: {info.new_tensors}; peak bytes: {info.peak_bytes}")
    nf.dispose([x, info.result])


def main() -> None:
    """Command line."""
    # Kernel logs go to stdout here, interleaved with the prints.
    logging.basicConfig(stream=sys.stdout, level=logging.INFO, format="  [%(name)s] %(message)s")
    nf.enable_debug_mode()
    show_kernel_log()
    catch_nan()
    nf.env().set("DEBUG", False)
    legacy_debug_mode()
    nf.env().set("DEBUG", False)
    profile_without_debug()
    print(f"num_tensors at the end: {nf.memory().num_tensors}")


if __name__ == "__main__":
    main()
