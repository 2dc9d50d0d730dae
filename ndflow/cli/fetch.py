"""``ndflow fetch PACKAGE[@VERSION] [--cache-dir D]``: put an npm package in the model cache and list the
model.json files it ships, each with its ``npm://`` URL (for ``nf.load_graph_model`` / ``nf.load_layers_model``
and ``ndflow predict``), its format (graph or layers) and its size with its weight files."""

from __future__ import annotations

import json
from pathlib import Path

from .common import USAGE, CliError, CliParser, report

PROG = "ndflow fetch"


def _parser() -> CliParser:
    parser = CliParser(prog=PROG, description="download an npm package into the cache and list its models")
    parser.add_argument("package", help="npm package: name[@version] (an exact version or a dist-tag; default latest)")
    parser.add_argument("--cache-dir", default=None, help="cache root (default $NDFLOW_CACHE_DIR or ~/.cache/ndflow)")
    return parser


def _size(folder: Path, rel: str) -> int:
    """Bytes of a model.json plus the weight files its manifest names (those present)."""
    path = folder / rel
    total = path.stat().st_size
    try:
        manifest = json.loads(path.read_bytes()).get("weightsManifest") or []
    except (OSError, ValueError, AttributeError):
        return total
    for group in manifest if isinstance(manifest, list) else []:
        for name in group.get("paths", []) if isinstance(group, dict) else []:
            weight = path.parent / str(name)
            if weight.is_file():
                total += weight.stat().st_size
    return total


def _human(n: int) -> str:
    """``n`` bytes as B, KB, MB or GB."""
    if n < 1024:
        return f"{n} B"
    size = float(n)
    for unit in ("KB", "MB", "GB"):
        size /= 1024
        if size < 1024 or unit == "GB":
            break
    return f"{size:.1f} {unit}"


def main(argv: list[str]) -> int:
    """Run ``ndflow fetch`` with ``argv`` (the arguments after ``fetch``); the exit status."""
    from ..io.npm import model_files_in, npm_package_dir, parse_npm_spec
    from ..io.npm_cache import NpmError

    try:
        args = _parser().parse_args(argv)
        try:
            name, _, path = parse_npm_spec(args.package)
            if path:
                raise CliError(f"give a package name[@version], not a path inside it: {args.package!r}")
            folder = npm_package_dir(args.package, args.cache_dir)
            models = model_files_in(folder)
        except (NpmError, OSError) as e:
            raise CliError(str(e), USAGE) from None
    except CliError as err:
        return report(PROG, err)
    version = folder.name
    print(f"{name}@{version}: {folder}")
    if not models:
        print("  no model.json files in this package")
        return 0
    width = max(len(f"npm://{name}@{version}/{rel}") for rel, _ in models)
    for rel, kind in models:
        url = f"npm://{name}@{version}/{rel}"
        print(f"  {url:<{width}}  {kind:<6}  {_human(_size(folder, rel)):>9}")
    print(f"{len(models)} model{'s' if len(models) != 1 else ''}; load one with nf.load_graph_model(URL)", end="")
    print(" or nf.load_layers_model(URL)" if any(k == "layers" for _, k in models) else "")
    return 0
