"""The cpu TopK kernel on long rows selects candidates (np.partition) before sorting: it must give exactly
the full sort's order (descending, ties by ascending index, NaN first), whatever the ties."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
from ndflow.backends.cpu.kernels.search import _PARTITION_FROM, _top_order


def _row(kind: str, n: int, rng: np.random.Generator) -> np.ndarray:
    if kind == "random":
        return rng.standard_normal(n).astype(np.float32)
    if kind == "few values":
        return rng.integers(-3, 3, n).astype(np.float32)
    if kind == "int32":
        return rng.integers(-5, 5, n).astype(np.int32)
    if kind == "special":
        row = rng.standard_normal(n).astype(np.float32)
        for value, count in ((np.nan, 40), (np.inf, 15), (-np.inf, 15), (-0.0, 20), (0.0, 20)):
            row[rng.integers(0, n, count)] = value
        return row
    if kind == "peaks":  # a heat map after a max-pool peak test: zeros but for a few peaks, some tied
        row = np.zeros(n, np.float32)
        row[rng.integers(0, n, n // 200)] = rng.integers(1, 50, n // 200) / 64
        return row
    row = np.zeros(n, np.float32)  # mostly ties
    row[rng.integers(0, n, 5)] = 1.0
    return row


@pytest.mark.parametrize("kind", ["random", "few values", "int32", "special", "mostly ties", "peaks"])
@pytest.mark.parametrize("sorted_", [True, False])
def test_long_rows_match_the_full_sort(kind, sorted_):
    previous = nf.get_backend()
    nf.set_backend("cpu")
    rng = np.random.default_rng(len(kind))
    try:
        cases = (
            (_PARTITION_FROM, 1),
            (_PARTITION_FROM + 7, _PARTITION_FROM // 4),
            (5000, 100),
            (3000, 3),
            (70001, 250),
        )
        for n, k in cases:
            rows = np.stack([_row(kind, n, rng) for _ in range(3)])
            x = nf.tensor(rows)
            values, indices = nf.topk(x, k, sorted_)
            want = _top_order(rows, k)
            if not sorted_:
                want = np.sort(want, axis=-1)
            np.testing.assert_array_equal(indices.array_sync(), want)
            np.testing.assert_array_equal(values.array_sync(), np.take_along_axis(rows, want, axis=-1))
            nf.dispose([x, values, indices])
    finally:
        nf.set_backend(previous)
