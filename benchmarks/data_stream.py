"""``fit_dataset`` on a CSV streams it: peak memory does not grow with the file, while loading it whole does.

    python benchmarks/data_stream.py [--rows 10000,100000] [--repeats 3] [--batch 256]

For each row count a CSV of 8 float features and a label is written once. Two ways to train one epoch of a small
MLP (8 -> 32 -> 1, sgd) on it then run in fresh interpreters, interleaved, ``--repeats`` times:

- ``stream``: ``nf.data.csv(path, column_configs={'y': {'is_label': True}})`` -> ``map`` to ``{xs: [...], ys: [...]}``
  -> ``batch`` -> ``model.fit_dataset`` (TF.js's ``fitDataset`` program);
- ``whole``: the file read into arrays first (``np.loadtxt``), then ``model.fit`` with the same batch size.

Each child reports its peak resident memory above what it held once ndflow, the model and the reader were set up
(``ru_maxrss`` after minus RSS before), the wall time of the epoch, and ``nf.memory().num_tensors`` before and after.
The table gives medians; the ratio column compares each row with the smallest file's ``stream`` row.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
from machine import describe

FEATURES = 8

CHILD = r"""
import json, resource, sys, time
import numpy as np
import ndflow as nf

path, mode, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
nf.set_backend("cpu")

def rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0

nf.layers.naming.reset_uids()
model = nf.sequential(layers=[nf.layers.dense(units=32, activation="relu", input_shape=[8]), nf.layers.dense(units=1)])
model.compile(optimizer="sgd", loss="meanSquaredError")
warm = nf.tensor(np.zeros((batch, 8), np.float32)); warm_y = nf.tensor(np.zeros((batch, 1), np.float32))
model.fit(warm, warm_y, batch_size=batch, epochs=1, verbose=0)   # the training path's first-call costs
nf.dispose([warm, warm_y])
before_tensors = nf.memory().num_tensors
before = rss_kib()
t = time.perf_counter()
if mode == "stream":
    ds = nf.data.csv(path, column_configs={"y": {"is_label": True}})
    ds = ds.map(lambda e: {"xs": list(e["xs"].values()), "ys": list(e["ys"].values())}).batch(batch)
    history = model.fit_dataset(ds, epochs=1, verbose=0)
else:
    data = np.loadtxt(path, delimiter=",", skiprows=1, dtype=np.float32)
    x, y = nf.tensor(data[:, :8]), nf.tensor(data[:, 8:])
    history = model.fit(x, y, batch_size=batch, epochs=1, shuffle=False, verbose=0)
    nf.dispose([x, y])
    del data
elapsed = time.perf_counter() - t
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"peak_mib": (peak - before) / 1024, "seconds": elapsed, "loss": history.history["loss"][-1],
                  "tensors": [before_tensors, nf.memory().num_tensors]}))
"""


def write_csv(path: Path, rows: int, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    weights = rng.standard_normal(FEATURES).astype(np.float32)
    with open(path, "w") as f:
        f.write(",".join([f"f{i}" for i in range(FEATURES)] + ["y"]) + "\n")
        for start in range(0, rows, 10_000):
            x = rng.standard_normal((min(10_000, rows - start), FEATURES)).astype(np.float32)
            y = x @ weights
            block = np.concatenate([x, y[:, None]], 1)
            f.write("\n".join(",".join(f"{v:.6g}" for v in row) for row in block) + "\n")


def run_child(path: Path, mode: str, batch: int) -> dict:
    root = Path(__file__).resolve().parents[1]
    env = dict(os.environ, PYTHONPATH=str(root) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(path), mode, str(batch)], capture_output=True, text=True, env=env, check=False
    )
    if proc.returncode != 0:
        raise SystemExit(f"{mode} on {path.name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", default="10000,100000")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--batch", type=int, default=256)
    args = parser.parse_args()
    counts = [int(r) for r in args.rows.split(",")]
    print(describe())
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for rows in counts:
            files[rows] = Path(tmp) / f"rows_{rows}.csv"
            write_csv(files[rows], rows)
        results: dict[tuple[int, str], list[dict]] = {}
        for _ in range(args.repeats):  # interleaved: every configuration once per round
            for rows in counts:
                for mode in ("stream", "whole"):
                    results.setdefault((rows, mode), []).append(run_child(files[rows], mode, args.batch))
        base = statistics.median(r["peak_mib"] for r in results[(counts[0], "stream")])
        print(f"\nfit one epoch, batch {args.batch}, median of {args.repeats} (fresh interpreter each)")
        print(f"{'rows':>8} {'file MiB':>9} {'mode':>7} {'peak MiB':>9} {'x stream@' + str(counts[0]):>14} "
              f"{'seconds':>8} {'tensors before->after':>22}")  # fmt: skip
        for rows in counts:
            size = files[rows].stat().st_size / 2**20
            for mode in ("stream", "whole"):
                runs = results[(rows, mode)]
                peak = statistics.median(r["peak_mib"] for r in runs)
                secs = statistics.median(r["seconds"] for r in runs)
                tensors = runs[-1]["tensors"]
                ratio = peak / base if base > 0 else float("nan")
                print(f"{rows:>8} {size:>9.1f} {mode:>7} {peak:>9.1f} {ratio:>14.2f} {secs:>8.2f} "
                      f"{f'{tensors[0]} -> {tensors[1]}':>22}")  # fmt: skip


if __name__ == "__main__":
    main()
