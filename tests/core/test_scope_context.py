"""``with scope() as s:``: tidy as a with block, per thread."""

from __future__ import annotations

import threading

import pytest

import ndflow as nf
from ndflow.core.engine import ENGINE
from ndflow.core.scope_context import scope


def test_block_disposes_what_it_made_except_kept():
    x = nf.ones([2])
    with scope() as s:
        a = x * 2
        b = s.keep(a + 1)
        pair = s.keep([a * 3, {"k": a * 4}])
    assert a.is_disposed and not b.is_disposed and not x.is_disposed
    assert not pair[0].is_disposed and not pair[1]["k"].is_disposed
    assert b.tolist() == [3.0, 3.0]
    nf.dispose([x, b, pair])


def test_kept_tensors_join_the_enclosing_scope():
    x = nf.ones([2])

    def step():
        with scope() as s:
            c = x * 3
            d = s.keep(c * 2)
        assert not d.is_disposed
        e = d + 0  # made in tidy's scope
        return e

    r = nf.tidy(step)
    assert r.tolist() == [6.0, 6.0]
    with scope():
        with scope() as inner:
            kept = inner.keep(x * 5)
        assert not kept.is_disposed
    assert kept.is_disposed  # the outer block freed what the inner one handed it
    nf.dispose([x, r])


def test_exception_still_disposes_and_propagates():
    x = nf.ones([2])
    before = nf.memory().num_tensors
    with pytest.raises(KeyError):
        with scope() as s:
            e = x * 5
            kept = s.keep(x * 6)
            raise KeyError("boom")
    assert e.is_disposed and not kept.is_disposed
    assert nf.memory().num_tensors == before + 1
    nf.dispose([x, kept])


def test_nf_keep_survives_every_scope():
    with scope():
        k = nf.keep(nf.ones([1]))
    assert not k.is_disposed
    k.dispose()


def test_named_scope_and_reuse_errors():
    s = scope("block")
    with s:
        assert ENGINE.active_scope.name == "block"
    with pytest.raises(RuntimeError, match="inside the with block"):
        s.keep(None)
    with pytest.raises(TypeError, match="name"):
        scope(3)  # type: ignore[arg-type]
    with scope() as s2:
        with pytest.raises(RuntimeError, match="already open"):
            s2.__enter__()
        with pytest.raises(TypeError, match="keep"):
            s2.keep(5)


def test_unended_inner_scope_is_ended_and_reported():
    depth = len(ENGINE._scopes)
    with pytest.raises(RuntimeError, match="not ended"):
        with scope():
            ENGINE.start_scope("forgotten")
            t = nf.ones([1])
    assert t.is_disposed and len(ENGINE._scopes) == depth


def test_scopes_are_per_thread():
    x = nf.ones([2])
    inside = threading.Event()
    release = threading.Event()
    made: dict[str, nf.Tensor] = {}

    def worker():
        with scope() as s:
            made["tmp"] = x * 2
            made["kept"] = s.keep(x * 3)
            inside.set()
            release.wait(5)

    thread = threading.Thread(target=worker)
    with scope():
        mine = x + 1
        thread.start()
        inside.wait(5)
        other = x * 7  # made by this thread while the worker's block is open
        release.set()
        thread.join()
        assert made["tmp"].is_disposed and not made["kept"].is_disposed and not other.is_disposed
    assert mine.is_disposed and other.is_disposed and not made["kept"].is_disposed
    nf.dispose([x, made["kept"]])


def test_exit_in_another_thread_is_refused():
    s = scope()
    s.__enter__()
    errors: list[BaseException] = []

    def finish():
        try:
            s.__exit__(None, None, None)
        except RuntimeError as exc:
            errors.append(exc)

    thread = threading.Thread(target=finish)
    thread.start()
    thread.join()
    assert errors and "thread" in str(errors[0])
    ENGINE.end_scope(None)
