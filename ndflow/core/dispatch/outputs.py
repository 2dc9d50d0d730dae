"""Output bookkeeping: :func:`track_output`, the one specification of what making a kernel's output costs.

Every Python path that turns new or shared data into a tensor calls it (``Engine.run_kernel`` and its
variants, the direct path, ``make_tensor``, debug mode's observed path); the C module's ``track_output``,
``new_tensor`` and ``float_output`` (``csrc/kernel.c``, ``csrc/state.c``) do the same work for the plain
cases, and tests/core/test_compiled_dispatch.py checks that both leave the engine in the same state.
"""

from __future__ import annotations

import math
from _thread import get_ident
from typing import TYPE_CHECKING

from ..backend import Backend, DataInfo
from ..dtypes import BYTES_PER_ELEMENT, nbytes
from ..tensor import Tensor

if TYPE_CHECKING:
    from ..engine import Engine


def track_output(engine: Engine, data_id: int, shape: tuple[int, ...], dtype: str, backend: Backend) -> Tensor:
    """A new tensor over ``data_id`` of ``backend``: data not seen before gets its ``DataInfo`` (entered in
    ``engine._data``, counted in ``num_data_buffers`` and ``num_bytes``); the tensor gets the next tensor id,
    is counted (``num_tensors``, ``num_string_tensors``), tracked by the active scope and watched by the
    leak tracker where one is on. ``Engine._track_output`` is this function."""
    info = engine._data.get(data_id)
    if info is None:
        per = BYTES_PER_ELEMENT.get(dtype)
        size_bytes = per * math.prod(shape) if per is not None else nbytes(dtype, 0, backend.read_sync(data_id))
        info = engine._data[data_id] = DataInfo(backend, size_bytes)
        engine.num_data_buffers += 1
        engine.num_bytes += size_bytes
    t = Tensor(shape, dtype, data_id, engine._next_tensor_id(), info)
    engine.num_tensors += 1
    if dtype == "string":
        engine.num_string_tensors += 1
    scope = engine._owner_scope if get_ident() == engine._owner else engine._local.active  # engine.active_scope
    if scope is not None:
        t.scope_id = scope.id
        scope.track.append(t)
    tracker = engine.tracker
    if tracker is not None:
        if tracker.unreleased and tracker.dispose_unreachable:
            tracker.release_pending()
        tracker.watch(t)
    return t
