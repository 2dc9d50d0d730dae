"""benchmarks/peers.py's pure parts: the command line, output matching by shape, the tables and the doc rewrite.

None of this needs onnxruntime or OpenVINO (the script imports them only when it times them).
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
try:
    import peers
finally:
    sys.path.remove(str(ROOT / "benchmarks"))


def test_defaults() -> None:
    args = peers.parse_args(["some/dir"])
    assert args.peers_dir == Path("some/dir")
    assert args.threads == [1, 2] and args.runs == 20 and args.warmup == 3
    assert args.models is None and not args.busy and not args.write_doc


def test_options() -> None:
    args = peers.parse_args(["d", "--threads", "2,4", "--runs", "5", "--warmup", "0", "--models", "emotion, facemesh"])
    assert args.threads == [2, 4] and args.runs == 5 and args.warmup == 0
    assert args.models == ["emotion", "facemesh"]
    assert peers.parse_args(["d", "--busy", "--write-doc"]).busy


@pytest.mark.parametrize("argv", [["d", "--threads", "one"], ["d", "--threads", "0,2"], ["d", "--runs", "0"], []])
def test_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        peers.parse_args(argv)
    assert "usage" in capsys.readouterr().err


def test_model_names(tmp_path: Path) -> None:
    (tmp_path / "onnx").mkdir()
    for name in ("zeta", "emotion", "blazeface-back"):
        (tmp_path / "onnx" / f"{name}.onnx").write_bytes(b"")
    assert peers.model_names(tmp_path, None) == ["blazeface-back", "emotion", "zeta"]
    assert peers.model_names(tmp_path, ["emotion"]) == ["emotion"]
    with pytest.raises(SystemExit, match="no ONNX file for facemesh"):
        peers.model_names(tmp_path, ["facemesh"])


def test_missing_folder_skips(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert peers.main([str(tmp_path / "absent")]) == 0
    assert "skipped" in capsys.readouterr().out


def test_match_outputs_by_shape_and_name() -> None:
    a, b = np.arange(6, dtype=np.float32).reshape(1, 6), np.ones((1, 1), np.float32)
    c = np.full((1, 6), 7, np.float32)
    # different order, and two outputs of one shape: the names decide
    err, pairs = peers.match_outputs([a, b, c], [c, b, a], ["x", "y", "z"], ["z", "y", "x"])
    assert err == 0.0 and pairs == [2, 1, 0]
    # no names: the closest of the same shape
    err, pairs = peers.match_outputs([c, a], [a + 1e-5, c])
    assert pairs == [1, 0] and 0 < err < 1e-5
    # nothing of that shape left
    err, pairs = peers.match_outputs([a, a], [a])
    assert pairs == [0, None] and err == float("inf")


def test_rel_error() -> None:
    want = np.array([2.0, -4.0], np.float32)
    assert peers.rel_error(want + np.float32(0.004), want) == pytest.approx(1e-3, rel=1e-3)
    assert peers.rel_error(want, want[:1]) == float("inf")
    assert peers.rel_error(np.zeros(0), np.zeros(0)) == 0.0
    tiny = np.array([1.6e-5], np.float32)  # below 1 in magnitude: the difference itself
    assert peers.rel_error(tiny + np.float32(3e-8), tiny) == pytest.approx(3e-8, rel=1e-2)


def _result() -> peers.ModelResult:
    r = peers.ModelResult("emotion", error=2e-7)
    for runtime, one, two in ((peers.NDFLOW, 2.0, 1.0), (peers.ORT, 4.0, 2.0), (peers.OV, 1.0, 0.8)):
        r.times[runtime, 1, False] = [one, one * 3, one]
        r.times[runtime, 2, False] = [two]
        r.times[runtime, 2, True] = [two * 2]
    return r


def test_tables() -> None:
    text = peers.format_tables([_result()], [1, 2], busy=True)
    lines = text.splitlines()
    assert lines[0].startswith("| model | threads | ndflow cpu ms | onnxruntime ms | OpenVINO f32 ms |")
    assert "OpenVINO bf16" not in text
    # medians, then ndflow / onnxruntime, / OpenVINO, / the faster peer
    assert "| emotion | 1 | 2.00 | 4.00 | 1.00 | 0.50 | 2.00 | 2.00 |" in lines
    assert "| emotion | 2 | 1.00 | 2.00 | 0.80 | 0.50 | 1.25 | 1.25 |" in lines
    assert "| emotion | 2.00 | 2.00 | 1.25 | 2.0e-07 |" in lines  # speed-ups and the error
    assert "| emotion | 2.00 | 4.00 | 1.60 | 2.00 | 2.00 | 2.00 | 1.25 |" in lines  # next to a busy core
    assert len(text.split("\n\n")) == 3


def test_tables_bf16_and_missing() -> None:
    r = _result()
    r.times[peers.OV_BF16, 1, False] = [0.5]
    del r.times[peers.ORT, 2, False]
    r.error = 0.5
    text = peers.format_tables([r], [1, 2])
    assert "OpenVINO bf16 ms" in text
    assert "| emotion | 1 | 2.00 | 4.00 | 1.00 | 0.50 | 0.50 | 2.00 | 2.00 |" in text
    assert "| emotion | 2 | 1.00 | - | 0.80 | - | - | 1.25 | 1.25 |" in text
    assert "5.0e-01 (**no**)" in text
    assert "next to" not in text and len(text.split("\n\n")) == 2


def test_summary() -> None:
    lines = peers.summary([_result()], [1, 2])
    assert lines[0].startswith("1 thread(s): ndflow / faster peer geometric mean 2.00x over 1 models")
    assert lines[-1] == "outputs within 0.001 of onnxruntime's on 1/1 models"


def test_write_doc(tmp_path: Path) -> None:
    doc = tmp_path / "performance.md"
    doc.write_text(f"# P\n\n{peers.BEGIN}\nold\n{peers.END}\n\nafter\n")
    peers.write_doc("new table", doc)
    assert doc.read_text() == f"# P\n\n{peers.BEGIN}\nnew table\n{peers.END}\n\nafter\n"
    doc.write_text("no markers\n")
    with pytest.raises(SystemExit, match="no <!-- peers table -->"):
        peers.write_doc("x", doc)
