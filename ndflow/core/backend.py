"""The contract every backend fulfils: a data store keyed by data id, with reference counts."""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

# Data ids are unique across backends, so that data keeps its id when it moves.
_data_ids = itertools.count(1)  # compiled dispatch draws from it too
_next_data_id = _data_ids.__next__


def new_data_id() -> int:
    return _next_data_id()


class Backend:
    """Base class of backends. A backend owns the values of tensors, by data id.

    ``write`` stores values and returns a data id with a reference count of one; ``inc_ref``
    adds an owner (a kernel output sharing its input's data, as reshape does), and
    ``dispose_data`` drops one, freeing the values when none is left.
    """

    name = "base"

    def write(self, values: Any, shape: tuple[int, ...], dtype: str) -> int:
        raise NotImplementedError(f"backend '{self.name}' does not implement write")

    def move(self, data_id: int, values: Any, shape: tuple[int, ...], dtype: str, ref_count: int) -> None:
        """Take data arriving from another backend, under its existing data id."""
        raise NotImplementedError(f"backend '{self.name}' does not implement move")

    def read_sync(self, data_id: int) -> np.ndarray:
        raise NotImplementedError(f"backend '{self.name}' does not implement read_sync")

    async def read(self, data_id: int) -> np.ndarray:
        return self.read_sync(data_id)

    def dispose_data(self, data_id: int, force: bool = False) -> bool:
        raise NotImplementedError(f"backend '{self.name}' does not implement dispose_data")

    def inc_ref(self, data_id: int) -> None:
        raise NotImplementedError(f"backend '{self.name}' does not implement inc_ref")

    def ref_count(self, data_id: int) -> int:
        raise NotImplementedError(f"backend '{self.name}' does not implement ref_count")

    def num_data_ids(self) -> int:
        raise NotImplementedError(f"backend '{self.name}' does not implement num_data_ids")

    # -- direct kernel forms (kernel_registry.register_direct): the engine's fast path ----------------
    # Each runs a float32 form on the arrays of its inputs and stores the result under a new data id, or
    # returns None where the backend has no such path or an input is stored in another shape (a reshape
    # sharing its buffer); the engine then runs the kernel itself.
    def direct_unary(self, fn: Callable[..., Any], x: Any) -> int | None:
        """``fn(x)`` for a float32 tensor ``x``: the output's data id, or None."""
        return None

    def direct_binary(self, fn: Callable[..., Any], a: Any, b: Any) -> int | None:
        """``fn(a, b)`` for float32 tensors of one shape: the output's data id, or None."""
        return None

    def direct_scalar(self, fn: Callable[..., Any], a: Any, s: float) -> int | None:
        """``fn(a, s)`` for a float32 tensor and a Python number (a float32 scalar): the data id, or None."""
        return None

    def store_layout(self) -> StoreLayout | None:
        """How compiled dispatch (``ndflow/core/dispatch/compiled.py``) may read and write this backend's store; None:
        only through the methods above."""
        return None

    def graph_capture(self, program: Any) -> Any | None:
        """A runner replaying graph-model ``program`` as a device graph (CUDA graphs on torch-CUDA: its ``run``
        takes ``Program.run``'s arguments), or None where the backend has none (the default)."""
        return None

    def mark_constant(self, data_id: int) -> None:
        """The values of ``data_id`` are a model's weights, which no kernel writes: a backend may keep what it derives
        from them between calls (the cpu backend marks the array read-only and keeps the products' packed copies of
        it). The default does nothing."""

    def hold_workers(self) -> Callable[[], None] | None:
        """A run of many kernels (a graph model's program) starts: a backend with its own worker threads keeps them
        awake until the returned function is called at the run's end (the cpu backend's native pool). None (the
        default): nothing to release."""
        return None

    def wait_ready(self, timeout: float | None = None) -> bool:
        """Wait (``timeout`` seconds at most) for work the backend does in the background before it runs at full
        speed (the cpu backend's compiled kernels loading); whether it is done. The default: nothing to wait for."""
        return True

    def memory(self) -> dict[str, Any]:
        """Backend-specific memory fields, merged into ``nf.memory()``."""
        return {"unreliable": False, "reasons": []}

    def time(self, fn: Callable[[], Any]) -> dict[str, float]:
        """Run ``fn`` and report ``kernel_ms``: here the wall time of the (synchronous) work."""
        start = time.perf_counter()
        fn()
        return {"kernel_ms": (time.perf_counter() - start) * 1000.0}

    def synchronize(self) -> None:
        """Wait until queued work is done (a no-op for synchronous backends)."""

    def float_precision(self) -> int:
        return 32

    def epsilon(self) -> float:
        return 1e-7 if self.float_precision() == 32 else 1e-4

    def dispose(self) -> None:
        """Release everything the backend holds."""


