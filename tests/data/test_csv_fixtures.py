"""nf.data.csv against what real TF.js 4.22 yields for the same files (tests/fixtures/data/gen_csv.js)."""

from __future__ import annotations

import asyncio
import io
import json
import math
from pathlib import Path

import pytest

from ndflow.data.csv import CSVDataset, csv
from ndflow.data.csv_config import csv_config_from_dict

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "data" / "csv"
EXPECTED = json.loads((FIXTURES / "expected.json").read_text())
CASES = sorted(k for k in EXPECTED if k != "tfjs")
GOOD = [k for k in CASES if "error" not in EXPECTED[k]]
BAD = [k for k in CASES if "error" in EXPECTED[k]]
_SPECIAL = {"undefined": None, "NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf, "-0": -0.0}


def _decode(v):
    if isinstance(v, dict):
        if set(v) == {"$"}:
            return _SPECIAL[v["$"]]
        return {k: _decode(x) for k, x in v.items()}
    return v


def _same(got, want) -> bool:
    """Equal values of equal types (TF.js numbers are floats here, ints for int32/bool), -0 kept apart from 0."""
    if isinstance(want, dict):
        return isinstance(got, dict) and list(got) == list(want) and all(_same(got[k], want[k]) for k in want)
    if isinstance(want, (int, float)) and not isinstance(want, bool):
        if not isinstance(got, (int, float)) or isinstance(got, bool):
            return False
        return got == want and math.copysign(1, got) == math.copysign(1, want)
    return got == want and type(got) is type(want)


def _sources(name: str):
    path = FIXTURES / f"{name}.csv"
    data = path.read_bytes()
    return {
        "path": str(path),
        "pathlib": path,
        "file_url": "file://" + str(path),
        "bytes": data,
        "file_like": io.BytesIO(data),
    }


def test_fixtures_come_from_tfjs_4_22():
    assert EXPECTED["tfjs"] == "4.22.0"
    assert len(GOOD) >= 20 and len(BAD) >= 10


@pytest.mark.parametrize("name", GOOD)
@pytest.mark.parametrize("kind", ["path", "pathlib", "file_url", "bytes", "file_like"])
def test_elements_match_tfjs(name, kind):
    case = EXPECTED[name]
    ds = csv(_sources(name)[kind], case["config"])
    assert ds.size is None
    assert ds.column_names() == case["columnNames"]
    want = [_decode(e) for e in case["elements"]]
    for _ in range(2):  # a dataset can be iterated again
        got = list(ds)
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert _same(g, w), (g, w)


@pytest.mark.parametrize("name", GOOD)
@pytest.mark.parametrize("chunk_size", [1, 2, 3, 7])
def test_tiny_chunks_give_the_same_elements(name, chunk_size):
    """Lines, quoted fields and multi-byte characters split across chunks read the same."""
    case = EXPECTED[name]
    ds = CSVDataset(FIXTURES / f"{name}.csv", csv_config_from_dict(case["config"], "t"), chunk_size=chunk_size)
    got = list(ds)
    want = [_decode(e) for e in case["elements"]]
    assert all(_same(g, w) for g, w in zip(got, want, strict=True))


# Words of TF.js's message that ours keeps too (ours adds the file and the line).
_MESSAGE_WORDS = {
    "err_field_count": ["invalid row", "line 3", "should have 3 elements", "got 2", "'4,5'"],
    "err_blank_line": ["invalid row", "line 3", "should have 2 elements", "got 1"],
    "quoted_newline": ["invalid row", "line 2", "should have 2 elements"],
    "whitespace_trailing": ["invalid row", "line 2", "should have 2 elements", "got 3"],
    "space_delimiter": ["invalid row", "line 1", "should have 3 elements", "got 2"],
    "err_required": ["required column 'a' is empty", "line 3", "',4'"],
    "err_label_empty": ["column 'b' is empty", "line 2"],
    "err_unknown_config": ["'zz'", "column_configs", "(a, b)"],
    "err_no_names": ["column_names must be given"],
    "err_duplicate": ["duplicate column names", "'a'"],
    "err_names_length": ["column_names (1)", "header line", "(2"],
    "err_empty": ["no data was found"],
    "err_delimiter_and_whitespace": ["delimiter must not be given when delim_whitespace"],
}


@pytest.mark.parametrize("name", BAD)
def test_errors_match_tfjs(name):
    """Where TF.js throws, so do we, naming the file and line where there is one."""
    case = EXPECTED[name]
    path = FIXTURES / f"{name}.csv"
    with pytest.raises(ValueError) as info:
        list(csv(path, case["config"]))
    message = str(info.value)
    assert message.startswith("nf.data.csv: ")
    for word in _MESSAGE_WORDS[name]:
        assert word.lower() in message.lower(), (word, message)
    if "line " in case["error"] or "row" in case["error"] or "column" in case["error"].lower():
        if name not in ("err_no_names", "err_delimiter_and_whitespace"):
            assert str(path) in message


@pytest.mark.parametrize("name", GOOD)
def test_async_iteration_gives_the_same_elements(name):
    case = EXPECTED[name]
    ds = CSVDataset(FIXTURES / f"{name}.csv", csv_config_from_dict(case["config"], "t"), chunk_size=3)

    async def main():
        return [row async for row in ds]

    got = asyncio.run(main())
    want = [_decode(e) for e in case["elements"]]
    assert len(got) == len(want) and all(_same(g, w) for g, w in zip(got, want, strict=True))
