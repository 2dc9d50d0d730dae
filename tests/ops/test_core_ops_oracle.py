"""ndflow core ops against reference results of real TF.js 4.22 (cpu backend).

The cases live in ``tests/fixtures/core_ops.json``; regenerate them with
``python tests/fixtures/gen_core_ops.py`` (needs Node and ``../shared/oracle``).
Each case id is ``<snake_case op>__<description>``; the op is called positionally, as in TF.js:
``getattr(nf, snake_op)(*args)`` with tensors as ndflow tensors, lists of tensors as Python lists
and every other JSON literal passed unchanged (``null`` -> ``None``).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_cases import case_ids, load_cases, run_case

import ndflow as nf

# Cases where ndflow deliberately does better than TF.js 4.22 (docs/beyond-tfjs.md); each is
# checked against its own expectation below instead of against TF.js.
BEYOND_TFJS = {
    "softmax__dim0_error": "TF.js supports softmax only along the last axis; ndflow along any axis",
    "sum__duplicate_axis": "TF.js returns a wrong shape for a repeated axis; ndflow raises a clear error",
}
CASES = load_cases("core_ops", BEYOND_TFJS)


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_core_op_matches_tfjs(case, backend):
    """``backend`` (tests/conftest.py) runs every case on each available backend."""
    run_case(case)


def test_beyond_tfjs_softmax_any_axis(backend):
    x = np.array([[-0.36478516, 0.3462482], [-0.95567846, 0.7387664]], np.float32)
    t = nf.tensor(x)
    y = nf.softmax(t, 0)
    want = np.exp(x) / np.exp(x).sum(axis=0, keepdims=True)
    np.testing.assert_allclose(y.numpy(), want, atol=1e-6)
    nf.dispose([t, y])


def test_beyond_tfjs_sum_duplicate_axis(backend):
    t = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(ValueError, match="sum: argument 'axis' .* duplicate"):
        nf.sum(t, [0, 0])
    t.dispose()
