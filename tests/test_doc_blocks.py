"""The code blocks of the guides marked "tested" run as written, each in a temporary folder.

A block is marked by a ``<!-- tested -->`` line right before its ```` ```python ```` fence. A ``print(...)`` line
whose comment gives a value checks that the value was printed: ``# -> text`` (up to a ``;``), or a bare
``# [...]`` / ``# {...}``.
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
#: Guides and how many tested blocks each has at least; any other page of docs/ with tested blocks runs too.
GUIDES = {"data.md": 3, "layers.md": 7, "training.md": 6}
_FENCE = re.compile(r"<!-- tested -->\n```python\n(.*?)```", flags=re.S)
_EXPECTED = re.compile(r"print\(.*\)\s+# (?:-> (.*)|(\[.*\]|\{.*\}))$")


def blocks(name: str) -> list[str]:
    """The tested blocks of ``docs/<name>``, in order."""
    return _FENCE.findall((DOCS / name).read_text())


PAGES = sorted({*GUIDES, *(p.name for p in DOCS.glob("*.md") if "<!-- tested -->" in p.read_text())})
CASES = [(name, i, code) for name in PAGES for i, code in enumerate(blocks(name))]


@pytest.mark.parametrize("name", GUIDES)
def test_the_guide_has_tested_blocks(name: str) -> None:
    assert len(blocks(name)) >= GUIDES[name], f"docs/{name}: fewer tested blocks than expected"


def expected_outputs(code: str) -> list[str]:
    """The values that the block's commented ``print`` lines promise."""
    out = []
    for line in code.splitlines():
        m = _EXPECTED.search(line.strip())
        if m:
            out.append((m.group(1) or m.group(2)).split(";")[0].strip())
    return out


#: What a block needs beyond numpy, by what it calls: an extra that is not installed skips the block.
NEEDS = {"nf.node.": "PIL", "nf.browser.": "PIL", "nf.vis.": "matplotlib", "tensor_board": "tensorboardX"}


@pytest.mark.parametrize("name, index, code", CASES, ids=[f"{n}-block{i}" for n, i, _ in CASES])
def test_block_runs(name: str, index: int, code: str, tmp_path, monkeypatch, capsys) -> None:
    for call, module in NEEDS.items():
        if call in code and importlib.util.find_spec(module) is None:
            pytest.skip(f"docs/{name} block {index} needs {module} (an extra: pip install -e '.[test]')")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"docs/{name} block {index}", "exec"), {"__name__": "__doc_block__"})
    out = capsys.readouterr().out
    for value in expected_outputs(code):
        assert value in out, (value, out)
