"""Spans: the op, graph node or layer around the kernels that a profile records, for its trace
(core/chrome_trace.py).

Callers mark a span only while something records them: ``if SPANS.on:`` is the one check they pay otherwise.
While a profile runs (``nf.profile``, debug mode's trace), each span opened is appended to every recording
profile's ``spans`` with the time it opened (``time.perf_counter``) and the calling thread, and gets its end
time when it closes. Spans nest as calls do: per thread, a span opened inside another closes first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from threading import get_ident
from typing import Any


@dataclass
class Span:
    """One op, graph node or layer seen while profiling: ``kind`` ("op", "node", "layer"), its name, when it
    opened and closed (``time.perf_counter`` seconds; ``end`` None while open), its thread and details."""

    kind: str
    name: str
    start: float
    thread: int
    args: dict[str, Any] = field(default_factory=dict)
    end: float | None = None


class _Switch:
    """Whether spans are recorded now (``on``), and the profiles that record them."""

    __slots__ = ("on", "recorders", "open_scopes")

    def __init__(self) -> None:
        self.on = False
        self.recorders: list[Any] = []
        self.open_scopes: dict[int, Span] = {}


#: The switch that span markers check.
SPANS = _Switch()


def set_recorders(recorders: list[Any]) -> None:
    """Record spans into ``recorders`` (objects with a ``spans`` list; the engine's active profiles), or stop
    when it is empty."""
    SPANS.recorders = recorders
    SPANS.on = bool(recorders)
    if not SPANS.on:
        SPANS.open_scopes.clear()


def open_span(kind: str, name: str, args: dict[str, Any] | None = None) -> Span:
    """Open a span now, in every recording profile."""
    span = Span(kind, name, time.perf_counter(), get_ident(), args or {})
    for recorder in SPANS.recorders:
        recorder.spans.append(span)
    return span


def close_span(span: Span) -> None:
    """Close a span now."""
    if span.end is None:
        span.end = time.perf_counter()


class _SpanBlock:
    __slots__ = ("kind", "name", "args", "span")

    def __init__(self, kind: str, name: str, args: dict[str, Any] | None) -> None:
        self.kind, self.name, self.args, self.span = kind, name, args, None

    def __enter__(self) -> Span | None:
        if SPANS.on:
            self.span = open_span(self.kind, self.name, self.args)
        return self.span

    def __exit__(self, *exc: object) -> None:
        if self.span is not None:
            close_span(self.span)


class _NoSpan:
    __slots__ = ()

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


_NO_SPAN = _NoSpan()


def span(kind: str, name: str, args: dict[str, Any] | None = None) -> _SpanBlock | _NoSpan:
    """``with span("layer", name):`` marks a span while profiles record them; a shared no-op block otherwise."""
    return _SpanBlock(kind, name, args) if SPANS.on else _NO_SPAN


def span_of(kind: str, obj: Any) -> _SpanBlock | _NoSpan:
    """``with span_of("layer", layer):``: a span named ``obj.name`` whose details give its class (see :func:`span`)."""
    return _SpanBlock(kind, obj.name, {"class": type(obj).__name__}) if SPANS.on else _NO_SPAN


def spanned(kind: str, name: str, fn: Callable[..., Any], args: dict[str, Any] | None = None) -> Callable[..., Any]:
    """``fn`` wrapped in a span (callers check ``SPANS.on`` first)."""

    def run(*a: Any, **kw: Any) -> Any:
        s = open_span(kind, name, args)
        try:
            return fn(*a, **kw)
        finally:
            close_span(s)

    return run


def open_scope_span(scope_id: int, name: str) -> None:
    """A named engine scope (``nf.op``, ``nf.tidy(name, fn)``) opened: its span, closed by :func:`close_scope_span`."""
    SPANS.open_scopes[scope_id] = open_span("op", name)


def close_scope_span(scope_id: int) -> None:
    """A named engine scope closed."""
    s = SPANS.open_scopes.pop(scope_id, None)
    if s is not None:
        close_span(s)
