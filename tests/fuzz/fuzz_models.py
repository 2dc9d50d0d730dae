"""Model-file fuzzing machinery shared by tests/fuzz and tools/fuzz.py (issue 24): seeded mutations of small
valid models (model.json keys, types, numbers, shapes, nesting, weight paths, symlinks, FIFOs, shard sizes),
one load per mutation, and the classification of what the load did.

Only public APIs that exist in every ndflow since issue 24 are used (``nf.sequential``, ``nf.layers.dense``,
``Model.save``, ``nf.load_layers_model``, ``nf.load_graph_model``, ``nf.memory``), so tools/fuzz.py can run this
module against an older tree. Reads outside the model folder are seen through a ``sys.addaudithook`` hook on the
``open`` event (``open``, ``io.open``, ``os.open``, ``Path.read_bytes``, ``np.fromfile``... all raise it), with
paths resolved through symlinks; an import's own reads of Python files are not counted.
"""

from __future__ import annotations

import copy
import json
import os
import random
import shutil
import signal
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import ndflow as nf

GRAPH_FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "graph_models" / "basic"
CLEAN_ERRORS = (ValueError, TypeError, NotImplementedError)
OUTCOMES = ("clean", "ugly", "crash", "hang", "leak", "outside-read")
SECRET = b"outside the model folder"

# -- reads outside the folder ----------------------------------------------------------------------------------

_WATCH: dict[str, list[str] | None] = {"opened": None}


def _audit(event: str, args: tuple) -> None:
    opened = _WATCH["opened"]
    if opened is not None and event == "open" and args and isinstance(args[0], str | bytes | os.PathLike):
        opened.append(os.fsdecode(args[0]))


_HOOKED = False


def _install_hook() -> None:
    global _HOOKED
    if not _HOOKED:
        sys.addaudithook(_audit)
        _HOOKED = True


def _outside(opened: list[str], folder: Path) -> list[str]:
    """The opened paths that resolve outside ``folder`` and are not an import's Python or extension files."""
    root = os.path.realpath(folder)
    out = []
    for p in opened:
        real = os.path.realpath(p)
        if real == root or real.startswith(root + os.sep):
            continue
        if real.endswith((".py", ".pyc", ".so", ".pth")) or "__pycache__" in real:
            continue
        out.append(p)
    return out


# -- base models ----------------------------------------------------------------------------------------------


def make_bases(workdir: Path) -> dict[str, Path]:
    """Two small valid model folders under ``workdir`` (a layers model saved by ndflow, the ``basic`` graph model
    fixture) and a secret file ``outside.bin`` beside them that no load may read. Returns name -> folder."""
    workdir.mkdir(parents=True, exist_ok=True)
    layers = workdir / "base_layers"
    if not layers.exists():
        model = nf.sequential()
        model.add(nf.layers.dense(units=3, input_shape=[4], activation="relu"))
        model.add(nf.layers.dense(units=2))
        model.save("file://" + str(layers))
        model.dispose()
    graph = workdir / "base_graph"
    if not graph.exists():
        shutil.copytree(GRAPH_FIXTURE, graph)
    (workdir / "outside.bin").write_bytes(SECRET * 4)  # 96 bytes: a plausible shard
    return {"layers": layers, "graph": graph}


# -- mutations ------------------------------------------------------------------------------------------------

EVIL = [None, "x", "", -1, 0, 2**63, -(2**31), 1e308, float("nan"), True, [], {}, [-1, 3], [2**40, 2**40],
        ["a"], {"class_name": None}, "../outside.bin", "float64", "string", [[[]]]]  # fmt: skip


def _nodes(obj: object, out: list[tuple[object, object]], depth: int = 0) -> list[tuple[object, object]]:
    """Every (container, key) pair in a parsed JSON document."""
    if depth > 40:
        return out
    items = obj.items() if isinstance(obj, dict) else enumerate(obj) if isinstance(obj, list) else ()
    for k, v in items:
        out.append((obj, k))
        _nodes(v, out, depth + 1)
    return out


def _manifest_paths(doc: dict) -> list[tuple[list, int]]:
    groups = doc.get("weightsManifest") if isinstance(doc, dict) else None
    return [(g["paths"], i) for g in groups or [] if isinstance(g, dict) for i in range(len(g.get("paths", [])))]


