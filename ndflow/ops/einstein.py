"""Einstein summation: ``einsum``, with the subset of equations TF.js 4.22 supports."""

from __future__ import annotations

import re
from contextlib import ExitStack

from ..core import kernel_names as kn
from ..core.engine import ENGINE
from ..core.tensor import Tensor
from ..core.types import TensorLike
from .convert import converted


def _parse(equation: str, num_tensors: int) -> tuple[list[str], str]:
    """The input terms and the output term of ``equation``, raising where TF.js does."""
    eq = re.sub(r"\s", "", equation)
    arrows = eq.count("->")
    if arrows < 1:
        raise ValueError(f"einsum: equations without an arrow ('->') are not supported, got {equation!r}")
    if arrows > 1:
        raise ValueError(f"einsum: the equation must contain exactly one arrow ('->'), got {equation!r}")
    inputs, output = eq.split("->")
    if "..." in inputs:
        raise ValueError(f"einsum: the ellipsis notation ('...') is not supported, got {equation!r}")
    terms = inputs.split(",")
    if len(terms) != num_tensors:
        raise ValueError(f"einsum: the equation {equation!r} expects {len(terms)} tensors, got {num_tensors}")
    if len(terms) > 2:
        raise ValueError(f"einsum: more than 2 input tensors are not supported, got {len(terms)}")
    for label in output:
        if not any(label in term for term in terms):
            raise ValueError(f"einsum: the output label {label!r} is not in the input subscripts of {equation!r}")
    if len(set(output)) != len(output):
        raise ValueError(f"einsum: the output subscripts {output!r} repeat a label")
    if len(set(inputs.replace(",", ""))) > 52:
        raise ValueError(f"einsum: at most 52 distinct labels are supported, got {equation!r}")
    for term in terms:
        if len(set(term)) != len(term):
            raise ValueError(f"einsum: duplicate labels in the input term {term!r} are not supported")
    return terms, output


def einsum(equation: str, *tensors: TensorLike) -> Tensor:
    """Einstein summation over one or two tensors, e.g. ``einsum('ij,jk->ik', a, b)``.

    As TF.js: an explicit ``->`` output is required, no ellipsis, no repeated label within one input.
    """
    if not isinstance(equation, str):
        raise TypeError(f"einsum: argument 'equation' must be a str, got {type(equation).__name__}")
    terms, _ = _parse(equation, len(tensors))
    with ExitStack() as stack:
        ts = [stack.enter_context(converted(x, f"tensors[{i}]", "einsum")) for i, x in enumerate(tensors)]
        sizes: dict[str, int] = {}
        for i, (term, t) in enumerate(zip(terms, ts, strict=True)):
            if t.dtype == "string":
                raise TypeError(f"einsum: argument 'tensors[{i}]' must be a numeric tensor, got a string tensor")
            if len(term) != t.rank:
                raise ValueError(
                    f"einsum: the term {term!r} has {len(term)} labels, but tensors[{i}] has rank {t.rank} "
                    f"(shape {list(t.shape)})"
                )
            for label, dim in zip(term, t.shape, strict=True):
                if sizes.setdefault(label, dim) != dim:
                    raise ValueError(
                        f"einsum: label {label!r} has size {sizes[label]} in one input and {dim} in tensors[{i}] "
                        f"(shape {list(t.shape)})"
                    )
        return ENGINE.run_kernel(kn.Einsum, tuple(ts), {"equation": re.sub(r"\s", "", equation)})


__all__ = ["einsum"]
