"""The import graph of the ndflow package, and the architecture check that reads it.

The layer order lives in one place: the fenced block after the line ``<!-- layer order -->`` in
docs/architecture.md. Each line of that block is one rank, top to bottom; the names on a line are peers.
A name is a folder or a module below ``ndflow/`` (``backends/cpu``, ``version``); ``__init__`` is the public
namespace ``ndflow/__init__.py`` alone. A module belongs to the longest name that contains it.

Rules (``check``): no file below ``ndflow/`` over 600 lines; no import from a higher rank into a lower one,
at module level or inside a function; no import between two peers (for the backends: one backend importing
another, ``backends/shared`` being the rank below them); every module placed in the table. The public
namespace may import anything. Imports are read from the source (ast): ``importlib.import_module`` with a
computed name is not seen.

    python tools/import_graph.py                            # counts and violations for ./ndflow
    python tools/import_graph.py --package /tmp/old/ndflow  # another tree, same layer table
    python tools/import_graph.py --check                    # exit 1 when a rule is broken
    python tools/import_graph.py --duplicates               # also the `duplicates` tool's rows (when installed)
"""

from __future__ import annotations

import argparse
import ast
import re
import shutil
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARCHITECTURE_DOC = ROOT / "docs" / "architecture.md"
LAYER_MARKER = "<!-- layer order -->"
MAX_LINES = 600
PUBLIC = "__init__"


@dataclass(frozen=True)
class Import:
    """One import of a package module by another: ``level`` is "module", "function" or "typing"
    (under ``if TYPE_CHECKING:``)."""

    source: str
    target: str
    line: int
    level: str


@dataclass(frozen=True)
class Violation:
    """One broken rule: ``kind`` is "long file", "upward", "peer", "cross-backend" or "unplaced"; ``level`` is
    the import's, for the kinds that are imports."""

    kind: str
    path: str
    line: int
    detail: str
    level: str = ""

    def __str__(self) -> str:
        return f"{self.kind}: {self.path}:{self.line}: {self.detail}"


@dataclass
class Package:
    """The modules of a package (dotted name -> file) and the imports between them."""

    root: Path
    modules: dict[str, Path]
    imports: list[Import]

    @property
    def name(self) -> str:
        return self.root.name

    def relpath(self, module: str) -> str:
        return self.modules[module].relative_to(self.root.parent).as_posix()


def read_layers(doc: Path = ARCHITECTURE_DOC) -> list[list[str]]:
    """The ranks of the layer table in ``doc``, top first: the lines of the fenced block after
    ``<!-- layer order -->``; on a line, the names before ``#`` (the rest describes them)."""
    lines = doc.read_text(encoding="utf-8").splitlines()
    try:
        start = lines.index(LAYER_MARKER)
    except ValueError:
        raise ValueError(f"{doc}: no line {LAYER_MARKER!r} before the layer table") from None
    fence = next((i for i in range(start + 1, len(lines)) if lines[i].startswith("```")), None)
    if fence is None:
        raise ValueError(f"{doc}: no fenced block after {LAYER_MARKER!r}")
    ranks: list[list[str]] = []
    for text in lines[fence + 1 :]:
        if text.startswith("```"):
            break
        names = text.split("#", 1)[0].split()
        if names:
            ranks.append(names)
    seen = Counter(name for rank in ranks for name in rank)
    twice = sorted(name for name, count in seen.items() if count > 1)
    if not ranks or twice:
        raise ValueError(f"{doc}: the layer table is empty or names {twice} twice")
    return ranks


