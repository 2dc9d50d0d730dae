"""Scopes per thread (docs/threads.md): one thread's tidy, keep and start_scope/end_scope never touch another
thread's tensors; counters stay exact when many threads create and dispose tensors."""

from __future__ import annotations

import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.engine import ENGINE


def num_tensors() -> int:
    return nf.memory().num_tensors


def run_threads(targets: list[Callable[[], Any]], timeout: float = 30.0) -> list[BaseException]:
    """Run each target in its own thread; the exceptions they raised."""
    errors: list[BaseException] = []

    def wrap(fn: Callable[[], Any]) -> Callable[[], None]:
        def run() -> None:
            try:
                fn()
            except BaseException as exc:  # reported to the test
                errors.append(exc)

        return run

    threads = [threading.Thread(target=wrap(fn)) for fn in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
        assert not t.is_alive(), "a worker thread hung"
    return errors


def tidy_loop(stop: threading.Event, started: threading.Event) -> Callable[[], None]:
    def loop() -> None:
        while not stop.is_set():
            r = nf.tidy(lambda: nf.mul(nf.ones([16, 16]), 2.0))
            r.dispose()
            started.set()

    return loop


@pytest.fixture(autouse=True)
def frequent_switches():
    """Switch threads every 10 us (not every 5 ms), so that the threads' calls interleave."""
    previous = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(previous)


def test_background_tidy_does_not_dispose_main_thread_tensors():
    start = num_tensors()
    stop, started = threading.Event(), threading.Event()
    worker = threading.Thread(target=tidy_loop(stop, started))
    worker.start()
    assert started.wait(10)
    t = nf.ones([16, 16])
    errors = 0
    try:
        for _ in range(200):
            try:
                y = nf.add(t, 1)
                time.sleep(0)  # let the other thread run while y lives
                assert y.data_sync().flat[0] == 2.0
                y.dispose()
            except nf.DisposedTensorError:
                errors += 1
    finally:
        stop.set()
        worker.join(10)
        t.dispose()
    assert errors == 0
    assert num_tensors() == start


def test_main_thread_tidy_does_not_dispose_worker_tensors():
    start = num_tensors()
    stop = threading.Event()
    results: list[float] = []

    def plain_adds() -> None:
        t = nf.ones([16, 16])
        try:
            for _ in range(200):
                y = nf.add(t, 1)
                time.sleep(0)
                results.append(float(y.data_sync().flat[0]))
                y.dispose()
        finally:
            t.dispose()
            stop.set()

    worker = threading.Thread(target=plain_adds)
    worker.start()
    while not stop.is_set():
        nf.tidy(lambda: nf.mul(nf.ones([16, 16]), 2.0)).dispose()
    worker.join(10)
    assert results == [2.0] * 200
    assert num_tensors() == start


def test_scopes_keep_and_dispose_are_per_thread():
    start = num_tensors()
    inside, main_done = threading.Event(), threading.Event()
    seen: dict[str, Any] = {}

    def worker() -> None:
        ENGINE.start_scope("worker")
        a = nf.ones([3])
        b = nf.keep(nf.ones([3]))
        seen["worker_scope"] = ENGINE.active_scope
        inside.set()
        main_done.wait(10)
        ENGINE.end_scope(None)
        seen["a"], seen["b"] = a.is_disposed, b.is_disposed
        seen["after"] = (ENGINE.active_scope, list(ENGINE._scopes))
        b.dispose()

    thread = threading.Thread(target=worker)
    thread.start()
    inside.wait(10)
    # The worker is inside its scope: the main thread is not.
    assert ENGINE.active_scope is None and ENGINE._scopes == []
    m = nf.ones([3])
    assert m.scope_id == 0
    main_done.set()
    thread.join(10)
    assert seen["worker_scope"] is not None
    assert seen["a"] is True and seen["b"] is False
    assert seen["after"] == (None, [])
    assert not m.is_disposed
    m.dispose()
    assert num_tensors() == start


def test_nested_tidy_in_two_threads():
    start = num_tensors()
    barrier = threading.Barrier(2, timeout=10)
    out: dict[int, np.ndarray] = {}

    def work(k: int) -> Callable[[], None]:
        def inner() -> nf.Tensor:
            barrier.wait()  # both threads are two scopes deep here
            y = nf.mul(nf.ones([4]), float(k))
            barrier.wait()
            return y

        def outer() -> nf.Tensor:
            x = nf.add(nf.ones([4]), 1.0)
            barrier.wait()
            y = nf.tidy(inner)
            barrier.wait()  # the other thread's inner tidy has ended: x and y are alive
            return nf.add(x, y)

        def run() -> None:
            r = nf.tidy(outer)
            out[k] = r.data_sync().copy()
            r.dispose()

        return run

    assert run_threads([work(1), work(2)]) == []
    np.testing.assert_array_equal(out[1], np.full(4, 3.0, np.float32))
    np.testing.assert_array_equal(out[2], np.full(4, 4.0, np.float32))
    assert num_tensors() == start


def mixed_calls(seed: int, n: int = 200) -> list[float]:
    """n calls mixing tidy, plain ops and data_sync reads; what they read."""
    base = nf.tensor(np.arange(16, dtype=np.float32) + seed)
    got: list[float] = []
    try:
        for k in range(n):
            if k % 3 == 0:
                r = nf.tidy(lambda k=k: nf.sum(nf.add(nf.mul(base, 2.0), float(k))))
                got.append(float(r.data_sync()[0]))
                r.dispose()
            elif k % 3 == 1:
                y = nf.sub(base, float(k))
                z = nf.relu(y)
                got.append(float(z.data_sync().sum()))
                nf.dispose([y, z])
            else:
                got.append(float(base.data_sync()[k % 16]))
    finally:
        base.dispose()
    return got


def test_eight_threads_of_mixed_calls_match_single_threaded():
    start = nf.memory()
    expected = {i: mixed_calls(i) for i in range(8)}
    got: dict[int, list[float]] = {}

    def work(i: int) -> Callable[[], None]:
        def run() -> None:
            got[i] = mixed_calls(i)

        return run

    assert run_threads([work(i) for i in range(8)]) == []
    assert got == expected
    end = nf.memory()
    assert (end.num_tensors, end.num_data_buffers, end.num_bytes) == (
        start.num_tensors,
        start.num_data_buffers,
        start.num_bytes,
    )


def test_thread_ending_inside_a_scope_does_not_break_others():
    start = num_tensors()
    left: list[nf.Tensor] = []

    def abandon() -> None:
        ENGINE.start_scope("abandoned")
        left.append(nf.ones([2]))  # never ended: the scope dies with its thread

    assert run_threads([abandon]) == []
    assert ENGINE.active_scope is None and ENGINE._scopes == []
    r = nf.tidy(lambda: nf.add(nf.ones([2]), 1.0))
    np.testing.assert_array_equal(r.data_sync(), [2.0, 2.0])
    r.dispose()
    assert run_threads([lambda: nf.tidy(lambda: nf.ones([2])).dispose()]) == []
    assert not left[0].is_disposed
    left[0].dispose()
    assert num_tensors() == start


def test_training_in_one_thread_while_others_predict():
    """fit in one thread while 4 threads predict with the same model: the predictions are not recorded on the
    training thread's tape (they hold no gradient memory), and a second thread that starts computing gradients
    meanwhile gets a clear error instead of sharing the tape."""
    model = nf.sequential()
    model.add(nf.layers.dense(units=8, activation="relu", input_shape=[4]))
    model.add(nf.layers.dense(units=1))
    model.compile(optimizer="sgd", loss="meanSquaredError")
    rng = np.random.default_rng(5)
    xs, ys = nf.tensor(rng.random((64, 4), dtype=np.float32)), nf.tensor(rng.random((64, 1), dtype=np.float32))
    probe = nf.tensor(rng.random((3, 4), dtype=np.float32))
    errors: list[str] = []
    done = threading.Event()

    def predict_loop() -> None:
        while not done.is_set():
            try:
                out = model.predict(probe)
                assert out.shape == (3, 1)
                out.dispose()
            except Exception:  # noqa: BLE001  (reported by the test)
                errors.append(traceback.format_exc())

    readers = [threading.Thread(target=predict_loop) for _ in range(4)]
    try:
        start = nf.memory().num_tensors
        for t in readers:
            t.start()
        history = model.fit(xs, ys, epochs=3, batch_size=16, verbose=0)
        done.set()
        for t in readers:
            t.join()
        assert errors == [] and len(history.history["loss"]) == 3
        assert nf.memory().num_tensors == start

        # a tape held by another thread: computing gradients here is refused, clearly
        holding, release = threading.Event(), threading.Event()

        def hold_tape() -> None:
            def f(x):
                holding.set()
                release.wait(5)
                return nf.sum(nf.square(x))

            nf.dispose(nf.grad(f)(probe))

        holder = threading.Thread(target=hold_tape)
        holder.start()
        holding.wait(5)
        with pytest.raises(RuntimeError, match="one thread at a time"):
            nf.grad(lambda x: nf.sum(x))(probe)
        release.set()
        holder.join()
        nf.dispose(nf.grad(lambda x: nf.sum(x))(probe))  # free again once the other thread is done
    finally:
        done.set()
        nf.dispose([xs, ys, probe])
        model.dispose()
