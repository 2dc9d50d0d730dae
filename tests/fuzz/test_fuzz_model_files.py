"""Seeded model-file fuzzing (issue 24): 200 mutations of a small layers model and the ``basic`` graph model
fixture; every load succeeds or raises ValueError/TypeError/NotImplementedError or an OSError naming the file,
reads nothing outside the model's folder, does not hang, and frees every tensor it made. The longer run with
crash detection is tools/fuzz.py; op-argument mutations are in tests/ops/test_malformed_calls.py."""

from __future__ import annotations

import collections
import os
import time
from pathlib import Path

import fuzz_models as fm
import pytest

import ndflow as nf


def test_seeded_model_file_mutations(tmp_path):
    start = time.perf_counter()
    results = [fm.run_case(case, timeout_s=5.0) for case in fm.cases(24, 200, tmp_path)]
    counts = collections.Counter(r["outcome"] for r in results)
    bad = [f"#{r['index']} {r['kind']} {r['what']}: {r['outcome']}: {r['detail']}" for r in results
           if r["outcome"] != "clean"]  # fmt: skip
    assert not bad, f"{len(bad)} of 200 loads were not clean ({dict(counts)}):\n" + "\n".join(bad)
    whats = " ".join(r["what"] for r in results)
    for needle in ("traversal", "absolute", "symlink", "fifo", "deep-nest", "truncate", "extend", "shape of",
                   "delete", "replace", "text brackets"):  # fmt: skip
        assert needle in whats, f"the seeded mutations never made a '{needle}' case"
    assert sum("error" in r["detail"] or ":" in r["detail"] for r in results) > 100  # most loads are refused
    assert time.perf_counter() - start < 45


def _outside_folder(tmp_path: Path) -> fm.Case:
    fm.make_bases(tmp_path)
    folder = tmp_path / "m"
    folder.mkdir()
    (folder / "link.bin").symlink_to(tmp_path / "outside.bin")
    return fm.Case(0, "layers", "control", folder, folder / "model.json")


class _Loaded:
    def dispose(self) -> None:
        pass


def test_detector_sees_a_read_through_a_symlink(tmp_path):
    case = _outside_folder(tmp_path)

    def load(c: fm.Case) -> _Loaded:
        (c.folder / "link.bin").read_bytes()
        return _Loaded()

    result = fm.run_case(case, load=load)
    assert result["outcome"] == "outside-read" and "link.bin" in result["detail"]


def test_detector_sees_os_open_of_a_relative_path_and_ignores_reads_inside(tmp_path):
    case = _outside_folder(tmp_path)
    (case.folder / "model.json").write_text("{}")

    def load(c: fm.Case) -> _Loaded:
        (c.folder / "model.json").read_text()
        os.close(os.open(str(c.folder / ".." / "outside.bin"), os.O_RDONLY))
        return _Loaded()

    assert fm.run_case(case, load=load)["outcome"] == "outside-read"
    assert fm.run_case(case, load=lambda c: (c.model_json.read_text(), _Loaded())[1])["outcome"] == "clean"


def test_a_blocked_fifo_open_is_a_hang_not_a_stuck_test(tmp_path):
    case = _outside_folder(tmp_path)
    os.mkfifo(case.folder / "fifo.bin")
    result = fm.run_case(case, timeout_s=0.2, load=lambda c: open(c.folder / "fifo.bin", "rb"))
    assert result["outcome"] == "hang"


@pytest.mark.parametrize(
    ("exc", "outcome"),
    [
        (KeyError("x"), "ugly"),
        (IndexError("x"), "ugly"),
        (RecursionError("x"), "ugly"),
        (MemoryError(), "ugly"),
        (AttributeError("x"), "ugly"),
        (OSError(5, "I/O error"), "ugly"),
        (OSError(5, "I/O error", "model.json"), "clean"),
        (ValueError("x"), "clean"),
        (NotImplementedError("x"), "clean"),
    ],
)
def test_classification(tmp_path, exc, outcome):
    case = _outside_folder(tmp_path)
    (case.folder / "model.json").write_text("{}")

    def load(c: fm.Case) -> None:
        raise exc

    assert fm.run_case(case, load=load)["outcome"] == outcome


def test_a_leak_is_reported(tmp_path):
    case = _outside_folder(tmp_path)
    kept: list[nf.Tensor] = []

    def load(c: fm.Case) -> _Loaded:
        kept.append(nf.tensor([1.0]))
        return _Loaded()

    assert fm.run_case(case, load=load)["outcome"] == "leak"
    kept[0].dispose()