def _specs(doc: dict) -> list[dict]:
    groups = doc.get("weightsManifest") if isinstance(doc, dict) else None
    return [s for g in groups or [] if isinstance(g, dict) for s in g.get("weights", []) if isinstance(s, dict)]


@dataclass
class Case:
    """One mutated model folder: what was done (``what``) and how to load it."""

    index: int
    kind: str
    what: str
    folder: Path
    model_json: Path
    fifo: bool = False
    notes: list[str] = field(default_factory=list)


def mutate(rng: random.Random, index: int, kind: str, base: Path, workdir: Path) -> Case:
    """Copy ``base`` to ``workdir/case{index}`` and apply one seeded mutation."""
    folder = workdir / f"case{index}"
    if folder.exists():
        shutil.rmtree(folder)
    shutil.copytree(base, folder, symlinks=True)
    mj = folder / "model.json"
    doc = json.loads(mj.read_text())
    outside = workdir / "outside.bin"
    shards = sorted(p for p in folder.iterdir() if p.suffix == ".bin")
    op = rng.choice(["delete", "replace", "replace", "shape", "dtype", "path", "shard", "text", "nest", "config"])
    text: str | None = None
    what = op
    fifo = False
    if op in ("delete", "replace", "nest", "config"):
        nodes = _nodes(doc, [])
        if op == "config":
            nodes = [(c, k) for c, k in nodes if isinstance(c, dict) and not isinstance(c.get(k), dict | list)]
        container, key = rng.choice(nodes)
        if op == "delete":
            del container[key]
            what = f"delete {key!r}"
        elif op == "nest":
            depth = rng.choice([100, 600, 5000])
            container[key] = "__DEEP__"
            text = json.dumps(doc).replace('"__DEEP__"', "[" * depth + "1" + "]" * depth, 1)
            what = f"deep-nest {key!r} x{depth}"
        else:
            value = rng.choice(EVIL + [rng.choice([-7, 10**9, 10**12, 3.5, "relu", "zzz"])])
            container[key] = copy.deepcopy(value)
            what = f"replace {key!r} = {value!r:.40}"
    elif op == "shape":
        spec = rng.choice(_specs(doc))
        spec["shape"] = rng.choice([[-1], [-3, 4], [2**31, 2**31], [0], [1.5], ["3"], 7, [], [10**12], None])
        what = f"shape of {spec.get('name')!r} = {spec['shape']!r}"
    elif op == "dtype":
        spec = rng.choice(_specs(doc))
        spec["dtype"] = rng.choice(["float64", "string", "complex64", "bool", "nope", 3, None, "uint8", "int32"])
        if rng.random() < 0.3:
            spec["quantization"] = rng.choice([{"dtype": "uint8", "scale": 1, "min": 0}, {"dtype": "x"}, 5, {}])
        what = f"dtype of {spec.get('name')!r} = {spec['dtype']!r}"
    elif op == "path":
        paths, i = rng.choice(_manifest_paths(doc))
        how = rng.choice(["traversal", "absolute", "symlink", "fifo", "dir", "missing", "sub-traversal", "type"])
        if how == "traversal":
            paths[i] = "../outside.bin"
        elif how == "absolute":
            paths[i] = str(outside)
        elif how == "sub-traversal":
            paths[i] = "sub/../../outside.bin"
        elif how == "symlink":
            target = folder / paths[i]
            target.unlink()
            target.symlink_to(outside)
        elif how == "fifo":
            target = folder / paths[i]
            target.unlink()
            os.mkfifo(target)
            fifo = True
        elif how == "dir":
            target = folder / paths[i]
            target.unlink()
            target.mkdir()
        elif how == "missing":
            (folder / paths[i]).unlink()
        else:
            paths[i] = rng.choice([None, 3, ["a"], "", ".", "/"])
        what = f"weight path {how}"
    elif op == "shard":
        shard = rng.choice(shards)
        data = shard.read_bytes()
        how = rng.choice(["truncate", "extend", "empty", "flip"])
        if how == "truncate":
            shard.write_bytes(data[: rng.randrange(len(data))])
        elif how == "extend":
            shard.write_bytes(data + bytes(rng.choice([1, 4, 1000])))
        elif how == "empty":
            shard.write_bytes(b"")
        else:
            b = bytearray(data)
            for _ in range(4):
                b[rng.randrange(len(b))] = rng.randrange(256)
            shard.write_bytes(bytes(b))
        what = f"shard {shard.name} {how}"
    else:  # raw text of model.json
        raw = json.dumps(doc)
        how = rng.choice(["truncate", "garbage", "brackets", "empty", "not-utf8", "not-object"])
        text = {
            "truncate": raw[: rng.randrange(len(raw))],
            "garbage": raw[:50] + "\x00\x01}{" + raw[60:],
            "brackets": "[" * rng.choice([1000, 100000]),
            "empty": "",
            "not-utf8": None,
            "not-object": rng.choice(["[]", "3", "null", '"x"']),
        }[how]
        if text is None:
            mj.write_bytes(b"\xff\xfe" + raw.encode()[:100])
        what = f"model.json text {how}"
    if op not in ("text", "nest"):
        mj.write_text(json.dumps(doc))
    elif text is not None:
        mj.write_text(text)
    return Case(index, kind, what, folder, mj, fifo)


