"""The package keeps its architecture: the layer order of docs/architecture.md, no file over 600 lines.

The rules and the layer table are in ``tools/import_graph.py`` and docs/architecture.md; the first test checks
the real package, the others show that the check catches each kind of violation in a small fake package.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _load_tool():
    spec = importlib.util.spec_from_file_location("import_graph", ROOT / "tools" / "import_graph.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("import_graph", module)  # dataclasses look their module up there
    spec.loader.exec_module(module)
    return module


graph = _load_tool()


def test_the_package_follows_the_layer_order():
    violations = graph.check(ROOT / "ndflow")
    assert not violations, "architecture violations (docs/architecture.md):\n" + "\n".join(map(str, violations))


def test_the_layer_table_is_read_from_the_doc():
    ranks = graph.read_layers()
    names = [name for rank in ranks for name in rank]
    for name in ("cli", "__init__", "layers", "converter", "io", "ops", "backends/shared", "core"):
        assert name in names
    assert ["backends/cpu", "backends/torch", "backends/webgpu"] in ranks
    assert names.index("ops") < names.index("backends/cpu") < names.index("backends/shared") < names.index("core")


def _write(root: Path, relpath: str, text: str = "") -> None:
    path = root / relpath
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f'"""{relpath}"""\n{text}')


LAYERS = [
    ["cli"],
    ["__init__"],
    ["ops"],
    ["backends"],
    ["backends/cpu", "backends/torch"],
    ["backends/shared"],
    ["core"],
]


@pytest.fixture
def fake(tmp_path: Path) -> Path:
    """A small package that follows ``LAYERS``: every test adds one violation to it."""
    root = tmp_path / "ndflow"
    _write(root, "__init__.py", "from . import cli, ops\nfrom .backends import cpu\n")
    _write(root, "cli/__init__.py", "def main():\n    import ndflow as nf\n    return nf\n")
    _write(root, "ops/__init__.py", "from ..core import engine\nfrom ..core.engine import run\n")
    _write(root, "backends/__init__.py", "from . import cpu, torch\n")
    _write(root, "backends/cpu/__init__.py", "from .kernels import add\n")
    _write(root, "backends/cpu/kernels.py", "from ..shared import util\nfrom ...core import engine\nadd = 1\n")
    _write(root, "backends/torch/__init__.py", "from ..shared.util import helper\n")
    _write(root, "backends/shared/__init__.py")
    _write(root, "backends/shared/util.py", "import ndflow.core.engine\nhelper = 1\n")
    _write(root, "core/__init__.py")
    _write(root, "core/engine.py", "run = 1\n" + "\n" * 597)  # 600 lines: the limit itself is fine
    return root


def _found(root: Path) -> set[tuple[str, str, int]]:
    return {(v.kind, v.path, v.line) for v in graph.check(root, LAYERS)}


def test_a_clean_package_passes(fake: Path):
    assert _found(fake) == set()


def test_an_upward_import_is_reported_at_every_level(fake: Path):
    _write(
        fake,
        "core/tensor.py",
        "from typing import TYPE_CHECKING\n"
        "from .. import ops\n"
        "if TYPE_CHECKING:\n"
        "    from ..backends.cpu import kernels\n"
        "def method():\n"
        "    from ndflow.ops import add\n"
        "    import ndflow\n"
        "    return add, ndflow\n",
    )
    assert _found(fake) == {
        ("upward", "ndflow/core/tensor.py", 3),
        ("upward", "ndflow/core/tensor.py", 5),
        ("upward", "ndflow/core/tensor.py", 7),
        ("upward", "ndflow/core/tensor.py", 8),
    }
    levels = sorted(v.level for v in graph.check(fake, LAYERS))
    assert levels == ["function", "function", "module", "typing"]


def test_a_file_over_600_lines_is_reported(fake: Path):
    _write(fake, "ops/big.py", "\n" * 600)  # with the docstring: 601 lines
    _write(fake, "core/csrc/kernel.c", "int x;\n" * 601)
    assert _found(fake) == {("long file", "ndflow/ops/big.py", 601), ("long file", "ndflow/core/csrc/kernel.c", 601)}


def test_a_backend_importing_another_is_reported(fake: Path):
    _write(
        fake, "backends/torch/kernels.py", "from ..cpu.kernels import add\n\ndef f():\n    import ndflow.backends.cpu\n"
    )
    found = graph.check(fake, LAYERS)
    assert {(v.kind, v.path, v.line) for v in found} == {
        ("cross-backend", "ndflow/backends/torch/kernels.py", 2),
        ("cross-backend", "ndflow/backends/torch/kernels.py", 5),
    }
    assert "ndflow.backends.cpu.kernels (backends/cpu)" in str(found[0])


def test_a_backend_may_not_import_the_registrar_above_it(fake: Path):
    _write(fake, "backends/shared/more.py", "from .. import cpu\n")
    assert _found(fake) == {("upward", "ndflow/backends/shared/more.py", 2)}


def test_a_module_outside_the_table_is_reported(fake: Path):
    _write(fake, "misc.py")
    assert _found(fake) == {("unplaced", "ndflow/misc.py", 1)}


def test_circles_are_found():
    edges = [("a", "b"), ("b", "c"), ("c", "a"), ("c", "d"), ("d", "e"), ("e", "d"), ("f", "f")]
    assert graph.strongly_connected("abcdef", edges) == [["a", "b", "c"], ["d", "e"]]


def test_the_layer_table_needs_its_marker_and_unique_names(tmp_path: Path):
    doc = tmp_path / "doc.md"
    doc.write_text("```\ncore\n```\n")
    with pytest.raises(ValueError, match="layer order"):
        graph.read_layers(doc)
    doc.write_text(f"{graph.LAYER_MARKER}\n```\nops  # comment\ncore ops\n```\n")
    with pytest.raises(ValueError, match="twice"):
        graph.read_layers(doc)
    doc.write_text(f"{graph.LAYER_MARKER}\n```\nops  # the ops\n\nvis node\ncore\n```\nnot read\n")
    assert graph.read_layers(doc) == [["ops"], ["vis", "node"], ["core"]]
