"""Packed weights kept between calls (``csrc/pack_cache.c``) and the pool held through a model's run
(``native_split.hold``, ``Backend.hold_workers``).

A right matrix in kept memory (``native_split.keep_constant``: a graph program's weights) is packed for the AVX-512
kernel once and the copy reused: the result must be the bits of the same product packed per call. Other matrices
are never kept, and freeing a kept array forgets its copies before its memory can be reused."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu.native import native_split
from ndflow.core.engine import ENGINE

RNG = np.random.default_rng(5)
MODULE = native_split._load()
needs_kernel = pytest.mark.skipif(
    MODULE is None or MODULE.avx512_k_max() == 0,
    reason="kept packs need the C module's AVX-512 kernel (a CPU with AVX-512F)",
)
needs_module = pytest.mark.skipif(MODULE is None, reason=f"native split unavailable: {native_split.status()}")


def _floats(*shape) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _product(a: np.ndarray, b: np.ndarray, threads: int = 1) -> np.ndarray:
    out = np.full((a.shape[0], b.shape[1]), np.nan, np.float32)
    MODULE.matmul(a, b, out, None, None, 0, threads, max(1, a.shape[0] // max(1, threads)))
    return out


@pytest.fixture
def empty_cache():
    MODULE.packs(True)
    yield
    MODULE.packs(True)


@needs_kernel
@pytest.mark.parametrize("threads", [1, 2])
def test_a_kept_matrix_is_packed_once_with_the_same_bits(empty_cache, threads):
    a, b = _floats(64, 96), _floats(96, 80)
    fresh = _product(a, b, threads)
    assert native_split.keep_constant(b)
    first = _product(a, b, threads)
    entries, size, _ = MODULE.packs()
    assert entries == 1 and size >= 96 * 80 * 4
    again = _product(a, b, threads)
    assert MODULE.packs()[0] == 1  # the same entry, not a second one
    np.testing.assert_array_equal(first, fresh)
    np.testing.assert_array_equal(again, fresh)


@needs_kernel
def test_a_matrix_outside_kept_memory_is_not_kept(empty_cache):
    a, b = _floats(32, 64), _floats(64, 48)
    b.flags.writeable = False  # read-only is not enough: only registered memory is kept
    _product(a, b)
    assert MODULE.packs()[0] == 0
    assert not native_split.keep_constant(_floats(4, 4).astype(np.float64))  # not float32: refused


@needs_kernel
def test_freeing_a_kept_array_forgets_its_copies(empty_cache):
    a, b = _floats(32, 64), _floats(64, 48)
    regions = MODULE.packs()[2]
    native_split.keep_constant(b)
    _product(a, b)
    assert MODULE.packs()[0] == 1 and MODULE.packs()[2] == regions + 1
    del b  # the finalizer forgets the region and its copy before the memory can be reused
    assert MODULE.packs()[0] == 0 and MODULE.packs()[2] == regions
    c = _floats(64, 48)  # whatever address it gets, nothing stale is found for it
    np.testing.assert_allclose(_product(a, c), a @ c, rtol=1e-4, atol=1e-4)


@needs_kernel
def test_a_view_inside_a_kept_array_is_packed_from_its_own_values(empty_cache):
    a, big = _floats(32, 64), _floats(2, 64, 48)
    native_split.keep_constant(big)
    for i in (0, 1):
        np.testing.assert_array_equal(_product(a, big[i]), _product(a, big[i].copy()))
    assert MODULE.packs()[0] == 2


@needs_kernel
def test_a_compiled_models_weights_are_kept_read_only_and_it_still_trains(empty_cache):
    """A layers model's predict runs the graph program (LAYERS_COMPILE) whose weights are marked read-only: the
    same outputs as the eager path, packed copies kept, and training after it still updates the weights."""
    model = nf.sequential()
    model.add(nf.layers.dense(units=64, input_shape=[96], activation="relu"))
    model.add(nf.layers.dense(units=8))
    model.compile(optimizer="sgd", loss="meanSquaredError")
    x, y = nf.tensor(_floats(16, 96)), nf.tensor(_floats(16, 8))
    outs = [model.predict(x) for _ in range(3)]  # eager, then traced, then compiled
    try:
        if ENGINE.backend.name != "cpu":
            pytest.skip("the cpu backend")
        for o in outs[1:]:
            np.testing.assert_allclose(o.data_sync(), outs[0].data_sync(), rtol=1e-5, atol=1e-5)
        kernel = model.layers[0].weights[0].val
        assert not ENGINE.backend.values(kernel.data_id).flags.writeable
        assert MODULE.packs()[0] >= 1
        before = kernel.data_sync().copy()
        model.fit(x, y, epochs=1, batch_size=16, verbose=0)
        after = model.layers[0].weights[0].val.data_sync()
        assert not np.array_equal(before, after)
    finally:
        for t in (*outs, x, y):
            t.dispose()
        model.dispose()


@needs_module
def test_mark_constant_makes_the_stored_array_read_only():
    if ENGINE.backend.name != "cpu":
        pytest.skip("the cpu backend's store")
    t = nf.tensor(_floats(4, 4))
    try:
        ENGINE.backend.mark_constant(t.data_id)
        assert not ENGINE.backend.values(t.data_id).flags.writeable
        u = nf.add(t, 1)  # kernels read it as before
        np.testing.assert_array_equal(u.data_sync(), t.data_sync() + 1)
        u.dispose()
    finally:
        t.dispose()


@needs_module
def test_hold_keeps_count_and_release_is_idempotent():
    release = native_split.hold(2)
    if release is None:
        pytest.skip("workers not available")
    try:
        assert MODULE.workers() >= 1
        assert MODULE.hold(1, 2) == 2  # a second holder
        assert MODULE.hold(-1, 2) == 1
    finally:
        release()
        release()  # a second call does nothing
    assert MODULE.hold(1, 2) == 1
    assert MODULE.hold(-1, 2) == 0
    assert native_split.hold(1) is None  # one thread: nothing to hold


@needs_module
def test_hold_refuses_a_bad_delta():
    with pytest.raises(ValueError, match="delta"):
        MODULE.hold(2, 2)


@needs_module
def test_products_during_holds_from_several_threads_are_right():
    a, b = _floats(256, 128), _floats(128, 96)
    want = a @ b
    errors: list[BaseException] = []

    def worker() -> None:
        try:
            release = native_split.hold(2)
            try:
                for _ in range(20):
                    out = np.empty((256, 96), np.float32)
                    assert native_split.matmul_into(a, b, out, 2)
                    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3)
            finally:
                if release is not None:
                    release()
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert MODULE.hold(1, 1) == 1 and MODULE.hold(-1, 1) == 0  # every hold released
