"""Fill ``gpu_carry/``: what the GPU machine (Python 3.12, no network) needs for ``benchmarks/gpu_check.sh``.

    python tools/prepare_gpu_carry.py                  # fill gpu_carry/ (needs PyPI, apt and the model cache)
    python tools/prepare_gpu_carry.py --check          # exit 0 when gpu_carry/ matches its manifest, 1 otherwise
    python tools/prepare_gpu_carry.py --dest DIR       # another folder

Layout (docs: /tmp/notes/gpu_common.md, issue 23):

- ``wheels/``: the wgpu wheel of this venv's version for cp312 manylinux x86_64 and the dependencies it needs
  there (pinned to this venv's versions), less what the GPU machine already has (numpy, torch, pytest, pillow);
- ``debs/``: ``libvulkan1`` (the Vulkan loader; Debian's depends only on libc, so ``dpkg -x`` is enough);
- ``models/<name>/model.json`` + weight files: ``blazeface``, ``facemesh``, ``movenet-lightning`` from the model
  cache (``tools/fetch_models.py``; fetched if missing) and ``mlp-layers``, a small layers model saved by ndflow;
- ``manifest.json``: every file with its size and sha256, the total and what made it; a total over 60 MiB fails
  (the carry list holds 64 MiB in all).

Running it again keeps what is already there and valid; only what is missing is fetched or written.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import platform
import re
import shutil
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_DEST = ROOT / "gpu_carry"
MANIFEST = "manifest.json"
#: The carry list holds 64 MiB in all; the rest is left for what else a check carries.
LIMIT_BYTES = 60 * 1024 * 1024
GRAPH_MODELS = ("blazeface", "facemesh", "movenet-lightning")
LAYERS_MODEL = "mlp-layers"
#: The GPU machine's Python and platform (pip download's flags).
PYTHON_VERSION = "3.12"
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux2014_x86_64", "manylinux_2_17_x86_64")
#: Distributions the GPU machine already has, or that never apply to it (rubicon-objc: macOS only).
ON_GPU_MACHINE = frozenset({"numpy", "torch", "pytest", "pillow", "rubicon-objc"})
#: Folders that ``benchmarks/gpu_check.sh`` writes on the GPU machine: not part of the carry.
MADE_THERE = frozenset({"site", "vulkan"})
#: The environment that a requirement's markers are evaluated in (the GPU machine's).
MARKER_ENV = {
    "python_version": PYTHON_VERSION,
    "python_full_version": PYTHON_VERSION + ".0",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "extra": "",
}


class CarryError(RuntimeError):
    """A step of the preparation failed, or the folder does not match its manifest."""


def canonical(name: str) -> str:
    """A distribution's name as PEP 503 compares it (``Foo_bar`` -> ``foo-bar``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def wheel_requirements(root: str = "wgpu", exclude: Iterable[str] = ON_GPU_MACHINE) -> list[str]:
    """``name==version`` for ``root`` and its dependency closure on the GPU machine (linux, CPython 3.12), pinned
    to this environment's versions (unpinned where this environment lacks one), less ``exclude``."""
    from packaging.requirements import Requirement

    skip = {canonical(n) for n in exclude}
    pins: dict[str, str | None] = {}
    todo = [root]
    while todo:
        name = canonical(todo.pop())
        if name in pins or name in skip:
            continue
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            if name == canonical(root):
                raise CarryError(f"prepare_gpu_carry: {root} is not installed in this environment ({sys.prefix})")
            pins[name] = None
            continue
        pins[name] = dist.version
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate(MARKER_ENV):
                todo.append(req.name)
    return sorted(f"{n}=={v}" if v else n for n, v in pins.items())


def _wheel_present_as(whl: Path, requirement: str) -> bool:
    """Whether the wheel file ``whl`` satisfies ``requirement`` (``name==version`` or a bare name)."""
    name, _, version = requirement.partition("==")
    parts = whl.name.split("-")
    return canonical(parts[0]) == canonical(name) and (not version or parts[1] == version)


def _wheel_present(wheels: Path, requirement: str) -> bool:
    """Whether ``wheels`` holds a wheel for ``requirement``."""
    return any(_wheel_present_as(whl, requirement) for whl in wheels.glob("*.whl"))


