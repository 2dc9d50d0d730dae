"""TF.js's calling conventions on model methods: a config dict in place of the keyword arguments, and a clear
error for a camelCase keyword.

TF.js passes options as one object: ``model.fit(x, y, {batchSize: 8, epochs: 2})``. Decorating a method with
``@tfjs_config('batch_size')`` accepts a dict (TF.js's camelCase keys or ndflow's snake_case names) in that
parameter's place, spreads it into the keyword arguments after it, and refuses an unknown key by name. Any
keyword the method does not take raises a ``TypeError`` naming the method, with the snake_case spelling when
the keyword is camelCase (``fit: unexpected argument(s) 'batchSize' (use 'batch_size')``), as the layer
constructors do for ``inputShape``. The decorated method keeps its real signature for ``help()`` and editors.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from typing import Any, ParamSpec, TypeVar

from ...core.arguments import unexpected_arguments
from ..naming import to_snake_case

__all__ = ["merge_tfjs_config", "tfjs_config", "unexpected_arguments"]

P = ParamSpec("P")
R = TypeVar("R")


def merge_tfjs_config(
    what: str, config: Mapping[str, Any], given: dict[str, Any], allowed: list[str]
) -> dict[str, Any]:
    """``given`` with the entries of the TF.js config ``config`` added under snake_case names; a key that is not
    one of ``allowed`` raises ``ValueError``, a key also given as a keyword raises ``TypeError``."""
    out = dict(given)
    for key, value in config.items():
        name = key if key in allowed else to_snake_case(str(key))
        if name not in allowed:
            raise ValueError(
                f"{what}: unknown config key {key!r}; expected some of "
                f"{sorted(_camel(n) for n in allowed)} (or their snake_case names)"
            )
        if name in out:
            raise TypeError(f"{what}: {name!r} is given both in the config dict and as a keyword argument")
        out[name] = value
    return out


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


def tfjs_config(slot: str | None, what: str | None = None) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorator: accept a TF.js config dict in parameter ``slot`` (None: no dict), and refuse unknown keywords
    with the camelCase hint; ``what`` names the method in errors (default: its name)."""

    def wrap(fn: Callable[P, R]) -> Callable[P, R]:
        params = list(inspect.signature(fn).parameters.values())
        names = {p.name for p in params if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)}
        positional = [p.name for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        index = positional.index(slot) if slot is not None else -1
        allowed = [n for n in positional[index:] if not n.startswith("_")] if slot is not None else []
        allowed += [p.name for p in params if p.kind == p.KEYWORD_ONLY and not p.name.startswith("_")]
        label = what or fn.__name__

        def prepare(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
            unknown = [k for k in kwargs if k not in names]
            if unknown:
                raise unexpected_arguments(label, unknown)
            if slot is None:
                return args, kwargs
            if len(args) > index and isinstance(args[index], Mapping):
                if len(args) > index + 1:
                    raise TypeError(f"{label}: a config dict must be the last positional argument")
                return args[:index], merge_tfjs_config(label, args[index], kwargs, allowed)
            if isinstance(kwargs.get(slot), Mapping):
                config = kwargs.pop(slot)
                return args, merge_tfjs_config(label, config, kwargs, allowed)
            return args, kwargs

        if inspect.iscoroutinefunction(fn):

            @functools.wraps(fn)
            async def run_async(*args: Any, **kwargs: Any) -> Any:
                args, kwargs = prepare(args, kwargs)
                return await fn(*args, **kwargs)  # type: ignore[misc]

            return run_async  # type: ignore[return-value]

        @functools.wraps(fn)
        def run(*args: Any, **kwargs: Any) -> Any:
            args, kwargs = prepare(args, kwargs)
            return fn(*args, **kwargs)

        return run  # type: ignore[return-value]

    return wrap
