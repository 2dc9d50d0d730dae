"""Kernels and gradients, registered by kernel name (and backend name for kernels)."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

logger = logging.getLogger("ndflow")

KernelFunc = Callable[..., Any]


class KernelConfig(NamedTuple):
    kernel_name: str
    backend_name: str
    kernel_func: KernelFunc
    setup_func: Callable[[Any], None] | None = None
    dispose_func: Callable[[Any], None] | None = None


class GradConfig(NamedTuple):
    kernel_name: str
    grad_func: Callable[..., Any]
    inputs_to_save: Sequence[str] | None = None
    outputs_to_save: Sequence[bool] | None = None
    save_all_inputs: bool = False


# backend name -> kernel name -> config. Nested so that dispatch is two dict lookups.
_KERNELS: dict[str, dict[str, KernelConfig]] = {}
_GRADIENTS: dict[str, GradConfig] = {}
# backend name -> kernel name -> the kernel's float32 form (see register_direct).
_DIRECT: dict[str, dict[str, KernelFunc]] = {}
# backend name -> what registers its kernels, until it has run (see register_kernel_loader).
_LOADERS: dict[str, Callable[[], Any]] = {}
_LOADING: set[str] = set()
_LOAD_LOCK = threading.RLock()


def register_kernel(
    kernel_name: str,
    backend_name: str,
    kernel_func: KernelFunc,
    setup_func: Callable[[Any], None] | None = None,
    dispose_func: Callable[[Any], None] | None = None,
) -> None:
    _ensure_loaded(backend_name)  # the backend's own kernels first, so that this one replaces theirs
    table = _KERNELS.setdefault(backend_name, {})
    if kernel_name in table:
        logger.warning(
            "kernel '%s' for backend '%s' is already registered; the new one replaces it", kernel_name, backend_name
        )
    table[kernel_name] = KernelConfig(kernel_name, backend_name, kernel_func, setup_func, dispose_func)
    _drop_direct(kernel_name, backend_name)  # a replaced kernel loses its direct forms


def kernel(kernel_name: str, backend_name: str) -> Callable[[KernelFunc], KernelFunc]:
    """Decorator form of :func:`register_kernel`."""

    def wrap(fn: KernelFunc) -> KernelFunc:
        register_kernel(kernel_name, backend_name, fn)
        return fn

    return wrap


def register_kernel_loader(backend_name: str, loader: Callable[[], Any]) -> None:
    """Defer a backend's kernel registration: ``loader`` (which imports the backend's kernel modules) runs once,
    the first time the backend's kernels are looked up (``get_kernel``, ``kernel_table``,
    ``get_kernels_for_backend``), so that ``import ndflow`` does not import an optional backend's library."""
    _LOADERS[backend_name] = loader


def _load(backend_name: str) -> None:
    """Run a backend's loader once. Other threads wait until it has finished (they never see half a table);
    the loader's own registrations re-enter on the same thread and find nothing left to load."""
    with _LOAD_LOCK:
        loader = _LOADERS.pop(backend_name, None)
        if loader is None:
            return
        _LOADING.add(backend_name)
        try:
            loader()
        except Exception as exc:  # a backend whose library is missing or broken has no kernels
            logger.warning("loading the kernels of backend '%s' failed: %s", backend_name, exc)
        finally:
            _LOADING.discard(backend_name)


def _ensure_loaded(backend_name: str) -> None:
    """The backend's kernels registered (its loader run) before its table is read or changed."""
    if backend_name in _LOADERS or backend_name in _LOADING:
        _load(backend_name)


def get_kernel(kernel_name: str, backend_name: str) -> KernelConfig | None:
    _ensure_loaded(backend_name)
    return _KERNELS.get(backend_name, {}).get(kernel_name)


def kernel_table(backend_name: str) -> dict[str, KernelConfig]:
    """The live table of a backend's kernels (the engine's dispatch reads it directly)."""
    _ensure_loaded(backend_name)
    return _KERNELS.setdefault(backend_name, {})


def get_kernels_for_backend(backend_name: str) -> list[KernelConfig]:
    _ensure_loaded(backend_name)
    return list(_KERNELS.get(backend_name, {}).values())


def unregister_kernel(kernel_name: str, backend_name: str) -> None:
    _ensure_loaded(backend_name)
    table = _KERNELS.get(backend_name, {})
    if kernel_name not in table:
        raise KeyError(f"unregister_kernel: kernel '{kernel_name}' is not registered for backend '{backend_name}'")
    del table[kernel_name]
    _drop_direct(kernel_name, backend_name)