def download_wheels(wheels: Path, requirements: list[str]) -> list[str]:
    """``pip download`` the wheels of ``requirements`` not in ``wheels`` yet (no dependencies: the list is the
    closure); the requirements fetched."""
    wheels.mkdir(parents=True, exist_ok=True)
    for whl in wheels.glob("*.whl"):  # another version or a dropped dependency: it would be installed there too
        if not any(_wheel_present_as(whl, r) for r in requirements):
            whl.unlink()
    missing = [r for r in requirements if not _wheel_present(wheels, r)]
    if not missing:
        return []
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--quiet",
        "--no-deps",
        "--only-binary=:all:",
        "--python-version",
        PYTHON_VERSION,
        "--implementation",
        "cp",
        "--abi",
        "cp312",
        "-d",
        str(wheels),
    ]
    for plat in PLATFORMS:
        cmd += ["--platform", plat]
    done = subprocess.run([*cmd, *missing], capture_output=True, text=True)
    if done.returncode != 0:
        tail = " / ".join(done.stderr.strip().splitlines()[-3:])
        raise CarryError(f"prepare_gpu_carry: pip download {' '.join(missing)} failed: {tail}")
    return missing


def download_debs(debs: Path, packages: Iterable[str] = ("libvulkan1",)) -> list[str]:
    """``apt-get download`` each package not in ``debs`` yet (``apt-get update`` once if a download fails)."""
    debs.mkdir(parents=True, exist_ok=True)
    missing = [p for p in packages if not any(debs.glob(f"{p}_*.deb"))]
    if not missing:
        return []
    apt = shutil.which("apt-get")
    if apt is None:
        raise CarryError(f"prepare_gpu_carry: apt-get not found: cannot download {' '.join(missing)} into {debs}")
    for attempt in range(2):
        done = subprocess.run([apt, "download", *missing], cwd=debs, capture_output=True, text=True)
        if done.returncode == 0:
            return missing
        if attempt == 0:
            subprocess.run([apt, "update", "-q"], capture_output=True, text=True)
    tail = " / ".join(done.stderr.strip().splitlines()[-3:])
    raise CarryError(f"prepare_gpu_carry: apt-get download {' '.join(missing)} failed: {tail}")


def _same_file(a: Path, b: Path) -> bool:
    return b.is_file() and a.stat().st_size == b.stat().st_size and sha256(a) == sha256(b)


def copy_graph_model(cache: Path, name: str, dest: Path) -> Path:
    """Copy ``cache/<name>.json`` to ``dest/<name>/model.json`` with the weight files its ``weightsManifest``
    names (paths relative to the json's folder, names kept); files already there and equal are kept."""
    source = cache / f"{name}.json"
    if not source.is_file():
        raise CarryError(f"prepare_gpu_carry: model {name}: {source} not found (run: python tools/fetch_models.py)")
    spec = json.loads(source.read_text())
    folder = dest / name
    folder.mkdir(parents=True, exist_ok=True)
    for group in spec.get("weightsManifest", []):
        for rel in group.get("paths", []):
            if Path(rel).is_absolute() or ".." in Path(rel).parts:
                raise CarryError(f"prepare_gpu_carry: model {name}: weight path {rel!r} leaves the model's folder")
            shard = cache / rel
            if not shard.is_file():
                raise CarryError(f"prepare_gpu_carry: model {name}: weight file {shard} not found")
            target = folder / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if not _same_file(shard, target):
                shutil.copyfile(shard, target)
    target = folder / "model.json"
    if not _same_file(source, target):
        shutil.copyfile(source, target)
    return target


def save_layers_model(folder: Path, seed: int = 23) -> Path:
    """Save a seeded MLP 32 -> 64 (relu) -> 10 (softmax) with ndflow's layers API into ``folder`` (kept when a
    loadable ``model.json`` is already there)."""
    import ndflow as nf

    model_json = folder / "model.json"
    if model_json.is_file():
        try:
            nf.layers.load_layers_model(str(model_json)).dispose()
            return model_json
        except Exception:  # noqa: BLE001 - a broken model is written again
            pass
    layers = nf.layers
    model = layers.sequential(layers=[
        layers.dense(units=64, input_shape=[32], activation="relu",
                     kernel_initializer=nf.initializers.glorot_uniform(seed=seed)),
        layers.dense(units=10, activation="softmax", kernel_initializer=nf.initializers.glorot_uniform(seed=seed + 1)),
    ])  # fmt: skip
    folder.mkdir(parents=True, exist_ok=True)
    try:
        model.save(f"file://{folder.resolve()}")
    finally:
        model.dispose()
    return model_json


def sha256(path: Path) -> str:
    """The file's sha256, hex."""
    digest = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def carried_files(dest: Path) -> list[Path]:
    """Every file under ``dest`` that travels: not the manifest, not what the GPU machine makes there."""
    out = []
    for path in sorted(dest.rglob("*")):
        rel = path.relative_to(dest)
        if path.is_file() and rel.as_posix() != MANIFEST and rel.parts[0] not in MADE_THERE:
            out.append(path)
    return out


