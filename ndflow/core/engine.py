"""The engine: backends, kernel dispatch, scopes (tidy), memory counters, variables, profiling.

Mixins hold parts of it in their own files: the backend registry and the choice of the backend of first use
(core/backend_registry.py), kernel dispatch (core/dispatch/: ``run_kernel`` and its variants,
the direct path, the output bookkeeping, and the compiled module that does their plain cases in C) and
measurement: ``memory()``, ``time()``, ``profile()`` and the observed kernel path of debug mode
(core/measurement.py). The engine itself keeps the backends, tensors' creation and disposal, the gradient tape,
scopes and variables.

Scopes are per thread (docs/threads.md): the thread that made the engine (the owner, usually the main thread)
keeps its scope stack in slots, which the compiled dispatch reads directly; every other thread keeps its stack
in a ``threading.local``. ``active_scope`` and ``_scopes`` read the calling thread's.

One global :data:`ENGINE`, like TF.js's ``ENGINE``. Everything that creates or frees a tensor
goes through it. Backends own the values and the reference counts of data; the engine counts
tensors, buffers and bytes, and knows which backend holds each data id.
"""

from __future__ import annotations

import inspect
import itertools
import logging
import threading
from _thread import get_ident
from collections.abc import Callable
from typing import Any

import numpy as np

from . import debug_trace
from . import tensor as tensor_module
from .awaitable import is_pending
from .backend import Backend, DataInfo
from .backend_registry import _NO_DIRECT, BACKEND_ENV_VAR, BackendRegistry, Priority  # noqa: F401
from .containers import walk_tensors
from .dispatch import compiled
from .dispatch.direct_path import DirectPath
from .dispatch.run_kernel import ASSIGNED, MADE, KernelDispatch
from .flags import env
from .kernel_registry import KernelConfig, get_gradient
from .leaks import LeakTracker
from .measurement import Measurement
from .profiler import (
    ProfileInfo,
    ensure_visible_logging,
)
from .tape import TapeNode, saved_tensors
from .tensor import Tensor, Variable
from .trace_spans import SPANS, close_scope_span, open_scope_span

logger = logging.getLogger("ndflow")

KernelOutput = tuple[int, tuple[int, ...], str]


class Scope:
    __slots__ = ("track", "name", "id")

    def __init__(self, name: str | None, scope_id: int) -> None:
        self.track: list[Tensor] = []
        self.name = name
        self.id = scope_id


class _ThreadScopes(threading.local):
    """The scope stack of a thread other than the engine's owner."""

    def __init__(self) -> None:
        self.scopes: list[Scope] = []
        self.active: Scope | None = None


# The thread whose gradient tape is open (one at a time; see start_tape), or None.
_TAPE_OWNER: list[int | None] = [None]


