"""Draw a Chrome trace-event JSON (what ``nf.profile(fn, trace=...)`` writes) as a flame chart PNG.

    python tools/plot_trace.py TRACE.json OUT.png [--title TEXT]
    python tools/plot_trace.py --demo OUT.png      # profile a small model's predict and draw it

What the Performance tab shows, for a page or a machine without a browser: one row of bars per nesting depth on
each thread's track (the profile, then layers / graph nodes / ops, then kernels), bars as long as the slices, named
where they are wide enough, coloured by category. Needs matplotlib (``pip install 'ndflow[vis]'``).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

COLORS = {"profile": "#9e9e9e", "layer": "#4c72b0", "node": "#55a868", "op": "#8172b2", "kernel": "#dd8452"}


def _rows(events: list[dict[str, Any]]) -> dict[int, list[tuple[dict[str, Any], int]]]:
    """Each thread's complete slices with their nesting depth (a slice inside another is one deeper)."""
    tracks: dict[int, list[tuple[dict[str, Any], int]]] = {}
    by_tid: dict[int, list[dict[str, Any]]] = {}
    for e in events:
        if e.get("ph") == "X":
            by_tid.setdefault(e.get("tid", 0), []).append(e)
    for tid, slices in by_tid.items():
        slices.sort(key=lambda e: (e["ts"], -e.get("dur", 0)))
        open_ends: list[float] = []
        out = []
        for e in slices:
            while open_ends and e["ts"] >= open_ends[-1] - 1e-9:
                open_ends.pop()
            out.append((e, len(open_ends)))
            open_ends.append(e["ts"] + e.get("dur", 0))
        tracks[tid] = out
    return tracks


def plot(trace: dict[str, Any], out: str | Path, title: str = "") -> Path:
    """Draw ``trace`` (a ``{'traceEvents': [...]}`` dict) as a flame chart and save it as a PNG at ``out``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    tracks = _rows(trace["traceEvents"])
    if not tracks:
        raise ValueError("plot_trace: the trace has no complete ('X') slices")
    depth = {tid: max(d for _, d in rows) + 1 for tid, rows in tracks.items()}
    total_rows = sum(depth.values()) + len(depth) - 1
    start = min(e["ts"] for rows in tracks.values() for e, _ in rows)
    end = max(e["ts"] + e.get("dur", 0) for rows in tracks.values() for e, _ in rows)
    fig, ax = plt.subplots(figsize=(11, 0.45 * total_rows + 1.5), dpi=100)
    base = 0
    for tid, rows in sorted(tracks.items()):
        for e, d in rows:
            y = base + d
            left, width = (e["ts"] - start) / 1000, e.get("dur", 0) / 1000
            color = COLORS.get(e.get("cat", ""), "#cccccc")
            ax.broken_barh([(left, max(width, 1e-4))], (y, 0.9), facecolors=color, edgecolors="white", linewidth=0.5)
            if width > (end - start) / 1000 * 0.06:
                ax.text(left + width / 2, y + 0.45, e["name"], ha="center", va="center", fontsize=7, clip_on=True)
        base += depth[tid] + 1
    ax.set_ylim(total_rows, -0.2)
    ax.set_yticks([])
    ax.set_xlabel("ms")
    ax.set_xlim(0, (end - start) / 1000)
    handles = [plt.Rectangle((0, 0), 1, 1, color=c) for c in COLORS.values()]
    ax.legend(handles, list(COLORS), loc="upper center", bbox_to_anchor=(0.5, -0.28), fontsize=7, ncol=len(COLORS),
              frameon=False)  # fmt: skip
    ax.set_title(title or "trace", fontsize=9)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out)
    plt.close(fig)
    return out


def demo_trace() -> dict[str, Any]:
    """The trace of a small model's predict, profiled on the cpu backend."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    import ndflow as nf

    nf.set_backend("cpu")
    model = nf.sequential(
        {
            "layers": [
                nf.layers.conv2d({"filters": 8, "kernelSize": 3, "activation": "relu", "inputShape": [32, 32, 3]}),
                nf.layers.max_pooling2d({"poolSize": 2}),
                nf.layers.flatten(),
                nf.layers.dense({"units": 10, "activation": "softmax"}),
            ]
        }
    )
    x = nf.ones([4, 32, 32, 3])
    nf.dispose(model.predict(x))  # warm-up: the profile shows steady-state kernels

    def run() -> None:
        nf.dispose(model.predict(x))

    trace = nf.profile(run).to_chrome_trace()
    x.dispose()
    model.dispose()
    return trace


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="TRACE.json OUT.png, or OUT.png with --demo")
    parser.add_argument("--demo", action="store_true", help="profile a small model's predict and draw that")
    parser.add_argument("--title", default="")
    args = parser.parse_args(argv)
    if args.demo and len(args.paths) == 1:
        trace, title = demo_trace(), args.title or "nf.profile of a small CNN's predict (cpu)"
    elif not args.demo and len(args.paths) == 2:
        trace, title = json.loads(Path(args.paths[0]).read_text()), args.title or Path(args.paths[0]).name
    else:
        parser.error("give TRACE.json OUT.png, or --demo OUT.png")
    print(plot(trace, args.paths[-1], title))
    return 0


if __name__ == "__main__":
    sys.exit(main())