class StoreLayout(NamedTuple):
    """A data store as compiled dispatch sees it: ``data`` maps data ids to records of ``record_type``, whose
    slots are ``values``, ``ref_count`` and optionally ``shape`` (the shape the values were stored in) and
    ``prepared`` (None in new records). Disposal frees as ``RefCountedStore.dispose_data`` does, then calls
    ``release(record)`` if given. With ``value_type`` set, direct kernels run on it: ``fn(values...)`` (inside
    this thread's context from ``contexts``, keyed by ``threading.get_ident()``, if given, ``make_context()``
    making it where missing; a Python number
    operand converted by ``scalar`` if given), and results not of ``value_type`` go through ``coerce``."""

    data: dict[int, Any]
    record_type: type
    release: Callable[[Any], None] | None = None
    value_type: type | None = None
    coerce: Callable[[Any], Any] | None = None
    scalar: Callable[[float], Any] | None = None
    contexts: dict[int, Any] | None = None
    make_context: Callable[[], Any] | None = None


class DataInfo:
    """Engine-side facts about one data buffer, shared by every tensor that uses it."""

    __slots__ = ("backend", "nbytes")

    def __init__(self, backend: Backend, size_bytes: int) -> None:
        self.backend = backend
        self.nbytes = size_bytes


class RefCountedStore:
    """The data store shared by ndflow's backends: ``self.data`` maps data ids to records that have a
    ``ref_count``; subclasses free whatever else a record holds in :meth:`release_record`."""

    data: dict[int, Any]
    # Whether records hold more than Python memory (set by stores that override release_record).
    releases_records = False
    # The class of the records (slots values and ref_count at least): compiled disposal reads them.
    record_type: type | None = None

    def dispose_data(self, data_id: int, force: bool = False) -> bool:
        """Drop one owner of the data (all of them with ``force``); True once the data is freed."""
        record = self.data.get(data_id)
        if record is None:
            return True
        record.ref_count -= 1
        if force or record.ref_count <= 0:
            del self.data[data_id]
            if self.releases_records:
                self.release_record(record)
            return True
        return False

    def store_layout(self) -> StoreLayout | None:
        """The store for compiled disposal, where this class's ``dispose_data`` frees (no direct kernels:
        backends that have them add their fields)."""
        if type(self).dispose_data is not RefCountedStore.dispose_data:
            return None
        if self.record_type is None:
            return None
        release = self.release_record if self.releases_records else None
        return StoreLayout(self.data, self.record_type, release)

    def release_record(self, record: Any) -> None:
        """Free what a record holds beyond Python memory (a GPU buffer; set ``releases_records``)."""

    def inc_ref(self, data_id: int) -> None:
        """Add an owner of the data (a kernel output sharing an input's buffer)."""
        self.data[data_id].ref_count += 1

    def ref_count(self, data_id: int) -> int:
        """How many tensors share the data (0 once freed)."""
        record = self.data.get(data_id)
        return 0 if record is None else record.ref_count

    def num_data_ids(self) -> int:
        """How many data buffers the store holds."""
        return len(self.data)