def register_direct(kernel_name: str, backend_name: str, fn: KernelFunc) -> None:
    """Declare what kernel ``kernel_name`` of a backend computes for float32 inputs that all have one shape.

    ``fn`` takes the backend's arrays of the inputs (an element-wise kernel's second operand may also be
    a Python number, which it treats as a float32 scalar) and returns the output array: float32, of the
    inputs' shape. The engine calls it without the kernel's wrapper on its fast path (no tape, profile,
    debug mode or leak tracking); re-registering or unregistering the kernel drops it.
    """
    _ensure_loaded(backend_name)
    if kernel_name not in _KERNELS.get(backend_name, {}):
        raise KeyError(f"register_direct: kernel '{kernel_name}' is not registered for backend '{backend_name}'")
    _DIRECT.setdefault(backend_name, {})[kernel_name] = fn


def register_direct_reduction(kernel_name: str, backend_name: str, fn: KernelFunc, max_size: int | None = None) -> None:
    """Declare what reduction kernel ``kernel_name`` of a backend computes over every axis of a float32 input
    (``keep_dims`` off): ``fn`` takes the backend's array and returns the 0-d float32 result, exactly the
    kernel's, for inputs of at most ``max_size`` values (None: any; above it the kernel runs, e.g. where it
    would sum in another order). Compiled dispatch (core/dispatch/compiled.py) runs it for ``nf.sum(x)``-style calls on
    the same fast path as :func:`register_direct`. Stored in the backend's direct table under the key
    ``(kernel_name, "all")`` as ``(fn, max_size)``."""
    _ensure_loaded(backend_name)
    if kernel_name not in _KERNELS.get(backend_name, {}):
        raise KeyError(
            f"register_direct_reduction: kernel '{kernel_name}' is not registered for backend '{backend_name}'"
        )
    if max_size is not None and (type(max_size) is not int or max_size < 0):
        raise ValueError(f"register_direct_reduction: max_size must be a non-negative int or None, got {max_size!r}")
    _DIRECT.setdefault(backend_name, {})[(kernel_name, "all")] = (fn, max_size)  # type: ignore[index]


def register_direct_product(kernel_name: str, backend_name: str, fn: KernelFunc) -> None:
    """Declare what matrix product kernel ``kernel_name`` of a backend computes for two float32 matrices, ``(m, k)
    @ (k, n)`` without transposes: ``fn`` takes the backend's two arrays and returns the ``(m, n)`` float32 result,
    exactly the kernel's (or None to let the kernel run). Compiled dispatch runs it for ``nf.mat_mul(a, b)``-style
    calls on the same fast path as :func:`register_direct`. Stored in the backend's direct table under the key
    ``(kernel_name, "product")``."""
    _ensure_loaded(backend_name)
    if kernel_name not in _KERNELS.get(backend_name, {}):
        raise KeyError(
            f"register_direct_product: kernel '{kernel_name}' is not registered for backend '{backend_name}'"
        )
    _DIRECT.setdefault(backend_name, {})[(kernel_name, "product")] = fn  # type: ignore[index]


def register_shared_output(kernel_name: str, backend_name: str) -> None:
    """Declare that kernel ``kernel_name`` of a backend only gives its input's buffer a new shape (one more owner
    of the data, as ``Reshape``): compiled dispatch may then do that itself on its fast path. Stored in the
    backend's direct table under the key ``(kernel_name, "shares")``."""
    _ensure_loaded(backend_name)
    if kernel_name not in _KERNELS.get(backend_name, {}):
        raise KeyError(f"register_shared_output: kernel '{kernel_name}' is not registered for backend '{backend_name}'")
    _DIRECT.setdefault(backend_name, {})[(kernel_name, "shares")] = True  # type: ignore[index]


def _drop_direct(kernel_name: str, backend_name: str) -> None:
    table = _DIRECT.get(backend_name, {})
    for key in [k for k in table if k == kernel_name or (type(k) is tuple and k[0] == kernel_name)]:
        del table[key]


def direct_kernel_names(backend_name: str) -> list[str]:
    """The element-wise kernels with a direct form on a backend (:func:`register_direct`)."""
    return sorted(k for k in _DIRECT.get(backend_name, {}) if type(k) is str)


def direct_table(backend_name: str) -> dict[str, KernelFunc]:
    """The live table of a backend's direct (float32) kernel forms."""
    return _DIRECT.setdefault(backend_name, {})


def register_gradient(
    kernel_name: str,
    grad_func: Callable[..., Any],
    inputs_to_save: Sequence[str] | None = None,
    outputs_to_save: Sequence[bool] | None = None,
    save_all_inputs: bool = False,
) -> None:
    _GRADIENTS[kernel_name] = GradConfig(kernel_name, grad_func, inputs_to_save, outputs_to_save, save_all_inputs)


def get_gradient(kernel_name: str) -> GradConfig | None:
    return _GRADIENTS.get(kernel_name)


def unregister_gradient(kernel_name: str) -> None:
    if kernel_name not in _GRADIENTS:
        raise KeyError(f"unregister_gradient: no gradient is registered for kernel '{kernel_name}'")
    del _GRADIENTS[kernel_name]
