"""The cpu backend's flags, all registered here (``nf.env()``; ``NDFLOW_FLAGS="CPU_JIT=false,..."`` overrides).

Each flag's set hook reaches the module it configures; the hooks (and the evaluators that need a module) import
it when they run, so this module imports none of them: it is imported first, by the package, and registering a
flag never loads numba, the C module or OpenBLAS.

- ``CPU_JIT``: the compiled (numba) kernels (:mod:`.numba`); on where numba is installed.
- ``CPU_JIT_BACKGROUND``: numba and the compiled kernels load (and compile, the first time) on a background
  thread while the first calls run the numpy and C module paths (:mod:`.numba.warmup`). On by default; off, the
  first kernel call waits for them (the tests' setting: each call takes the compiled path).
- ``CPU_JIT_PARALLEL``: large compiled loops split between numba's threads. Off by default: on two cores the
  second thread pays off only on an idle machine; when another process holds a core, every parallel loop waits
  a scheduler time slice (milliseconds) for its late thread.
- ``CPU_CONV_PLANS``: keep the per-call plans of the compiled convolutions (:mod:`.plans`). On by default; off,
  every call works out its geometry, route and epilogue again (the reference for the plans' tests).
- ``CPU_NATIVE_SPLIT``: matrix products and row kernels split over the C module's workers
  (:mod:`.native.native_split`).
- ``CPU_AVX512``: the C module's AVX-512 kernels (products, ``native/csrc/gemm_avx512.c``; 3x3 and 5x5 depthwise
  rows, ``native/csrc/dw_avx512.c``; max pooling, ``native/csrc/pool_avx512.c``): off, products run OpenBLAS's
  sgemm and the others numba's kernels, as before.
- ``CPU_THREADS``: threads that share split work (:mod:`.native.parallel`); 0 means every core.
- ``CPU_BLAS_THREADS``: the threads numpy's OpenBLAS uses (:func:`.backend.set_blas_threads`). On a machine
  shared with other work, 1 avoids waiting a scheduler time slice for a descheduled thread in every matrix product
  (milliseconds each; blazepose-heavy took 2.2 s per inference with 2 threads next to one other busy process,
  0.22 s with 1); on an idle machine more threads make large products faster: set 0 to leave numpy's own
  setting, or a count. Applied when the cpu backend is created.
- ``CPU_KEEP_MEMORY``: keep freed array memory in the process (:mod:`.native.malloc_tuning`); on where glibc is.
"""

from __future__ import annotations

import importlib.util

from ...core.flags import env


def _numba_available() -> bool:
    return importlib.util.find_spec("numba") is not None


def _set_jit(value: object) -> None:
    from .numba import set_enabled

    set_enabled(value)


def _set_jit_background(value: object) -> None:
    from .numba import set_background

    set_background(value)


def _set_jit_parallel(value: object) -> None:
    from .numba import set_parallel

    set_parallel(value)


def _set_conv_plans(value: object) -> None:
    from .numba import set_plans

    set_plans(value)


def _set_avx512(value: object) -> None:
    from .native.native_split import set_avx512

    set_avx512(value)


def _check_threads(value: object) -> None:
    from .native.parallel import check_threads

    check_threads(value)


def _set_blas_threads(value: object) -> None:
    from .backend import set_blas_threads

    set_blas_threads(value)


def _keep_memory_available() -> bool:
    from .native.malloc_tuning import available

    return available()


def _keep_memory(value: object) -> None:
    from .native.malloc_tuning import apply

    apply(value)


env().register_flag("CPU_JIT", _numba_available, _set_jit)
env().register_flag("CPU_JIT_BACKGROUND", lambda: True, _set_jit_background)
env().register_flag("CPU_JIT_PARALLEL", lambda: False, _set_jit_parallel)
env().register_flag("CPU_CONV_PLANS", lambda: True, _set_conv_plans)
env().register_flag("CPU_NATIVE_SPLIT", lambda: True)
env().register_flag("CPU_AVX512", lambda: True, _set_avx512)
env().register_flag("CPU_THREADS", lambda: 0, _check_threads)
env().register_flag("CPU_BLAS_THREADS", lambda: 1, _set_blas_threads)
env().register_flag("CPU_KEEP_MEMORY", _keep_memory_available, _keep_memory)
