"""The engine's backends: registration with a priority, the choice of the backend of first use, switching, and
removal. A mixin of :class:`~ndflow.core.engine.Engine` (which holds the slots it reads and writes).

The backend of first use is the one ``NDFLOW_BACKEND`` names, else the highest-priority one that initializes. A
priority may be a function, evaluated once when the backends are first ranked (so that ranking can look at the
machine lazily: backends/torch/device.py). Choosing and creating run under one re-entrant lock, so that threads
that start at once share one backend instance; the dispatch path never takes it.
"""

from __future__ import annotations

import logging
import math
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .dispatch import compiled
from .kernel_registry import direct_table, kernel_table

if TYPE_CHECKING:
    from .backend import Backend
    from .tensor import Tensor

logger = logging.getLogger("ndflow")

# A backend's rank: a number, or a function computing it when the backends are first ranked.
Priority = float | Callable[[], float]
# The environment variable naming the backend that first use takes (over the priorities).
BACKEND_ENV_VAR = "NDFLOW_BACKEND"
# The direct table of an engine with no active backend, or whose kernels must be observed.
_NO_DIRECT: dict[str, Callable[..., Any]] = {}
# Held while a backend is chosen or created (re-entrant: choosing creates). Off the dispatch path.
_BACKEND_LOCK = threading.RLock()


class BackendRegistry:
    """Registering, ranking, choosing, switching and removing backends."""

    __slots__ = ()
    _factories: dict[str, tuple[Callable[[], Backend], Priority]]
    _instances: dict[str, Backend]
    _backend: Backend | None
    backend_name: str | None
    _kernels: dict
    _direct_all: dict
    _data: dict
    num_data_buffers: int
    num_bytes: int
    _update_direct: Callable[[], None]  # the engine's

    # -- backends --------------------------------------------------------------------------------
    def register_backend(self, name: str, factory: Callable[[], Backend], priority: Priority = 1) -> bool:
        """Register a backend. ``priority`` is a number, or a function returning one that is called once, the
        first time the backends are ranked (on first use), so that ranking can look at the machine lazily."""
        if name in self._factories:
            logger.warning("%s backend was already registered; the existing one is kept", name)
            return False
        self._factories[name] = (factory, priority)
        return True

    def priority(self, name: str) -> float:
        """A registered backend's priority (a function given as priority is called now, once)."""
        factory, priority = self._factories[name]
        if callable(priority):
            try:
                priority = float(priority())
            except Exception as exc:  # a broken probe ranks its backend last
                logger.warning("the priority of backend '%s' could not be evaluated: %s", name, exc)
                priority = -math.inf
            if priority.is_integer():
                priority = int(priority)
            self._factories[name] = (factory, priority)
        return priority

    def _initialize(self, name: str) -> Backend | None:
        backend = self._instances.get(name)
        if backend is not None:
            return backend
        with _BACKEND_LOCK:  # one instance per backend, however many threads ask first
            return self._create(name)

    def _create(self, name: str) -> Backend | None:
        backend = self._instances.get(name)
        if backend is not None:
            return backend
        factory, _ = self._factories[name]
        try:
            backend = factory()
        except Exception as exc:  # a backend whose library is missing or broken
            logger.warning("initialization of backend '%s' failed: %s", name, exc)
            return None
        if backend is None:
            return None
        self._instances[name] = backend
        return backend

    def find_backend(self, name: str) -> Backend | None:
        if name not in self._factories:
            return None
        return self._initialize(name)

    def set_backend(self, name: str) -> bool:
        if name not in self._factories:
            known = ", ".join(self.backend_names()) or "none"
            raise ValueError(f"set_backend: backend '{name}' is not registered (registered: {known})")
        backend = self._initialize(name)
        if backend is None:
            return False
        self._backend = backend
        self.backend_name = name
        self._kernels = kernel_table(name)
        self._direct_all = direct_table(name)
        self._update_direct()
        return True

    def backend_names(self) -> list[str]:
        """The registered backends, highest priority first."""
        return sorted(self._factories, key=lambda n: -self.priority(n))

    def _choose_backend(self) -> Backend:
        """On first use: the backend ``NDFLOW_BACKEND`` names, else the highest-priority one that initializes
        (under a lock: threads that start at once all get the one backend the first of them chooses)."""
        with _BACKEND_LOCK:
            if self._backend is not None:
                return self._backend
            return self._choose_unlocked()

    def _choose_unlocked(self) -> Backend:
        wanted = os.environ.get(BACKEND_ENV_VAR, "").strip()
        if wanted:
            if wanted not in self._factories:
                known = ", ".join(self.backend_names())
                logger.warning("%s=%s is not a registered backend (registered: %s)", BACKEND_ENV_VAR, wanted, known)
            elif self.set_backend(wanted):
                return self._backend  # type: ignore[return-value]
        for name in self.backend_names():
            if self.set_backend(name):
                return self._backend  # type: ignore[return-value]
        names = ", ".join(self.backend_names())
        raise RuntimeError(f"no backend could be initialized (registered: {names})")

    @property
    def backend(self) -> Backend:
        return self._backend or self._choose_backend()

    def get_backend(self) -> str:
        if self._backend is None:
            self._choose_backend()
        return self.backend_name  # type: ignore[return-value]

    def remove_backend(self, name: str) -> None:
        if name not in self._factories:
            raise ValueError(f"remove_backend: backend '{name}' is not registered")
        instance = self._instances.pop(name, None)
        if instance is not None:
            stale = [data_id for data_id, info in self._data.items() if info.backend is instance]
            for data_id in stale:
                info = self._data.pop(data_id)
                self.num_data_buffers -= 1
                self.num_bytes -= info.nbytes
            instance.dispose()
            compiled.forget_layouts()
        del self._factories[name]
        if self.backend_name == name:
            self._backend = None
            self.backend_name = None
            self._kernels = {}
            self._direct_all = _NO_DIRECT
            self._update_direct()

    def _move(self, tensor: Tensor, dest: Backend) -> None:
        """Bring a tensor's data onto the active backend (it moves once, for all its tensors)."""
        info = tensor._info
        source = info.backend
        values = source.read_sync(tensor.data_id)
        ref_count = source.ref_count(tensor.data_id)
        source.dispose_data(tensor.data_id, force=True)
        dest.move(tensor.data_id, values, tensor.shape, tensor.dtype, ref_count)
        info.backend = dest
