"""What the leak finder costs while its flags are off: per-op time of ``nf.add`` + ``dispose`` with the
engine as it is, against the same engine with the leak-tracking checks removed (the two hooks swapped
for copies without them). Runs alternate to cancel machine noise. The ops run on int32 tensors through the
Python engine (``C_DISPATCH`` off): float32 element-wise ops take the direct path, which has no such hooks.

    python benchmarks/leak_overhead.py [--n 100000] [--rounds 7]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

import ndflow as nf
from ndflow.core.dtypes import BYTES_PER_ELEMENT, nbytes
from ndflow.core.engine import DataInfo, Engine
from ndflow.core.tensor import Tensor


def _track_output_untracked(self, data_id, shape, dtype, backend):  # the hook without the tracker check
    info = self._data.get(data_id)
    if info is None:
        per = BYTES_PER_ELEMENT.get(dtype)
        size_bytes = per * math.prod(shape) if per is not None else nbytes(dtype, 0, backend.read_sync(data_id))
        info = self._data[data_id] = DataInfo(backend, size_bytes)
        self.num_data_buffers += 1
        self.num_bytes += size_bytes
    t = Tensor(shape, dtype, data_id, self._next_tensor_id(), info)
    self.num_tensors += 1
    if dtype == "string":
        self.num_string_tensors += 1
    scope = self.active_scope
    if scope is not None:
        t.scope_id = scope.id
        scope.track.append(t)
    return t


def _dispose_untracked(self, t):
    if t._disposed:
        return
    t._disposed = True
    self.num_tensors -= 1
    if t.dtype == "string":
        self.num_string_tensors -= 1
    info = t._info
    if info.backend.dispose_data(t.data_id):
        if self._data.pop(t.data_id, None) is not None:
            self.num_data_buffers -= 1
            self.num_bytes -= info.nbytes


def per_op_us(n: int) -> float:
    a, b = nf.tensor(np.ones(1, np.int32)), nf.tensor(np.ones(1, np.int32))
    start = time.perf_counter()
    for _ in range(n):
        nf.add(a, b).dispose()
    elapsed = (time.perf_counter() - start) / n * 1e6
    nf.dispose([a, b])
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    nf.set_backend("cpu")
    nf.env().set("C_DISPATCH", False)
    with_hooks = (Engine._track_output, Engine.dispose_tensor)
    without = (_track_output_untracked, _dispose_untracked)
    times: dict[str, list[float]] = {"with leak-finder checks (flags off)": [], "without them": []}
    per_op_us(args.n // 10)  # warm-up
    for _ in range(args.rounds):
        for label, (track, dispose) in zip(times, (with_hooks, without), strict=True):
            Engine._track_output, Engine.dispose_tensor = track, dispose
            times[label].append(per_op_us(args.n))
    Engine._track_output, Engine.dispose_tensor = with_hooks
    best = {label: min(v) for label, v in times.items()}
    base = best["without them"]
    print(f"{'engine':<40} {'us/op (best of ' + str(args.rounds) + ')':>22} {'overhead':>10}")
    for label, us in best.items():
        print(f"{label:<40} {us:22.3f} {(us / base - 1) * 100:9.1f}%")


if __name__ == "__main__":
    main()