def check_size(total: int, limit: int = LIMIT_BYTES) -> None:
    """Raise :class:`CarryError` when ``total`` bytes exceed ``limit``."""
    if total > limit:
        raise CarryError(f"prepare_gpu_carry: the carry folder holds {total / 2**20:.1f} MiB, over the "
                         f"{limit / 2**20:.0f} MiB limit (the carry list holds 64 MiB in all)")  # fmt: skip


def write_manifest(dest: Path, made_by: dict | None = None, limit: int = LIMIT_BYTES) -> dict:
    """Write ``dest/manifest.json`` (path -> size, sha256; total; ``made_by``) and return it; a total over
    ``limit`` raises :class:`CarryError` before anything is written."""
    files = {p.relative_to(dest).as_posix(): {"size": p.stat().st_size, "sha256": sha256(p)}
             for p in carried_files(dest)}  # fmt: skip
    total = sum(f["size"] for f in files.values())
    check_size(total, limit)
    manifest = {"made_by": made_by or {}, "total_bytes": total, "limit_bytes": limit, "files": files}
    (dest / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def check(dest: Path) -> list[str]:
    """What in ``dest`` does not match its manifest (missing, other size or sha256, unlisted); empty when all does."""
    path = dest / MANIFEST
    if not path.is_file():
        return [f"{path}: no manifest (run: python tools/prepare_gpu_carry.py)"]
    try:
        files = json.loads(path.read_text())["files"]
    except (ValueError, KeyError) as exc:
        return [f"{path}: unreadable manifest ({exc})"]
    problems = []
    for rel, want in sorted(files.items()):
        file = dest / rel
        if not file.is_file():
            problems.append(f"{rel}: missing")
        elif file.stat().st_size != want["size"]:
            problems.append(f"{rel}: {file.stat().st_size} bytes, manifest says {want['size']}")
        elif sha256(file) != want["sha256"]:
            problems.append(f"{rel}: sha256 differs from the manifest")
    for file in carried_files(dest):
        if file.relative_to(dest).as_posix() not in files:
            problems.append(f"{file.relative_to(dest).as_posix()}: not in the manifest")
    return problems


def _models_cache() -> Path:
    sys.path.insert(0, str(ROOT / "tools"))
    import fetch_models

    if not fetch_models.is_complete():
        print("prepare_gpu_carry: model cache incomplete; fetching it", flush=True)
        fetch_models.fetch()
    return fetch_models.models_dir()


def prepare(dest: Path) -> dict:
    """Fill ``dest`` (see the module's docstring) and write its manifest; the manifest."""
    dest.mkdir(parents=True, exist_ok=True)
    requirements = wheel_requirements()
    fetched = download_wheels(dest / "wheels", requirements)
    print(f"wheels: {', '.join(requirements)} ({'fetched ' + ', '.join(fetched) if fetched else 'all present'})")
    debs = download_debs(dest / "debs")
    print(f"debs: libvulkan1 ({'fetched' if debs else 'present'})")
    cache = _models_cache()
    for name in GRAPH_MODELS:
        copy_graph_model(cache, name, dest / "models")
    save_layers_model(dest / "models" / LAYERS_MODEL)
    print(f"models: {', '.join((*GRAPH_MODELS, LAYERS_MODEL))} (from {cache} and ndflow's layers API)")
    made_by = {"tool": "tools/prepare_gpu_carry.py", "python": platform.python_version(),
               "wheels_for": f"cp312 {' '.join(PLATFORMS)}", "requirements": requirements,
               "excluded": sorted(ON_GPU_MACHINE), "model_cache": str(cache)}  # fmt: skip
    return write_manifest(dest, made_by)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="fill the GPU machine's carry folder (issue 23)")
    parser.add_argument("--dest", type=Path, default=DEFAULT_DEST, help=f"the folder (default {DEFAULT_DEST})")
    parser.add_argument("--check", action="store_true", help="only check the folder against its manifest")
    args = parser.parse_args(argv)
    if args.check:
        problems = check(args.dest)
        for line in problems:
            print(f"prepare_gpu_carry: {args.dest}: {line}")
        if not problems:
            total = json.loads((args.dest / MANIFEST).read_text())["total_bytes"]
            print(f"{args.dest}: matches its manifest ({total / 2**20:.1f} MiB)")
        return 1 if problems else 0
    try:
        manifest = prepare(args.dest)
    except CarryError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"{args.dest}: {len(manifest['files'])} files, {manifest['total_bytes'] / 2**20:.1f} MiB "
          f"(limit {LIMIT_BYTES / 2**20:.0f} MiB)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
