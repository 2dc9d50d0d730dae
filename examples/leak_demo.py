#!/usr/bin/env python3
"""The memory guide's render loop: it leaks, then ``dispose`` fixes it, then ``tidy`` does.

Each "frame" makes a few tensors (an input, a matrix product, an activation) and reads a value
to "draw". Without cleanup every frame leaves its tensors behind and ``nf.memory().num_tensors``
grows; disposing them by hand, or running the frame inside ``nf.tidy``, keeps it flat. Last,
the leak finder (flag ``TRACK_LEAKS``, beyond TF.js) names the line that leaked.

    python examples/leak_demo.py [--frames 5]
"""

from __future__ import annotations

import argparse

import ndflow as nf

WEIGHTS_SHAPE = [32, 32]


def frame_leaky(weights: nf.Tensor, frame: int) -> float:
    """A frame that never frees what it makes: 3 tensors per frame stay allocated."""
    x = nf.random_normal([1, 32], seed=frame)
    y = nf.mat_mul(x, weights)
    z = nf.relu(y)
    return float(z.data_sync()[0])  # "draw"


def frame_dispose(weights: nf.Tensor, frame: int) -> float:
    """The same frame, disposing each tensor by hand once the value is read."""
    x = nf.random_normal([1, 32], seed=frame)
    y = nf.mat_mul(x, weights)
    z = nf.relu(y)
    value = float(z.data_sync()[0])
    nf.dispose([x, y, z])
    return value


def frame_tidy(weights: nf.Tensor, frame: int) -> float:
    """The same frame inside ``tidy``: everything it creates is freed when it returns."""
    return nf.tidy(lambda: float(nf.relu(nf.mat_mul(nf.random_normal([1, 32], seed=frame), weights)).data_sync()[0]))


def render(name: str, frame_fn, weights: nf.Tensor, frames: int) -> list[int]:
    """Run ``frames`` frames and print the tensor count after each."""
    counts = []
    print(f"== {name} ==")
    for frame in range(frames):
        frame_fn(weights, frame)
        counts.append(nf.memory().num_tensors)
        print(f"frame {frame}: num_tensors = {counts[-1]}")
    growth = counts[-1] - counts[0]
    print(f"{name}: {'+' if growth >= 0 else ''}{growth} tensors over {frames - 1} more frames")
    return counts


def find_the_leak() -> None:
    """With ``TRACK_LEAKS`` the engine records where each tensor was made and reports dropped ones."""
    print("== leak finder ==")
    nf.env().set("TRACK_LEAKS", True)
    weights = nf.ones(WEIGHTS_SHAPE)
    try:
        with nf.expect_no_leaks():
            frame_leaky(weights, 0)
    except nf.LeakError as exc:
        for line in str(exc).splitlines():
            print(line.replace(__file__, "leak_demo.py"))
    finally:
        weights.dispose()
        nf.env().set("TRACK_LEAKS", False)


def main() -> None:
    """Command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=5)
    args = parser.parse_args()
    weights = nf.ones(WEIGHTS_SHAPE)
    start = nf.memory().num_tensors
    print(f"start: num_tensors = {start}")
    leaked = render("leaky", frame_leaky, weights, args.frames)
    render("dispose", frame_dispose, weights, args.frames)
    render("tidy", frame_tidy, weights, args.frames)
    print(f"the leaky loop left {leaked[-1] - start} tensors behind; nothing can free them now")
    weights.dispose()
    find_the_leak()


if __name__ == "__main__":
    main()