class Engine(BackendRegistry, KernelDispatch, DirectPath, Measurement):
    # Slots, not a __dict__: compiled dispatch (core/dispatch/compiled.py) reads and writes them at fixed offsets.
    __slots__ = (
        "_factories", "_instances", "_backend", "_kernels", "_direct_all", "_direct", "backend_name",
        "num_tensors", "num_string_tensors", "num_data_buffers", "num_bytes", "_data",
        "_owner", "_owner_scopes", "_owner_scope", "_local", "_next_scope_id", "_tensor_ids", "_next_tensor_id",
        "_next_variable_id",
        "variables", "debug", "prod", "_profiles", "_slow", "gradient_depth", "kernel_depth", "tape",
        "_next_node_id", "tracker", "_leak_records", "_track_flag", "_forced_tracking", "_calls",
        "_calls_owner",
    )  # fmt: skip

    def __init__(self) -> None:
        self._factories: dict[str, tuple[Callable[[], Backend], Priority]] = {}
        self._instances: dict[str, Backend] = {}
        self._backend: Backend | None = None
        self._kernels: dict[str, KernelConfig] = {}
        # The active backend's direct kernel forms, and what the fast path reads: the same table, or an
        # empty one while kernels must be observed (tape, profile, debug mode, leak tracking).
        self._direct_all: dict[str, Callable[..., Any]] = _NO_DIRECT
        self._direct: dict[str, Callable[..., Any]] = _NO_DIRECT
        self.backend_name: str | None = None

        self.num_tensors = 0
        self.num_string_tensors = 0
        self.num_data_buffers = 0
        self.num_bytes = 0
        self._data: dict[int, DataInfo] = {}

        # Scopes: the owner thread's stack and active scope in slots (compiled dispatch reads ``_owner_scope``
        # when it runs on the owner thread), other threads' in ``_local``.
        self._owner = get_ident()
        self._owner_scopes: list[Scope] = []
        self._owner_scope: Scope | None = None
        self._local = _ThreadScopes()
        self._next_scope_id = itertools.count(1).__next__
        self._tensor_ids = itertools.count(0)
        self._next_tensor_id = self._tensor_ids.__next__
        self._next_variable_id = itertools.count(0).__next__
        self.variables: dict[str, Variable] = {}

        self.debug = False
        self.prod = False
        self._profiles: list[ProfileInfo] = []
        self._slow = False
        # While not None (``record_calls``): each outermost kernel call, and each value read, is listed here.
        self._calls: list[tuple[str, Any, Any, Any]] | None = None
        self._calls_owner: int | None = None  # the thread whose calls are listed

        # The gradient tape: on while a gradient function runs (TF.js's gradientDepth).
        self.gradient_depth = 0
        self.kernel_depth = 0
        self.tape: list[TapeNode] | None = None
        self._next_node_id = itertools.count(0).__next__

        # The leak finder (core/leaks.py): None unless TRACK_LEAKS, debug mode or expect_no_leaks.
        self.tracker: LeakTracker | None = None
        self._leak_records: LeakTracker | None = None
        self._track_flag = False
        self._forced_tracking = 0
        tensor_module.ENGINE = self

    # -- modes -----------------------------------------------------------------------------------
    def _set_track_leaks(self, value: Any) -> None:
        self._track_flag = bool(value)
        self._update_tracking()

    def _set_dispose_unreachable(self, value: Any) -> None:
        self._update_tracking()

    def _update_tracking(self) -> None:
        dispose_unreachable = bool(env().get("DISPOSE_UNREACHABLE")) if env().has("DISPOSE_UNREACHABLE") else False
        wanted = self._track_flag or self.debug or dispose_unreachable or self._forced_tracking > 0
        # The tracker's records outlive pauses in tracking, so leaks found earlier can still be freed.
        if self._leak_records is None:
            self._leak_records = LeakTracker(self)
        self._leak_records.dispose_unreachable = dispose_unreachable
        self._leak_records.release_pending()
        self.tracker = self._leak_records if wanted else None
        self._update_direct()

    def leak_tracker(self, force: bool = False) -> LeakTracker:
        """The active leak tracker; ``force`` turns tracking on until ``stop_forced_tracking``."""
        if force:
            self._forced_tracking += 1
            self._update_tracking()
        if self.tracker is None:
            raise RuntimeError("leaks: leak tracking is off (set the flag TRACK_LEAKS or enable debug mode)")
        return self.tracker

    def stop_forced_tracking(self) -> None:
        self._forced_tracking -= 1
        self._update_tracking()

    def release_data(self, data_id: int, info: DataInfo, dtype: str) -> None:
        """Account for a tensor whose object is gone (a leak freed by ``DISPOSE_UNREACHABLE``)."""
        self.num_tensors -= 1
        if dtype == "string":
            self.num_string_tensors -= 1
        if info.backend.dispose_data(data_id) and self._data.pop(data_id, None) is not None:
            self.num_data_buffers -= 1
            self.num_bytes -= info.nbytes

    def _set_debug(self, value: Any) -> None:
        self.debug = bool(value)
        self._update_tracking()
        if self.debug:
            ensure_visible_logging()
            logger.warning(
                "Debugging mode is ON. Every kernel is timed and logged and its float output is "
                "checked for NaN/Inf. This slows execution down."
            )
        debug_trace.update(self)
        self._update_slow()

    def _set_prod(self, value: Any) -> None:
        self.prod = bool(value)

    def _update_slow(self) -> None:
        self._slow = self.debug or bool(self._profiles) or self.gradient_depth > 0 or self._calls is not None
        self._update_direct()

    def _update_direct(self) -> None:
        fast = not self._slow and self.tracker is None
        self._direct = self._direct_all if fast else _NO_DIRECT

    # -- tensors ---------------------------------------------------------------------------------
    def make_tensor(self, values: np.ndarray, shape: tuple[int, ...], dtype: str) -> Tensor:
        backend = self._backend or self._choose_backend()
        t = self._track_output(backend.write(values, shape, dtype), shape, dtype, backend)
        if self._calls is not None:
            self.list_event(MADE, t, values)
        return t

    def make_tensor_from_output(self, output: KernelOutput) -> Tensor:
        backend = self._backend or self._choose_backend()
        return self._track_output(output[0], output[1], output[2], backend)

    def dispose_tensor(self, t: Tensor) -> None:
        if t._disposed:
            return
        t._disposed = True
        if self.tracker is not None:
            self.tracker.forget(t.id)
        self.num_tensors -= 1
        if t.dtype == "string":
            self.num_string_tensors -= 1
        info = t._info
        if info.backend.dispose_data(t.data_id):
            if self._data.pop(t.data_id, None) is not None:
                self.num_data_buffers -= 1
                self.num_bytes -= info.nbytes

    def dispose(self, container: Any) -> None:
        for t in list(walk_tensors(container)):
            t.dispose()

    def read_sync(self, t: Tensor) -> np.ndarray:
        if self._calls is not None and self._calls_owner == get_ident():
            self._calls.append(("", t, None, None))
        return t._info.backend.read_sync(t.data_id)

    async def read(self, t: Tensor) -> np.ndarray:
        if self._calls is not None and self._calls_owner == get_ident():
            self._calls.append(("", t, None, None))
        return await t._info.backend.read(t.data_id)

    # -- gradient tape ---------------------------------------------------------------------------
    def start_tape(self) -> None:
        me = threading.get_ident()
        owner = _TAPE_OWNER[0]
        if owner is not None and owner != me:
            raise RuntimeError(
                "gradients are computed in one thread at a time: another thread is computing gradients now "
                "(fit, grad, minimize); other threads may predict meanwhile (docs/threads.md)"
            )
        _TAPE_OWNER[0] = me
        self.gradient_depth += 1
        if self.gradient_depth == 1:
            self.tape = []
        self._update_slow()

    def end_tape(self) -> None:
        self.gradient_depth -= 1
        self._update_slow()

    def dispose_tape(self) -> None:
        """Free what the tape saved for the backward pass, once the outermost gradient is done."""
        if self.gradient_depth == 0 and self.tape is not None:
            for node in self.tape:
                for t in node.saved:
                    self.dispose_tensor(t)
            self.tape = None
        if self.gradient_depth == 0 and _TAPE_OWNER[0] == threading.get_ident():
            _TAPE_OWNER[0] = None

    def _tape_clone(self, t: Tensor) -> Tensor:
        """A kept tensor sharing ``t``'s data, held by the tape (not by any scope)."""
        t._info.backend.inc_ref(t.data_id)
        clone = Tensor(t.shape, t.dtype, t.data_id, self._next_tensor_id(), t._info)
        clone.kept = True
        self.num_tensors += 1
        return clone

    def record(
        self,
        kernel_name: str,
        inputs: tuple[Tensor, ...],
        outputs: list[Tensor],
        attrs: dict[str, Any] | None,
        grad_func: Any = None,
        saved: list[Tensor] | None = None,
    ) -> None:
        """Add a node to the tape: the kernel's registered gradient, or ``grad_func`` (custom_grad). Only the
        kernels of the thread that holds the tape are recorded: other threads' calls are not part of its
        computation."""
        if _TAPE_OWNER[0] != threading.get_ident():
            return
        if grad_func is None:
            config = get_gradient(kernel_name)
            grad_func = config.grad_func if config is not None else None
            saved = saved_tensors(config, inputs, outputs)
        kept = [self._tape_clone(t) for t in saved or ()]
        self.tape.append(TapeNode(self._next_node_id(), kernel_name, inputs, outputs, attrs, kept, grad_func))
        # Link each clone to its original (after the node, which may have produced it), so that
        # higher-order gradients flow through saved values.
        identity = get_gradient("Identity")
        grad_identity = identity.grad_func if identity is not None else None
        for t, clone in zip(saved or (), kept, strict=True):
            self.tape.append(TapeNode(self._next_node_id(), "Identity", (t,), [clone], None, [], grad_identity))

    # -- scopes ----------------------------------------------------------------------------------
    @property
    def active_scope(self) -> Scope | None:
        """The calling thread's innermost scope (None outside every scope)."""
        if get_ident() == self._owner:
            return self._owner_scope
        return self._local.active

    @property
    def _scopes(self) -> list[Scope]:
        """The calling thread's scope stack, outermost first."""
        return self._owner_scopes if get_ident() == self._owner else self._local.scopes

    def start_scope(self, name: str | None = None) -> Scope:
        scope = Scope(name, self._next_scope_id())
        if name is not None and SPANS.on:  # a named scope (nf.op, tidy(name)) is an op in profiles' traces
            open_scope_span(scope.id, name)
        if get_ident() == self._owner:
            self._owner_scopes.append(scope)
            self._owner_scope = scope
        else:
            local = self._local
            local.scopes.append(scope)
            local.active = scope
        return scope

    def end_scope(self, result: Any = None) -> None:
        survivors = list(walk_tensors(result))
        keep_ids = {t.id for t in survivors}
        if get_ident() == self._owner:
            stack = self._owner_scopes
            scope = stack.pop()
            parent = self._owner_scope = stack[-1] if stack else None
        else:
            local = self._local
            stack = local.scopes
            scope = stack.pop()
            parent = local.active = stack[-1] if stack else None
        if SPANS.on and scope.name is not None:
            close_scope_span(scope.id)
        compiled.scope_disposer(self._dispose_scope)(scope.track, keep_ids)
        for t in survivors:
            if not t.kept and t.scope_id == scope.id and not isinstance(t, Variable):
                t.scope_id = parent.id if parent is not None else 0
                if parent is not None:
                    parent.track.append(t)

    def _dispose_scope(self, track: list[Tensor], keep_ids: set[int]) -> None:
        """Dispose a closing scope's tensors that are neither kept nor part of its result."""
        for t in track:
            if not t.kept and not t._disposed and t.id not in keep_ids:
                self.dispose_tensor(t)

    def tidy(self, name: str | None, fn: Callable[..., Any], args: tuple, kwargs: dict) -> Any:
        code = getattr(fn, "__code__", None)  # a function or method: its flags say it (inspect's check is slower)
        if (code.co_flags & inspect.CO_COROUTINE) if code is not None else inspect.iscoroutinefunction(fn):
            raise TypeError("tidy: cannot run an async function; await its results outside tidy instead")
        self.start_scope(name)
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            self.end_scope(None)
            raise
        if is_pending(result):  # a finished result (a tensor, a History) awaits to itself: not refused
            close = getattr(result, "close", None)
            if close is not None:
                close()
            self.end_scope(None)
            raise TypeError("tidy: fn returned an awaitable; tidy cannot span asynchronous work")
        self.end_scope(result)
        return result

    def keep(self, t: Tensor) -> Tensor:
        if not isinstance(t, Tensor):
            raise TypeError(f"keep: expected a Tensor, got {type(t).__name__}")
        t.kept = True
        if self.tracker is not None:
            self.tracker.forget(t.id)  # kept tensors are meant to outlive every scope
        return t

    def track(self, t: Tensor) -> Tensor:
        """Adopt a tensor into the active scope (deeplearn.js's ``track``)."""
        scope = self.active_scope
        if scope is not None and not isinstance(t, Variable) and t.scope_id != scope.id:
            t.scope_id = scope.id
            scope.track.append(t)
        return t

    # -- variables -------------------------------------------------------------------------------
    def make_variable(self, initial: Tensor, trainable: bool, name: str | None) -> Variable:
        name = str(self._next_variable_id()) if name is None else name
        if name in self.variables:
            raise ValueError(f"variable: a variable named '{name}' is already registered")
        initial.throw_if_disposed()
        info = initial._info
        info.backend.inc_ref(initial.data_id)
        v = Variable(initial, trainable, name, self._next_tensor_id(), info)
        self.num_tensors += 1
        self.variables[name] = v
        return v

    def assign_variable(self, v: Variable, new_value: Tensor) -> None:
        new_info = new_value._info
        new_info.backend.inc_ref(new_value.data_id)
        old_id, old_info = v.data_id, v._info
        if old_info.backend.dispose_data(old_id) and self._data.pop(old_id, None) is not None:
            self.num_data_buffers -= 1
            self.num_bytes -= old_info.nbytes
        v.data_id = new_value.data_id
        v._info = new_info
        if self._calls is not None:
            self.list_event(ASSIGNED, v, new_value)

    def dispose_variable(self, v: Variable) -> None:
        self.dispose_tensor(v)
        if self.variables.get(v.name) is v:
            del self.variables[v.name]

    def dispose_variables(self) -> None:
        for v in list(self.variables.values()):
            self.dispose_variable(v)

    def reset(self) -> None:
        """Dispose every backend and forget all tensors (tests use it to start clean)."""
        compiled.forget_layouts()
        for name in list(self._instances):
            self._instances.pop(name).dispose()
        self._backend = None
        self.backend_name = None
        self._kernels = {}
        self._direct_all = _NO_DIRECT
        self.num_tensors = self.num_string_tensors = self.num_data_buffers = self.num_bytes = 0
        self._data.clear()
        self._owner_scopes.clear()
        self._owner_scope = None
        self._local = _ThreadScopes()
        self.variables.clear()
        self.gradient_depth = self.kernel_depth = 0
        self.tape = None
        _TAPE_OWNER[0] = None
        self.tracker = self._leak_records = None
        self._forced_tracking = 0
        self._update_slow()


ENGINE = Engine()
compiled.configure(ENGINE, Scope)
env().register_flag("DEBUG_TRACE", lambda: "", lambda _: debug_trace.update(ENGINE))
env().register_flag("DEBUG", lambda: False, ENGINE._set_debug)
env().register_flag("TRACK_LEAKS", lambda: False, ENGINE._set_track_leaks)
env().register_flag("DISPOSE_UNREACHABLE", lambda: False, ENGINE._set_dispose_unreachable)
env().register_flag("PROD", lambda: False, ENGINE._set_prod)
