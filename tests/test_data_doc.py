"""The code blocks of docs/data.md marked "tested" run as written (in a temporary folder)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parent.parent / "docs" / "data.md"
BLOCKS = re.findall(r"<!-- tested -->\n```python\n(.*?)```", DOC.read_text(), flags=re.S)


def test_the_doc_has_tested_blocks() -> None:
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_block_runs(code: str, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"{DOC.name} block", "exec"), {"__name__": "__doc_block__"})
    out = capsys.readouterr().out
    for line in code.splitlines():  # "print(...)  # expected" comments are checked where they give a value
        m = re.match(r"print\((.*)\)\s+# (\[.*\]|\{.*\})", line.strip())
        if m:
            assert m.group(2).split(";")[0].strip() in out, (m.group(2), out)
