"""The long fuzz run (issue 24): seeded model-file mutations (tests/fuzz/fuzz_models.py) and op-argument mutations
(the machinery of tests/ops/test_malformed_calls.py), each batch in a child process so a segfault is counted,
not fatal, and a per-case timeout in the child (and a watchdog in the parent) so a hang is counted too.

    python tools/fuzz.py [--seed S] [--model-mutations N] [--op-mutations N] [--timeout 10] [--json OUT]

Prints a table: category x tried / clean (success or a clear error) / ugly (other exception types) / crash
(the process died) / hang / leak (num_tensors not back) / outside-read (a read outside the model folder).
Only public APIs are used, so the run works against an older ndflow on ``PYTHONPATH``. Exit status 1 when
anything was not clean.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import select
import signal
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
COLUMNS = ("tried", "clean", "ugly", "crash", "hang", "leak", "outside-read")
CATEGORIES = {"model": "model files", "op": "op calls"}


def _emit(obj: dict) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def _op_case(rng: random.Random, timeout_s: float) -> dict:
    """One seeded op call with mutated arguments (same argument pool as tests/ops/test_malformed_calls.py)."""
    import test_malformed_calls as tm

    import ndflow as nf

    name = rng.choice(sorted(tm.ARITY))
    made: list = []
    before = nf.memory().num_tensors
    args = [tm._arg(rng, made) for _ in range(rng.randint(1, tm.ARITY[name]))]
    shown = ", ".join(f"Tensor{a.shape}" if isinstance(a, nf.Tensor) else repr(a) for a in args)
    what = f"{name}({shown:.120})"
    outcome, detail = "clean", "ok"

    def _alarm(signum: int, frame: object) -> None:
        raise TimeoutError("the op did not finish in time")

    signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = getattr(nf, name)(*args)
        for t in out if isinstance(out, list | tuple) else [out]:
            if isinstance(t, nf.Tensor):
                t.dispose()
    except TimeoutError as exc:
        outcome, detail = "hang", str(exc)
    except (ValueError, TypeError, NotImplementedError) as exc:
        detail = f"{type(exc).__name__}: {exc}"
    except IndexError as exc:  # a data-dependent index out of range is an IndexError by design
        detail = f"IndexError: {exc}"
        if "is not in [0" not in str(exc):
            outcome = "ugly"
    except Exception as exc:  # noqa: BLE001 (classifying every exception is the point)
        outcome, detail = "ugly", f"{type(exc).__name__}: {str(exc)[:200]}"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        for t in made:
            t.dispose()
    after = nf.memory().num_tensors
    if after != before and outcome == "clean":
        outcome, detail = "leak", f"num_tensors {before} -> {after} ({detail[:150]})"
    return {"outcome": outcome, "detail": " ".join(detail.split())[:400], "what": what}


def child(category: str, seed: int, start: int, count: int, workdir: Path, timeout_s: float) -> None:
    """Run cases ``start..count-1`` of one category, one JSON line before (``begin``) and after each case."""
    sys.path[:0] = [str(REPO / "tests" / "fuzz"), str(REPO / "tests" / "ops")]
    if category == "model":
        import fuzz_models as fm

        fm.make_bases(workdir)
        rng = random.Random(seed)
        bases = fm.make_bases(workdir)
        for i in range(count):
            case_rng = random.Random(rng.getrandbits(64))
            if i < start:
                continue
            kind = "layers" if i % 2 == 0 else "graph"
            _emit({"begin": i})
            case = fm.mutate(case_rng, i, kind, bases[kind], workdir)
            result = fm.run_case(case, timeout_s=timeout_s)
            _emit({"index": i, **result})
            subprocess.run(["rm", "-rf", str(case.folder)], check=False)
    else:
        rng = random.Random(seed)
        for i in range(count):
            case_rng = random.Random(rng.getrandbits(64))
            if i < start:
                continue
            _emit({"begin": i})
            _emit({"index": i, **_op_case(case_rng, timeout_s)})


def run_category(category: str, seed: int, count: int, timeout_s: float, workdir: Path) -> list[dict]:
    """Run ``count`` cases in child processes, restarting after a crash or a hang; one result per case."""
    results: list[dict] = []
    start = 0
    while start < count:
        cmd = [sys.executable, __file__, "--child", category, "--seed", str(seed), "--start", str(start),
               "--count", str(count), "--workdir", str(workdir), "--timeout", str(timeout_s)]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)
        current = None
        deadline = time.monotonic() + timeout_s + 60  # start-up (imports) included
        assert proc.stdout is not None
        while True:
            ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
            if not ready:  # the child's own alarm did not fire: a hang the parent has to end
                proc.kill()
                proc.wait()
                results.append({"index": current, "outcome": "hang", "detail": "killed by the watchdog"})
                start = (current if current is not None else start) + 1
                break
            line = proc.stdout.readline()
            if not line:  # the child died (or finished)
                rc = proc.wait()
                if current is not None:
                    results.append({"index": current, "outcome": "crash", "detail": f"exit status {rc}"})
                    start = current + 1
                else:
                    start = count
                break
            msg = json.loads(line)
            if "begin" in msg:
                current = msg["begin"]
                deadline = time.monotonic() + timeout_s + 10
            else:
                results.append(msg)
                current = None
    return results


def table(summary: dict[str, dict[str, int]]) -> str:
    """A Markdown table of the outcome counts per category."""
    head = "| category | " + " | ".join(COLUMNS) + " |"
    rows = [head, "|" + "---|" * (len(COLUMNS) + 1)]
    for cat, counts in summary.items():
        rows.append(f"| {cat} | " + " | ".join(str(counts.get(c, 0)) for c in COLUMNS) + " |")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    """Parse the arguments, run both categories, print the table (and the cases that were not clean)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--seed", type=int, default=24)
    p.add_argument("--model-mutations", type=int, default=15000)
    p.add_argument("--op-mutations", type=int, default=40000)
    p.add_argument("--timeout", type=float, default=10.0, help="seconds per case before it counts as a hang")
    p.add_argument("--json", type=Path, help="write the summary and every non-clean case here")
    p.add_argument("--child", choices=sorted(CATEGORIES), help=argparse.SUPPRESS)
    p.add_argument("--start", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--count", type=int, default=0, help=argparse.SUPPRESS)
    p.add_argument("--workdir", type=Path, help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.child:
        child(a.child, a.seed, a.start, a.count, a.workdir, a.timeout)
        return 0
    t0 = time.perf_counter()
    summary: dict[str, dict[str, int]] = {}
    bad: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory(prefix="ndflow-fuzz-") as tmp:
        for cat, n in (("model", a.model_mutations), ("op", a.op_mutations)):
            results = run_category(cat, a.seed, n, a.timeout, Path(tmp) / cat)
            counts = {c: 0 for c in COLUMNS}
            counts["tried"] = len(results)
            for r in results:
                counts[r["outcome"]] += 1
            summary[CATEGORIES[cat]] = counts
            bad[CATEGORIES[cat]] = [r for r in results if r["outcome"] != "clean"]
    import ndflow

    print(f"ndflow from {Path(ndflow.__file__).parent}, seed {a.seed}, {time.perf_counter() - t0:.0f} s")
    print(table(summary))
    for cat, rows in bad.items():
        for r in rows[:30]:
            print(f"  {cat} #{r.get('index')} {r['outcome']}: {r.get('what', '')[:80]} -> {r['detail'][:160]}")
        if len(rows) > 30:
            print(f"  {cat}: {len(rows) - 30} more")
    if a.json:
        a.json.write_text(json.dumps({"seed": a.seed, "summary": summary, "not_clean": bad}, indent=1))
    return 1 if any(rows for rows in bad.values()) else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONHASHSEED", "0")
    sys.exit(main())
