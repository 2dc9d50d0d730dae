"""The leak finder: tensors dropped without dispose() are reported with where they were made."""

from __future__ import annotations

import gc

import pytest

import ndflow as nf


@pytest.fixture
def tracking():
    nf.env().set("TRACK_LEAKS", True)
    yield
    nf.env().set("TRACK_LEAKS", False)


def _leak_one():
    nf.ones([2, 3])  # the leaked tensor: this line must be reported
    return None


LEAK_LINE = _leak_one.__code__.co_firstlineno + 1


def _collect_leaked_data():
    """Tests leak on purpose; free the data afterwards so the suite's memory check stays exact."""
    nf.env().set("DISPOSE_UNREACHABLE", True)
    gc.collect()
    nf.memory()
    nf.env().set("DISPOSE_UNREACHABLE", False)


def test_leak_is_reported_with_its_line(tracking):
    before = len(nf.leaks())
    _leak_one()
    reports = nf.leaks()[before:]
    nf.env().set("DISPOSE_UNREACHABLE", True)
    assert len(reports) == 1
    r = reports[0]
    assert r.site.endswith(f"test_leaks.py:{LEAK_LINE}")
    assert (r.shape, r.dtype, r.bytes, r.alive) == ((2, 3), "float32", 24, False)
    nf.env().set("DISPOSE_UNREACHABLE", False)


def test_leaked_data_is_released_with_dispose_unreachable(tracking):
    nf.env().set("DISPOSE_UNREACHABLE", True)
    before = nf.memory()
    _leak_one()
    gc.collect()
    after = nf.memory()
    nf.env().set("DISPOSE_UNREACHABLE", False)
    assert (after.num_tensors, after.num_bytes) == (before.num_tensors, before.num_bytes)


def test_tidy_results_kept_and_disposed_tensors_are_not_leaks(tracking):
    before = len(nf.leaks())
    y = nf.tidy(lambda: nf.ones([2]) + 1)  # intermediates disposed by tidy, y returned
    k = nf.keep(nf.ones([3]))  # kept: meant to outlive scopes, never reported
    d = nf.ones([4])
    d.dispose()
    del d
    assert nf.leaks()[before:] == []
    alive = {r.tensor_id for r in nf.leaks(include_alive=True) if r.alive}
    assert y.id in alive and k.id not in alive
    nf.dispose([y, k])


def test_expect_no_leaks_raises_with_the_report():
    with pytest.raises(nf.LeakError, match=rf"test_leaks.py:{LEAK_LINE}: tensor \d+ float32\[2, 3\] 24 bytes"):
        with nf.expect_no_leaks():
            _leak_one()
    _collect_leaked_data()


def test_expect_no_leaks_passes_a_clean_block():
    with nf.expect_no_leaks():
        y = nf.tidy(lambda: nf.square(nf.ones([2])))
        y.dispose()


def test_leaks_needs_tracking():
    with pytest.raises(RuntimeError, match="TRACK_LEAKS"):
        nf.leaks()


def test_debug_mode_tracks_leaks():
    nf.env().set("DEBUG", True)
    try:
        before = len(nf.leaks())
        _leak_one()
        assert len(nf.leaks()) == before + 1
    finally:
        nf.env().set("DEBUG", False)
    _collect_leaked_data()
