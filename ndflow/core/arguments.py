"""TF.js's camelCase option names, met in Python: a keyword a function does not take gets its snake_case
spelling in the error (``conv2d: unexpected argument(s) 'dataFormat' (use 'data_format')``).

:func:`with_keyword_hint` wraps a public function so that a call with such a keyword raises that error instead of
Python's plain one; the wrapper costs one frame and nothing else (the check runs only once the call has failed to
bind). Ops, layer factories and model methods share :func:`unexpected_arguments`'s wording.
"""

from __future__ import annotations

import functools
import inspect
import re
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["snake_case", "unexpected_arguments", "with_keyword_hint"]


def snake_case(name: str) -> str:
    """``'dataFormat'`` -> ``'data_format'`` (TF.js's ``toSnakeCase``)."""
    intermediate = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", intermediate).lower()


def unexpected_arguments(what: str, names: list[str]) -> TypeError:
    """The error for keywords ``what`` does not take; a camelCase one gets its snake_case spelling."""
    listed = ", ".join(repr(k) + (f" (use {snake_case(k)!r})" if snake_case(k) != k else "") for k in names)
    return TypeError(f"{what}: unexpected argument(s) {listed}")


def takes_snake_case_keywords(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` has a keyword parameter a TF.js user would spell in camelCase (its name has an ``_``)."""
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any("_" in p.name.strip("_") and p.kind not in (p.VAR_POSITIONAL, p.POSITIONAL_ONLY) for p in params)


def with_keyword_hint(fn: F, what: str | None = None) -> F:
    """``fn`` wrapped so that an unknown keyword raises :func:`unexpected_arguments`'s error (``what`` names the
    function; default its name). Signature, name and docstring stay ``fn``'s."""
    params = inspect.signature(fn).parameters
    if any(p.kind is p.VAR_KEYWORD for p in params.values()):
        return fn
    names = frozenset(params)
    label = what or fn.__name__

    if inspect.iscoroutinefunction(fn):  # stays a coroutine function (inspect and asyncio see one)

        @functools.wraps(fn)
        async def call_async(*args: Any, **kwargs: Any) -> Any:
            try:
                coroutine = fn(*args, **kwargs)
            except TypeError:
                unknown = [k for k in kwargs if k not in names]
                if unknown:
                    raise unexpected_arguments(label, unknown) from None
                raise
            return await coroutine

        return call_async  # type: ignore[return-value]

    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except TypeError:
            unknown = [k for k in kwargs if k not in names]
            if unknown:
                raise unexpected_arguments(label, unknown) from None
            raise

    return call  # type: ignore[return-value]
