"""The leak finder (beyond TF.js): tensors that Python dropped without ``dispose()``.

With the flag ``TRACK_LEAKS`` (on in debug mode) every new tensor remembers where it was created
and is watched with a ``weakref.finalize``. A tensor collected while still undisposed (and not
``keep()``-ed) is a leak in TF.js terms: its data stays allocated with nothing left to free it.
``nf.leaks()`` reports such tensors; ``with nf.expect_no_leaks():`` raises when a block leaks. With
``DISPOSE_UNREACHABLE`` the data of a leaked tensor is freed instead (at the engine's next call).
Nothing of this runs while the flag is off.
"""

from __future__ import annotations

import gc
import os
import sys
import weakref
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .engine import DataInfo, Engine
    from .tensor import Tensor

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Library code; a creation site is the first frame outside these (ndflow's demo and CLI count as users).
_LIBRARY_DIRS = tuple(
    os.path.join(_PACKAGE_DIR, d) + os.sep
    for d in ("core", "ops", "backends", "gradients", "io", "layers", "train", "converter", "legacy")
) + (os.path.join(_PACKAGE_DIR, "__init__.py"),)


class LeakError(AssertionError):
    """``expect_no_leaks`` found tensors that were dropped without being disposed."""


@dataclass
class LeakReport:
    """One tensor: where it was created, what it holds, and whether it is still reachable."""

    tensor_id: int
    site: str
    shape: tuple[int, ...]
    dtype: str
    bytes: int
    alive: bool

    def __str__(self) -> str:
        state = "alive" if self.alive else "leaked"
        return f"{self.site}: tensor {self.tensor_id} {self.dtype}{list(self.shape)} {self.bytes} bytes ({state})"


class _Watched:
    __slots__ = ("tensor_id", "site", "shape", "dtype", "data_id", "info", "ref")

    def __init__(self, t: Tensor, site: str) -> None:
        self.tensor_id = t.id
        self.site = site
        self.shape = t.shape
        self.dtype = t.dtype
        self.data_id = t.data_id
        self.info = t._info
        self.ref: weakref.ref | None = None


def creation_site() -> str:
    """``file:line`` of the first frame outside the ndflow package (the user's call)."""
    frame = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_LIBRARY_DIRS):
        frame = frame.f_back
    if frame is None:
        return "<unknown>"
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class LeakTracker:
    """Watches tensors for the engine while ``TRACK_LEAKS`` is on."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.live: dict[int, _Watched] = {}
        self.leaked: list[LeakReport] = []
        self.unreleased: list[_Watched] = []  # leaked tensors whose data is still allocated
        self.dispose_unreachable = False

    def watch(self, t: Tensor) -> None:
        record = _Watched(t, creation_site())
        self.live[t.id] = record
        weakref.finalize(t, self._collected, t.id)
        record.ref = weakref.ref(t)

    def forget(self, tensor_id: int) -> None:
        self.live.pop(tensor_id, None)

    def _collected(self, tensor_id: int) -> None:
        """Runs when Python frees a tensor object: undisposed and not kept means leaked."""
        record = self.live.pop(tensor_id, None)
        if record is None:
            return  # disposed (or kept) before it was dropped
        self.leaked.append(self._report(record, alive=False))
        self.unreleased.append(record)

    def release_pending(self) -> None:
        """With ``DISPOSE_UNREACHABLE``, free the data of every leaked tensor (never inside a finalizer)."""
        while self.dispose_unreachable and self.unreleased:
            record = self.unreleased.pop()
            self.engine.release_data(record.data_id, record.info, record.dtype)

    @staticmethod
    def _report(record: _Watched, alive: bool) -> LeakReport:
        return LeakReport(record.tensor_id, record.site, record.shape, record.dtype, _bytes(record.info), alive)

    def reports(self, include_alive: bool = False) -> list[LeakReport]:
        gc.collect()
        self.release_pending()
        out = list(self.leaked)
        if include_alive:
            out += [self._report(r, alive=True) for r in self.live.values()]
        return out


def _bytes(info: DataInfo) -> int:
    return info.nbytes


def format_reports(reports: list[LeakReport]) -> str:
    lines = [f"{len(reports)} tensor(s) were dropped without dispose():"]
    lines += [f"  {r}" for r in reports]
    return "\n".join(lines)


@contextmanager
def expect_no_leaks(engine: Engine) -> Iterator[None]:
    """Raise :class:`LeakError` listing every tensor the block created and dropped undisposed."""
    tracker = engine.leak_tracker(force=True)
    start = len(tracker.leaked)
    try:
        yield
    finally:
        gc.collect()
        new = tracker.leaked[start:]
        engine.stop_forced_tracking()
    if new:
        raise LeakError(format_reports(new))