def cases(seed: int, n: int, workdir: Path, start: int = 0) -> list[Case]:
    """The first ``n`` mutations of ``seed`` (from ``start``), alternating layers and graph models."""
    bases = make_bases(workdir)
    rng = random.Random(seed)
    out = []
    for i in range(n):
        kind = "layers" if i % 2 == 0 else "graph"
        case_rng = random.Random(rng.getrandbits(64))
        if i >= start:
            out.append(mutate(case_rng, i, kind, bases[kind], workdir))
    return out


# -- one load ---------------------------------------------------------------------------------------------------


def _names_file(exc: OSError, folder: Path) -> bool:
    text = f"{exc} {exc.filename or ''} {getattr(exc, 'filename2', '') or ''}"
    return str(folder) in text or any(p.name in text for p in folder.iterdir())


def _load(case: Case) -> object:
    if case.kind == "layers":
        return nf.load_layers_model("file://" + str(case.model_json))
    return nf.load_graph_model(str(case.model_json))


def _timeout(signum: int, frame: object) -> None:
    raise TimeoutError("the load did not finish in time")


def run_case(case: Case, timeout_s: float = 10.0, load: Callable[[Case], object] = _load) -> dict:
    """Load one mutated model; returns ``{"outcome": ..., "detail": ...}`` with outcome one of clean, ugly, hang,
    leak, outside-read (a process crash is seen only by the caller, tools/fuzz.py). A hang is a load that did
    not finish in ``timeout_s`` (a SIGALRM interrupts it, blocked opens of a FIFO included)."""
    _install_hook()
    before = nf.memory().num_tensors
    opened: list[str] = []
    outcome, detail = "clean", "loaded"
    old = signal.signal(signal.SIGALRM, _timeout)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    _WATCH["opened"] = opened
    try:
        model = load(case)
        _WATCH["opened"] = None
        model.dispose()
    except TimeoutError as exc:
        outcome, detail = "hang", str(exc)
    except CLEAN_ERRORS as exc:
        detail = f"{type(exc).__name__}: {exc}"
    except OSError as exc:
        detail = f"{type(exc).__name__}: {exc}"
        if not _names_file(exc, case.folder):
            outcome = "ugly"
    except BaseException as exc:  # noqa: BLE001 (classifying every exception is the point)
        if isinstance(exc, KeyboardInterrupt):
            raise
        outcome = "ugly"
        tb = traceback.extract_tb(exc.__traceback__)[-1]
        detail = f"{type(exc).__name__}: {str(exc)[:200]} at {Path(tb.filename).name}:{tb.lineno}"
    finally:
        _WATCH["opened"] = None
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)
    outside = _outside(opened, case.folder)
    if outside and outcome in ("clean", "ugly"):
        outcome, detail = "outside-read", f"read {outside[:3]} ({detail[:150]})"
    after = nf.memory().num_tensors
    if after != before and outcome == "clean":
        outcome, detail = "leak", f"num_tensors {before} -> {after} ({detail[:150]})"
    return {
        "outcome": outcome,
        "detail": " ".join(detail.split())[:400],
        "what": case.what,
        "kind": case.kind,
        "index": case.index,
    }
