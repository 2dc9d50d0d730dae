"""The cpu backend: numpy arrays in a dict keyed by data id."""

from __future__ import annotations

import contextvars
import ctypes
import glob
import os
from collections.abc import Iterator
from threading import get_ident
from typing import Any

import numpy as np

from ...core.backend import Backend, RefCountedStore, StoreLayout, new_data_id
from ...core.dtypes import NUMPY_DTYPE
from ...core.flags import env
from .native import malloc_tuning

_BLAS: dict[str, Any] = {}


def numpy_openblas_libraries() -> Iterator[ctypes.CDLL]:
    """The OpenBLAS libraries bundled with numpy's wheel (``numpy.libs``), loaded; none for another BLAS."""
    folder = os.path.join(os.path.dirname(np.__file__), os.pardir, "numpy.libs")
    for path in sorted(glob.glob(os.path.join(folder, "*openblas*"))):
        try:
            yield ctypes.CDLL(path)
        except OSError:
            continue


def _openblas() -> tuple[Any, Any] | None:
    """numpy's bundled OpenBLAS ``(set_num_threads, get_num_threads)``, or None (another BLAS)."""
    if "lib" not in _BLAS:
        _BLAS["lib"] = None
        for lib in numpy_openblas_libraries():
            for prefix, suffix in (("scipy_openblas", "64_"), ("openblas", "64_"), ("openblas", "")):
                setter = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                getter = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                if setter is not None and getter is not None:
                    setter.argtypes, getter.restype = [ctypes.c_int], ctypes.c_int
                    _BLAS["lib"] = (setter, getter)
                    _BLAS["default"] = int(getter())
                    break
            if _BLAS["lib"] is not None:
                break
    return _BLAS["lib"]


def set_blas_threads(value: object) -> None:
    """Set hook of the flag ``CPU_BLAS_THREADS``: the threads numpy's OpenBLAS uses (0: its default)."""
    n = int(value)  # type: ignore[call-overload]
    if n == 0 and "lib" not in _BLAS:
        return  # nothing was changed: leave OpenBLAS alone (and unloaded by us)
    blas = _openblas()
    if blas is not None:
        blas[0](n if n > 0 else _BLAS["default"])


def _new_quiet_context() -> contextvars.Context:
    """A context in which numpy ignores floating-point errors (TF.js semantics: NaN/Inf are values)."""

    def make() -> contextvars.Context:
        np.seterr(all="ignore")
        return contextvars.copy_context()

    return contextvars.copy_context().run(make)


# One prepared context per thread (a context can be entered by one thread at a time); entering it
# costs far less than ``np.errstate`` on every call.
_CONTEXTS: dict[int, contextvars.Context] = {}


def quiet_context() -> contextvars.Context:
    """This thread's context in which numpy's floating-point warnings are off: kernels run in it."""
    ctx = _CONTEXTS.get(get_ident())
    if ctx is None:
        ctx = _CONTEXTS[get_ident()] = _new_quiet_context()
    return ctx


class _Record:
    __slots__ = ("values", "ref_count")

    def __init__(self, values: np.ndarray, ref_count: int) -> None:
        self.values = values
        self.ref_count = ref_count


class CPUBackend(RefCountedStore, Backend):
    """Reference backend. Values are C-contiguous numpy arrays of the tensor's shape."""

    name = "cpu"
    record_type = _Record

    def __init__(self) -> None:
        self.data: dict[int, _Record] = {}
        set_blas_threads(env().get("CPU_BLAS_THREADS"))
        malloc_tuning.apply(env().get("CPU_KEEP_MEMORY"))

    # -- data store ------------------------------------------------------------------------------
    def write(self, values: Any, shape: tuple[int, ...], dtype: str) -> int:
        array = np.asarray(values, dtype=NUMPY_DTYPE[dtype]).reshape(shape)
        data_id = new_data_id()
        self.data[data_id] = _Record(array, 1)
        return data_id

    def store(self, array: np.ndarray) -> int:
        """Keep a kernel's output array (already of the right dtype and shape)."""
        data_id = new_data_id()
        self.data[data_id] = _Record(array, 1)
        return data_id

    def move(self, data_id: int, values: Any, shape: tuple[int, ...], dtype: str, ref_count: int) -> None:
        array = np.asarray(values, dtype=NUMPY_DTYPE[dtype]).reshape(shape)
        self.data[data_id] = _Record(array, ref_count)

    def values(self, data_id: int) -> np.ndarray:
        return self.data[data_id].values

    # -- direct kernel forms (the engine's fast path for float32 element-wise ops) -----------------
    def _keep(self, result: Any) -> int:
        if result.__class__ is not np.ndarray:  # ufuncs return numpy scalars for 0-d inputs
            result = np.asarray(result)
        data_id = new_data_id()
        self.data[data_id] = _Record(result, 1)
        return data_id

    def direct_unary(self, fn: Any, x: Any) -> int | None:
        v = self.data[x.data_id].values
        if v.shape != x.shape:
            return None
        return self._keep(quiet_context().run(fn, v))

    def direct_binary(self, fn: Any, a: Any, b: Any) -> int | None:
        data = self.data
        va, vb = data[a.data_id].values, data[b.data_id].values
        if va.shape != a.shape or vb.shape != b.shape:
            return None
        return self._keep(quiet_context().run(fn, va, vb))

    def direct_scalar(self, fn: Any, a: Any, s: float) -> int | None:
        v = self.data[a.data_id].values
        if v.shape != a.shape:
            return None
        return self._keep(quiet_context().run(fn, v, np.float32(s)))

    def store_layout(self) -> StoreLayout | None:
        """The store for compiled dispatch: direct kernels run as ``direct_*`` run them."""
        base = super().store_layout()
        if base is None:
            return None
        return base._replace(
            value_type=np.ndarray, coerce=np.asarray, scalar=np.float32, contexts=_CONTEXTS, make_context=quiet_context
        )

    def read_sync(self, data_id: int) -> np.ndarray:
        return self.data[data_id].values

    def mark_constant(self, data_id: int) -> None:
        """Marks the array read-only (kernels write only into arrays they made) and registers its memory with the C
        module, which then keeps the packed copy of it for the products that read it (``native/csrc/pack_cache.c``)
        until the array is freed."""
        record = self.data.get(data_id)
        if record is not None and isinstance(record.values, np.ndarray):
            from .native import native_split

            record.values.flags.writeable = False
            native_split.keep_constant(record.values)

    def hold_workers(self) -> Any:
        """Keeps the native pool's workers spinning through a model's run (``native_split.hold``)."""
        from .native import native_split, parallel

        return native_split.hold(parallel.threads())

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Starts loading the compiled kernels (numba) if nothing has yet, and waits for the background load: until
        it ends, kernels run their numpy paths (several times slower for convolutions)."""
        from .numba import kernels, warmup

        kernels()
        return warmup.wait(timeout)

    def memory(self) -> dict[str, Any]:
        return {"unreliable": False, "reasons": []}

    def description(self) -> str:
        """What ``ndflow info`` shows: the numpy and BLAS this backend computes with."""
        blas = "unknown BLAS"
        try:
            config = np.show_config(mode="dicts")
            blas = config["Build Dependencies"]["blas"]["name"]
        except Exception:  # show_config's layout differs between numpy versions
            pass
        from .numba import status

        return f"numpy {np.__version__} ({blas}); compiled kernels {status()}"

    def dispose(self) -> None:
        self.data.clear()