def _module_name(package: Path, path: Path) -> str:
    parts = list(path.relative_to(package.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _import_statements(tree: ast.AST) -> Iterable[tuple[ast.Import | ast.ImportFrom, str]]:
    """Every import statement with its level: inside a function (run when called), under
    ``if TYPE_CHECKING:`` (never run), or at module level (class bodies included: run at import)."""
    stack: list[tuple[ast.AST, str]] = [(child, "module") for child in ast.iter_child_nodes(tree)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node, level
            continue
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            level = "function"
        elif isinstance(node, ast.If) and _is_type_checking(node.test) and level == "module":
            stack.extend((child, "typing") for child in node.body)
            stack.extend((child, level) for child in node.orelse)
            continue
        stack.extend((child, level) for child in ast.iter_child_nodes(node))


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    """The package module ``name`` loads: itself, or the longest package prefix that exists."""
    parts = name.split(".")
    while parts:
        candidate = ".".join(parts)
        if candidate in modules:
            return candidate
        parts.pop()
    return None


def _targets(statement: ast.Import | ast.ImportFrom, module: str, is_package: bool, modules: dict[str, Path]):
    if isinstance(statement, ast.Import):
        for alias in statement.names:
            yield _resolve(alias.name, modules)
        return
    base = statement.module or ""
    if statement.level:
        anchor = module.split(".") if is_package else module.split(".")[:-1]
        anchor = anchor[: len(anchor) - (statement.level - 1)]
        base = ".".join(anchor + ([base] if base else []))
    for alias in statement.names:
        submodule = f"{base}.{alias.name}"
        yield submodule if submodule in modules else _resolve(base, modules)


def scan(package: Path) -> Package:
    """Read every module below ``package`` (a folder with ``__init__.py``) and its imports of the package."""
    package = package.resolve()
    files = sorted(p for p in package.rglob("*.py") if "__pycache__" not in p.parts)
    modules = {_module_name(package, path): path for path in files}
    root = package.name
    imports = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        is_package = path.name == "__init__.py"
        for statement, level in _import_statements(tree):
            for target in _targets(statement, module, is_package, modules):
                if target is not None and target.split(".")[0] == root and target != module:
                    imports.append(Import(module, target, statement.lineno, level))
    return Package(package, modules, sorted(set(imports), key=lambda i: (i.source, i.line, i.target)))


def strongly_connected(nodes: Iterable[str], edges: Iterable[tuple[str, str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (the import circles), largest first."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in edges:
        if a != b:
            graph[a].add(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    found: list[list[str]] = []
    for start in nodes:
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found, key=lambda c: (-len(c), c))


def folder_of(module: str, package: Package) -> str:
    """The folder (package) a module lives in: a package's ``__init__`` is its own folder."""
    return module if package.modules[module].name == "__init__.py" else module.rpartition(".")[0]


def circles(package: Package, levels: tuple[str, ...] = ("module", "function")) -> dict[str, list[list[str]]]:
    """Import circles between modules and between folders, counting the imports of ``levels``."""
    edges = [(i.source, i.target) for i in package.imports if i.level in levels]
    folders = {folder_of(m, package) for m in package.modules}
    folder_edges = [(folder_of(a, package), folder_of(b, package)) for a, b in edges]
    return {
        "modules": strongly_connected(sorted(package.modules), edges),
        "folders": strongly_connected(sorted(folders), folder_edges),
    }


class Layers:
    """The layer table applied to a package: which unit (table name) and rank each module has."""

    def __init__(self, ranks: list[list[str]], package: str = "ndflow") -> None:
        self.ranks = ranks
        self.package = package
        self.rank_of = {name: i for i, rank in enumerate(ranks) for name in rank}

    def unit(self, module: str) -> str | None:
        """The table name that holds ``module`` (the longest that contains it), or None."""
        if module == self.package:
            return PUBLIC if PUBLIC in self.rank_of else None
        best = None
        for name in self.rank_of:
            if name == PUBLIC:
                continue
            prefix = f"{self.package}.{name.replace('/', '.')}"
            if (module == prefix or module.startswith(prefix + ".")) and (best is None or len(name) > len(best)):
                best = name
        return best


def _is_backend(unit: str) -> bool:
    return unit.startswith("backends/") and unit != "backends/shared"


def long_files(package: Path, limit: int = MAX_LINES) -> list[tuple[str, int]]:
    """Text files below ``package`` with more than ``limit`` lines (binaries and caches left out)."""
    found = []
    for path in sorted(package.resolve().rglob("*")):
        if not path.is_file() or "__pycache__" in path.parts:
            continue
        data = path.read_bytes()
        if b"\0" in data:
            continue
        count = len(data.decode("utf-8", errors="replace").splitlines())
        if count > limit:
            found.append((path.relative_to(package.resolve().parent).as_posix(), count))
    return found


def layer_violations(package: Package, layers: Layers) -> list[Violation]:
    """Upward, peer and cross-backend imports, and modules the table does not place."""
    found = []
    for module in package.modules:
        if layers.unit(module) is None:
            found.append(Violation("unplaced", package.relpath(module), 1, f"{module} is in no layer of the table"))
    for imp in package.imports:
        source, target = layers.unit(imp.source), layers.unit(imp.target)
        if source is None or target is None or source == PUBLIC or source == target:
            continue
        rs, rt = layers.rank_of[source], layers.rank_of[target]
        if rt > rs:
            continue
        if rt < rs:
            kind = "upward"
        else:
            kind = "cross-backend" if _is_backend(source) and _is_backend(target) else "peer"
        detail = f"{imp.source} ({source}) imports {imp.target} ({target}) [{imp.level}-level]"
        found.append(Violation(kind, package.relpath(imp.source), imp.line, detail, imp.level))
    return found


def check(package: Path, ranks: list[list[str]] | None = None) -> list[Violation]:
    """Every broken rule in ``package`` against the layer table (by default the one in docs/architecture.md)."""
    scanned = scan(package)
    layers = Layers(ranks if ranks is not None else read_layers(), scanned.name)
    found = [Violation("long file", path, MAX_LINES + 1, f"{count} lines") for path, count in long_files(package)]
    return found + layer_violations(scanned, layers)


def report(package: Path, ranks: list[list[str]]) -> str:
    """The counts (circles, upward/peer/cross-backend imports by level, long files) and every violation."""
    scanned = scan(package)
    violations = check(package, ranks)
    lines = [f"{scanned.root}: {len(scanned.modules)} modules, {len(scanned.imports)} package imports"]
    for levels in (("module",), ("module", "function"), ("module", "function", "typing")):
        found = circles(scanned, levels)
        for what, components in found.items():
            sizes = [len(c) for c in components]
            lines.append(f"circles between {what} ({'+'.join(levels)} imports): {len(components)}, sizes {sizes}")
    lines.append("  (module+function) circles:")
    for what, components in circles(scanned).items():
        lines.extend(f"    {what}: {' '.join(c)}" for c in components)
    by_kind = Counter(v.kind for v in violations)
    for kind in ("upward", "peer", "cross-backend"):
        levels = Counter(v.level for v in violations if v.kind == kind)
        lines.append(f"{kind} imports: {by_kind[kind]} {dict(sorted(levels.items()))}")
    lines.append(f"long files (> {MAX_LINES} lines): {by_kind['long file']}; unplaced modules: {by_kind['unplaced']}")
    lines.append("violations:")
    lines.extend(f"  {v}" for v in violations)
    return "\n".join(lines)


_ROW = re.compile(r"^D\d+ (\S+):(\d+)-(\d+) ~ (\S+):(\d+)-(\d+)")


def duplicate_counts(package: Path, most: int = 200, seconds: int = 120) -> str:
    """The ``duplicates`` tool's rows for ``package`` (``--most``, ``--seconds``) counted: all, exact, by shape,
    and the cpu/torch kernel twins (one side in backends/cpu, the other in backends/torch) whose run is over
    10 lines."""
    if shutil.which("duplicates") is None:
        return "duplicates: the tool is not installed here"
    command = ["duplicates", "--repo", str(package), "--most", str(most), "--seconds", str(seconds)]
    text = subprocess.run(command, capture_output=True, text=True, check=False).stdout
    rows = [line for line in text.splitlines() if _ROW.match(line)]
    twins = []
    for row in rows:
        a, a1, a2, b, _, _ = _ROW.match(row).groups()
        sides = {path.split("/")[1] for path in (a, b) if path.startswith("backends/") and path.count("/") > 1}
        if sides == {"cpu", "torch"} and int(a2) - int(a1) + 1 > 10:
            twins.append(row)
    shape = sum(" shape" in row for row in rows)
    lines = [text.splitlines()[0] if text else "duplicates: no output"]
    lines.append(f"rows: {len(rows)} ({len(rows) - shape} exact, {shape} by shape); cpu/torch twins over 10 lines:")
    lines.extend(f"  {row}" for row in twins)
    lines.append(f"  ({len(twins)} rows)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", type=Path, default=ROOT / "ndflow", help="the package folder (./ndflow)")
    parser.add_argument("--layers", type=Path, default=ARCHITECTURE_DOC, help="the doc holding the layer table")
    parser.add_argument("--check", action="store_true", help="print only violations; exit 1 when there are any")
    parser.add_argument("--duplicates", action="store_true", help="also count the rows of the duplicates tool")
    args = parser.parse_args(argv)
    ranks = read_layers(args.layers)
    if args.check:
        violations = check(args.package, ranks)
        print("\n".join(map(str, violations)) or "no violations")
        return 1 if violations else 0
    print(report(args.package, ranks))
    if args.duplicates:
        print(duplicate_counts(args.package))
    return 0


if __name__ == "__main__":
    sys.exit(main())
