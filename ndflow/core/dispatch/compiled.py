"""Compiled dispatch: the engine's plain cases in C (``ndflow/core/dispatch/csrc``, module
``ndflow.core.dispatch._dispatch``).

Python-level dispatch costs about 1.5 us per op on its own (argument checks, the tensor object, the data store,
memory counters, scope tracking, disposal): more than the kernel of a small op. The C module does the same
work on the same objects for the plain cases and hands every other case to the Python code, which stays the
specification:

- op functions made by :func:`binary_op`, :func:`unary_op`, :func:`reduce_all_op`, :func:`reshape_op` and
  :func:`product_op` (``nf.add``, ``nf.exp``, ``nf.sum``, ``nf.reshape``, ``nf.mat_mul``...): float32 element-wise
  ops whose kernel has a direct form on the active backend (``register_direct``), full sums
  (``register_direct_reduction``), reshapes that share the buffer (``register_shared_output``) and products of two
  float32 matrices (``register_direct_product``), while the direct path is open (no tape, profile, debug
  mode or leak tracker);
- ``Tensor.dispose`` and a closing scope's disposal: tensors of backends whose store frees as
  ``RefCountedStore`` does, no leak tracker, not strings;
- ``Engine.run_kernel`` and the output bookkeeping after the kernel (``outputs.track_output``), while no tape,
  profile, debug mode or leak tracker watches and every input is a live tensor of the active backend;
- a graph program's replayed steps (:func:`step_runner`): each kept kernel call whose inputs have the recorded
  shapes and dtypes, its outputs into their slot and the slots that die there disposed, one C loop for as
  long as the steps are plain (``converter/runtime/program.py`` runs the others).

The module is built when ndflow is installed with a C compiler (``setup.py``; optional: without one, ndflow
runs the Python code alone). The flag ``C_DISPATCH`` (default: on where built) turns it off and on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from ..arguments import with_keyword_hint
from ..flags import env

if TYPE_CHECKING:
    from ..engine import Engine

try:
    from . import _dispatch
except ImportError:  # built without a C compiler: the Python paths alone
    _dispatch = None

_state: dict[str, Any] = {"python_dispose": None}
_UNARY, _BINARY, _REDUCE_ALL, _RESHAPE, _PRODUCT = 1, 2, 3, 4, 5  # the kinds of _dispatch.op
#: An op function: the decorators below keep its signature for type checkers.
F = TypeVar("F", bound=Callable[..., Any])


def available() -> bool:
    """Whether the compiled module was built."""
    return _dispatch is not None


def enabled() -> bool:
    """Whether compiled dispatch is in use (built, configured, flag ``C_DISPATCH`` on)."""
    return _dispatch is not None and _dispatch.enabled()


def _store_layout(backend: Any) -> tuple | None:
    layout = backend.store_layout()
    return None if layout is None else tuple(layout)


def configure(engine: Engine, scope_type: type) -> None:
    """Point the compiled module at the engine, the core classes and the engine's scope class (``scope_type``), and
    register ``C_DISPATCH``."""
    from .. import backend
    from ..dtypes import BYTES_PER_ELEMENT
    from ..tensor import Tensor, Variable
    from .run_kernel import KernelDispatch

    if _dispatch is not None:
        _dispatch.configure(
            engine,
            Tensor,
            Variable,
            backend.DataInfo,
            scope_type,
            backend._data_ids,
            _store_layout,
            engine.dispose_tensor,
            "float32",
            "string",
        )
        _state["python_dispose"] = Tensor.dispose
        python_run_kernel = KernelDispatch.run_kernel
        _state["python_run_kernel"] = python_run_kernel
        _state["run_kernel"] = _dispatch.run_kernel_method(type(engine), python_run_kernel, BYTES_PER_ELEMENT)
        _state["engine_type"] = type(engine)
    env().register_flag("C_DISPATCH", available, _set_enabled)
    _set_enabled(env().get("C_DISPATCH"))


def _set_enabled(value: Any) -> None:
    if _dispatch is None:
        return
    from ..tensor import Tensor

    on = bool(value)
    _dispatch.set_enabled(on)
    Tensor.dispose = _dispatch.dispose_method() if on else _state["python_dispose"]
    _state["engine_type"].run_kernel = _state["run_kernel" if on else "python_run_kernel"]


def scope_disposer(fallback: Callable[[list, set], None]) -> Callable[[list, set], None]:
    """The end of a scope's disposal loop (``fallback(track, keep_ids)``) compiled where the module was built."""
    return fallback if _dispatch is None else _dispatch.dispose_scope


def step_runner() -> Callable[..., Any] | None:
    """``_dispatch.run_steps`` (a graph program's plain replayed steps, ``converter/runtime/program.py``) while compiled
    dispatch is on, else None."""
    return _dispatch.run_steps if _dispatch is not None and _dispatch.enabled() else None


def forget_layouts() -> None:
    """Backends were created, disposed or removed: read their store layouts again."""
    if _dispatch is not None:
        _dispatch.forget_layouts()


def _op(kind: int, kernel: str) -> Callable[[F], F]:
    def wrap(fn: F) -> F:
        if _dispatch is None:
            return fn
        # the compiled op calls ``fn`` when its direct path does not apply: a camelCase keyword gets its hint there
        try:
            return _dispatch.op(kind, kernel, with_keyword_hint(fn))  # type: ignore[no-any-return]
        except ValueError:  # a module built before this kind of op existed: the Python op alone
            return fn

    return wrap


def binary_op(kernel: str) -> Callable[[F], F]:
    """Decorator of a binary op ``f(a, b)`` that runs ``kernel`` through ``run_binary``: calls with two
    positional arguments try the compiled direct path first (float32 operands of one shape, or a float32 tensor
    and a Python number), then ``f``. The op stays ``f`` for everything else (name, docs, signature via
    ``__wrapped__``) and binds as a method of ``Tensor``."""
    return _op(_BINARY, kernel)


def unary_op(kernel: str) -> Callable[[F], F]:
    """Decorator of a unary op ``f(x)`` that runs ``kernel`` through ``run_unary`` (see :func:`binary_op`)."""
    return _op(_UNARY, kernel)


def reduce_all_op(kernel: str) -> Callable[[F], F]:
    """Decorator of a reduction ``f(x, axis=None, keep_dims=False)``: calls ``f(x)`` on a float32 tensor try the
    backend's form of the reduction over every axis first (``register_direct_reduction``), then ``f``."""
    return _op(_REDUCE_ALL, kernel)


def reshape_op(kernel: str) -> Callable[[F], F]:
    """Decorator of ``reshape(x, shape)``: where the backend declared that ``kernel`` shares its input's buffer
    (``register_shared_output``), a plain call (a tensor and a list or tuple of ints) gives the buffer one
    more owner and makes the tensor in C; anything else goes to ``f``."""
    return _op(_RESHAPE, kernel)


def product_op(kernel: str) -> Callable[[F], F]:
    """Decorator of a matrix product ``f(a, b, transpose_a=False, transpose_b=False)``: a call ``f(a, b)`` on two
    float32 matrices ``(m, k)`` and ``(k, n)`` tries the backend's product form first (``register_direct_product``;
    on the cpu backend the route is decided once per shapes and flags), then ``f``."""
    return _op(_PRODUCT, kernel)


def is_op(obj: Any) -> bool:
    """Whether ``obj`` is an op made by one of the decorators above (a Python function otherwise)."""
    return _dispatch is not None and type(obj) is _dispatch.Op
