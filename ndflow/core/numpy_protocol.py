"""How tensors meet numpy: ``__array__``, ``__array_function__``, ``__format__`` and notebook HTML.

The rule (docs/interop.md): numpy functions called on tensors compute in numpy on the tensors' values and
return numpy values, so nothing comes back that must be disposed. ``np.sum(t)`` is a numpy scalar,
``np.concatenate([t, u])`` an ndarray, ``np.sqrt(t)`` an ndarray (ufuncs go through ``__array__``). Python
operators stay ndflow's: ``t + ndarray`` and ``ndarray + t`` are tensors. Where numpy returns a view of its
input (``np.reshape(t, ...)``, ``np.transpose(t)``) the view is read-only, as the tensor is immutable.
"""

from __future__ import annotations

import html as _html
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .tensor import Tensor


def as_array(t: Tensor, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """numpy's ``__array__``: a read-only view of the values; a writable copy where ``copy`` is True or a
    dtype conversion is needed (``copy=False`` with a conversion is numpy's ValueError)."""
    values = t._values().reshape(t.shape)
    converts = dtype is not None and np.dtype(dtype) != values.dtype
    if copy is False and converts:
        raise ValueError(f"__array__: converting a {t.dtype} tensor to {np.dtype(dtype)} needs a copy (copy=False)")
    if copy or converts:
        return np.array(values, dtype=dtype, copy=True)
    view = values.view()
    view.flags.writeable = False
    return view


def _to_numpy(x: Any) -> Any:
    """``x`` with every tensor (also inside lists, tuples and dicts) replaced by a read-only view of its values."""
    from .tensor import Tensor

    if isinstance(x, Tensor):
        return as_array(x)
    if isinstance(x, list | tuple):
        items = [_to_numpy(v) for v in x]
        return items if isinstance(x, list) else type(x)(items) if type(x) is tuple else type(x)(*items)
    if isinstance(x, dict):
        return {k: _to_numpy(v) for k, v in x.items()}
    return x


def array_function(func: Any, args: tuple, kwargs: dict) -> Any:
    """``__array_function__``: run numpy's ``func`` on the values of the tensors among its arguments."""
    return func(*_to_numpy(args), **_to_numpy(kwargs))


def format_tensor(t: Tensor, spec: str) -> str:
    """``format(t, spec)``: a rank-0 tensor formats its Python value; any other tensor only with an empty spec
    (its ``str``), as torch does."""
    if not spec:
        return str(t)
    if t.rank == 0:
        t.throw_if_disposed("format")
        return format(t._values().reshape(()).item(), spec)
    raise TypeError(
        f"format: the spec {spec!r} applies to rank-0 tensors; this one has shape {list(t.shape)} "
        "(format its values, e.g. [f'{v:.2f}' for v in t.tolist()])"
    )


def html(t: Tensor) -> str:
    """What notebooks show for a tensor: its repr in a ``<pre>`` block."""
    return f"<pre>{_html.escape(repr(t))}</pre>"
