"""Gradients of the slicing, shape-transform and selection kernels (Concat, Pack, Unpack, SplitV,
Slice, StridedSlice, GatherV2, Tile, Reverse, PadV2, MirrorPad, SpaceToBatchND, BatchToSpaceND,
DepthToSpace, OneHot, Select, GatherNd, ScatterNd, TensorScatterUpdate, Einsum), checked against
TF.js 4.22's own gradients (``tests/fixtures/grad_transform.json``, from ``gen_grad_transform.py``)
and against central finite differences in float64.
"""

from __future__ import annotations

import numpy as np
import pytest
from grad_cases import check_finite_differences, check_grad_case
from oracle_cases import _build, case_ids, load_cases, resolve_op
from test_grad_core import check_case_by_finite_differences

import ndflow as nf
from ndflow.core.kernel_registry import get_gradient

_NO_TFJS_GRADIENT = "TF.js has no gradient for this kernel; ndflow's is checked by finite differences"
# Where ndflow's gradient deliberately differs from TF.js 4.22 (checked by finite differences).
BEYOND_TFJS = {
    **{
        cid: _NO_TFJS_GRADIENT
        for cid in (
            "strided_slice__step2",
            "strided_slice__negative_stride",
            "strided_slice__masks",
            "strided_slice__shrink",
            "strided_slice__new_axis",
            "depth_to_space__nhwc",
            "gather_nd__basic",
            "gather_nd__slices",
            "scatter_nd__basic",
            "tensor_scatter_update__basic",
            "einsum__matmul",
        )
    },
    "gather__batch_dims2": "TF.js's gradient handles batch_dims 0 and 1 only (it throws); ndflow any",
    "tile__rank5": "TF.js's gradient handles ranks 1 to 4 only (it throws); ndflow any rank",
    "mirror_pad__reflect": "TF.js only crops dy, dropping the mirrored borders' share; ndflow adds it back",
    "mirror_pad__symmetric": "TF.js only crops dy, dropping the mirrored borders' share; ndflow adds it back",
    "mirror_pad__reflect_1d": "TF.js only crops dy, dropping the mirrored borders' share; ndflow adds it back",
    "one_hot__indices": "int32 tensors carry no gradient in ndflow (an error names it); TF.js returns zeros",
}
INTEGER_WRT = {"one_hot__indices"}

ALL = load_cases("grad_transform")
CASES = [c for c in ALL if c["id"] not in BEYOND_TFJS]
BEYOND_CASES = [c for c in ALL if c["id"] in BEYOND_TFJS]


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_gradient_matches_tfjs(case, backend):
    check_grad_case(case)


@pytest.mark.parametrize("case", BEYOND_CASES, ids=case_ids(BEYOND_CASES))
def test_beyond_tfjs(case, backend):
    assert "grad_error" in case or "grads" in case  # the fixture records what TF.js did
    if case["id"] in INTEGER_WRT:
        _, op = resolve_op(case)
        created: list = []
        try:
            args = _build(case["args"], created)
            with pytest.raises(ValueError, match="does not depend on x"):
                nf.grads(lambda i: op(i, *args[1:]))([args[0]], _build(case["grad"]["dy"], created))
        finally:
            nf.dispose(created)
    else:
        check_case_by_finite_differences(case)


def test_mirror_pad_gradient_counts_each_copy(backend):
    """Each input element's gradient is the number of places it appears in the padded output."""
    x = nf.tensor([1.0, 2.0, 3.0, 4.0])
    g_reflect = nf.grad(lambda t: nf.mirror_pad(t, [[2, 3]], "reflect"))(x)
    g_symmetric = nf.grad(lambda t: nf.mirror_pad(t, [[2, 3]], "symmetric"))(x)
    try:  # reflect: 3 2 | 1 2 3 4 | 3 2 1   symmetric: 2 1 | 1 2 3 4 | 4 3 2
        assert g_reflect.numpy().tolist() == [2, 3, 3, 1]
        assert g_symmetric.numpy().tolist() == [2, 3, 2, 2]
    finally:
        nf.dispose([x, g_reflect, g_symmetric])


def test_tensor_scatter_update_duplicates_last_update_wins(backend):
    """Of duplicate indices only the update that was written (the last) gets a gradient."""
    t = nf.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    idx = nf.tensor([[1], [0], [1]], None, "int32")
    u = nf.tensor([[10.0, 20.0], [30.0, 40.0], [50.0, 60.0]])
    dy = nf.tensor([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    dt, du = nf.grads(lambda a, b: nf.tensor_scatter_update(a, idx, b))([t, u], dy)
    try:
        assert dt.numpy().tolist() == [[0, 0], [0, 0], [5, 6]]
        assert du.numpy().tolist() == [[0, 0], [1, 2], [3, 4]]
    finally:
        nf.dispose([t, idx, u, dy, dt, du])


def test_getitem_is_differentiable(backend):
    x = nf.tensor(np.arange(12, dtype=np.float32).reshape(3, 4))
    g = nf.grad(lambda t: t[1:, ::2] * 2.0)(x)
    try:
        assert g.numpy().tolist() == [[0, 0, 0, 0], [2, 0, 2, 0], [2, 0, 2, 0]]
    finally:
        nf.dispose([x, g])


def test_integer_inputs_get_no_gradient(backend):
    """Indices are not differentiated: gather's gradient flows to x only."""
    x = nf.tensor([1.0, 2.0, 3.0])
    idx = nf.tensor([2, 0], None, "int32")
    with pytest.raises(ValueError, match="does not depend on x"):
        nf.grad(lambda i: nf.gather(x, i))(idx)
    nf.dispose([x, idx])


# ----------------------------------------------------------------------------- finite differences

rng = np.random.default_rng(7)


def N(*shape):
    return rng.standard_normal(shape)


def ints(values):
    return nf.tensor(np.asarray(values, np.int32), list(np.shape(values)), "int32")


def _weighted(parts):
    """A sum of the parts with distinct weights, so that every output's gradient is checked."""
    total = parts[0]
    for i, p in enumerate(parts[1:]):
        total = nf.add(total, nf.mul(p, float(i + 2)))
    return total


def _with_indices(values, fn):
    """``fn`` with an int32 tensor made (and freed) around each call."""

    def run(*xs):
        idx = ints(values)
        try:
            return fn(idx, *xs)
        finally:
            idx.dispose()

    return run


FD = {
    "concat": (lambda a, b, c: nf.concat([a, b, c], 1), [N(2, 1), N(2, 3), N(2, 2)]),
    "concat_same_input_twice": (lambda a: nf.concat([a, a * 2.0], 0), [N(2, 2)]),
    "stack": (lambda a, b: nf.stack([a, b], 1), [N(2, 3), N(2, 3)]),
    "unstack_all": (lambda x: _weighted(nf.unstack(x, 1)), [N(2, 3, 2)]),
    "unstack_some": (lambda x: nf.unstack(x)[1], [N(3, 2)]),
    "split_all": (
        lambda x: nf.concat([p * float(i + 1) for i, p in enumerate(nf.split(x, [1, 2, 3], 1))], 1),
        [N(2, 6)],
    ),
    "split_one": (lambda x: nf.split(x, 3)[2], [N(6, 2)]),
    "slice": (lambda x: nf.slice(x, [1, 0, 1], [2, -1, 1]), [N(3, 2, 3)]),
    "strided_slice": (lambda x: nf.strided_slice(x, [4, 0], [0, 6], [-1, 2], 0, 0, 0, 0, 0), [N(5, 6)]),
    "getitem": (lambda x: x[1:, ::2], [N(3, 5)]),
    "getitem_negative_steps": (lambda x: x[::-2, 3:0:-1], [N(5, 4)]),
    "getitem_int_newaxis_ellipsis": (lambda x: x[1, None, ..., -1], [N(3, 2, 4)]),
    "getitem_scalar": (lambda x: x[2, 1], [N(3, 2)]),
    "gather_axis0": (_with_indices([0, 2, 2, 4], lambda i, x: nf.gather(x, i)), [N(5, 3)]),
    "gather_axis1_2d_indices": (_with_indices([[3, 1], [1, 1]], lambda i, x: nf.gather(x, i, 1)), [N(2, 4, 2)]),
    "gather_batch_dims1": (_with_indices([[0, 3], [2, 2]], lambda i, x: nf.gather(x, i, 1, 1)), [N(2, 4, 3)]),
    "gather_batch_dims2": (
        _with_indices([[[0, 2], [1, 1]], [[2, 2], [0, 1]]], lambda i, x: nf.gather(x, i, 2, 2)),
        [N(2, 2, 3)],
    ),
    "tile": (lambda x: nf.tile(x, [2, 1, 3]), [N(2, 2, 1)]),
    "tile_rank5": (lambda x: nf.tile(x, [2, 1, 2, 1, 2]), [N(1, 2, 1, 2, 1)]),
    "tile_scalar": (lambda x: nf.tile(x, []), [np.array(1.5)]),
    "reverse": (lambda x: nf.reverse(x, [0, 2]), [N(2, 3, 2)]),
    "pad": (lambda x: nf.pad(x, [[1, 2], [0, 1]], 3.0), [N(2, 3)]),
    "mirror_pad_reflect": (lambda x: nf.mirror_pad(x, [[2, 1], [1, 2]], "reflect"), [N(3, 4)]),
    "mirror_pad_symmetric": (lambda x: nf.mirror_pad(x, [[3, 2], [0, 2]], "symmetric"), [N(3, 4)]),
    "space_to_batch_nd": (lambda x: nf.space_to_batch_nd(x, [2, 2], [[1, 1], [2, 0]]), [N(2, 2, 4, 1)]),
    "batch_to_space_nd": (lambda x: nf.batch_to_space_nd(x, [2, 2], [[0, 1], [1, 0]]), [N(4, 2, 2, 2)]),
    "depth_to_space_nhwc": (lambda x: nf.depth_to_space(x, 2), [N(2, 2, 3, 8)]),
    "depth_to_space_nchw": (lambda x: nf.depth_to_space(x, 2, "NCHW"), [N(2, 8, 2, 3)]),
    "where": (
        lambda a, b: nf.where(nf.greater(a, 0.0), a, b),
        [np.array([[0.5, -0.7, 1.2], [-0.3, 0.9, -1.1]]), N(2, 3)],
    ),
    "where_bcast": (
        _with_indices([[1], [0]], lambda c, a, b: nf.where(nf.cast(c, "bool"), a, b)),
        [N(3), N(2, 1)],
    ),
    "gather_nd": (_with_indices([[0, 1], [2, 0], [0, 1]], lambda i, x: nf.gather_nd(x, i)), [N(3, 2)]),
    "gather_nd_slices": (_with_indices([[2], [0], [2]], lambda i, x: nf.gather_nd(x, i)), [N(3, 2, 2)]),
    "gather_nd_rank1_indices": (_with_indices([1, 0], lambda i, x: nf.gather_nd(x, i)), [N(3, 2, 2)]),
    "scatter_nd": (_with_indices([[1], [3], [1]], lambda i, u: nf.scatter_nd(i, u, [4, 2])), [N(3, 2)]),
    "scatter_nd_rank1_indices": (_with_indices([2, 0, 2], lambda i, u: nf.scatter_nd(i, u, [3, 2])), [N(3, 2)]),
    "tensor_scatter_update": (
        _with_indices([[3], [0]], lambda i, t, u: nf.tensor_scatter_update(t, i, u)),
        [N(4, 2), N(2, 2)],
    ),
    "tensor_scatter_update_duplicates": (
        _with_indices([[1, 0], [2, 1], [1, 0]], lambda i, t, u: nf.tensor_scatter_update(t, i, u)),
        [N(3, 2), N(3)],
    ),
    "einsum_matmul": (lambda a, b: nf.einsum("ij,jk->ik", a, b), [N(2, 3), N(3, 4)]),
    "einsum_batch": (lambda a, b: nf.einsum("bij,bjk->bik", a, b), [N(2, 2, 3), N(2, 3, 2)]),
    "einsum_transpose": (lambda a: nf.einsum("ij->ji", a), [N(2, 3)]),
    "einsum_reduce": (lambda a: nf.einsum("ijk->i", a), [N(2, 3, 2)]),
    "einsum_dot": (lambda a, b: nf.einsum("i,i->", a, b), [N(4), N(4)]),
    "einsum_outer": (lambda a, b: nf.einsum("ij,k->ikj", a, b), [N(2, 3), N(2)]),
    "einsum_summed_apart": (lambda a, b: nf.einsum("ij,jk->i", a, b), [N(2, 3), N(3, 4)]),
}


@pytest.mark.parametrize("name", list(FD))
def test_finite_differences(name):
    fn, arrays = FD[name]
    check_finite_differences(fn, arrays)


# These kernels are linear; second derivatives through them (composed with a non-linear op) check
# that their gradients are themselves differentiable.
SECOND = {
    "concat": lambda x: nf.concat([x, x.square()], 0).square().sum(),
    "stack_unstack": lambda x: _weighted(nf.unstack(nf.stack([x, x.square()], 1), 1)).square().sum(),
    "split": lambda x: nf.mul(*nf.split(x, 2)).sum(),
    "slice": lambda x: nf.slice(x, [1], [2]).pow(3).sum(),
    "strided_slice": lambda x: (x[::2] ** 3).sum(),
    "gather": lambda x: nf.gather(x, nf.tensor([0, 2, 2], None, "int32")).pow(3).sum(),
    "tile": lambda x: nf.tile(x, [3]).pow(3).sum(),
    "reverse": lambda x: nf.mul(nf.reverse(x), x).pow(2).sum(),
    "pad": lambda x: nf.pad(x, [[1, 2]]).pow(3).sum(),
    "mirror_pad": lambda x: nf.mirror_pad(x, [[2, 1]], "reflect").pow(3).sum(),
    "where": lambda x: nf.where(nf.tensor([True, False, True, False]), x.pow(3), x.square()).sum(),
    "gather_nd": lambda x: nf.gather_nd(x, nf.tensor([[1], [3], [1]], None, "int32")).pow(3).sum(),
    "scatter_nd": lambda x: nf.scatter_nd(nf.tensor([[1], [0], [1], [2]], None, "int32"), x, [3]).pow(3).sum(),
    "tensor_scatter_update": lambda x: (
        nf.tensor_scatter_update(x.square(), nf.tensor([[0], [2]], None, "int32"), x.slice([1], [2]).pow(3))
        .pow(2)
        .sum()
    ),
    "einsum": lambda x: nf.einsum("i,j->ij", x, x.square()).square().sum(),
}


# The gradient of gather's gradient is UnsortedSegmentSum's (another family's; TF.js has one).
NEEDS_SEGMENT_SUM_GRADIENT = pytest.mark.skipif(
    get_gradient("UnsortedSegmentSum") is None, reason="no gradient is registered for UnsortedSegmentSum yet"
)


@pytest.mark.parametrize(
    "name", [pytest.param(k, marks=[NEEDS_SEGMENT_SUM_GRADIENT] if k == "gather" else []) for k in SECOND]
)
def test_second_derivative_by_finite_differences(name):
    f = SECOND[name]
    check_finite_differences(lambda x: nf.grad(f)(x), [N(4)])


def test_memory_returns_after_gradients_of_every_kernel(backend):
    """Nothing the tape saved (clones of inputs, index tensors) outlives the gradient call."""
    x = nf.tensor(N(4, 4).astype(np.float32))
    idx = nf.tensor([[1, 2], [3, 0]], None, "int32")
    before = nf.memory().num_tensors

    def f(t):
        parts = [
            nf.concat([t, t], 0).sum(),
            nf.gather(t, idx).sum(),
            nf.gather_nd(t, idx).sum(),
            nf.mirror_pad(t, [[1, 1], [2, 0]], "symmetric").sum(),
            t[1:, ::2].sum(),
            nf.tile(t, [1, 2]).sum(),
            nf.where(nf.greater(t, 0.0), t, t.square()).sum(),
            nf.tensor_scatter_update(t, idx, nf.tensor([1.0, 2.0])).sum(),
            nf.einsum("ij,jk->", t, t),
        ]
        return _weighted(parts)

    g = nf.grad(f)(x)
    assert nf.memory().num_tensors == before + 1
    nf.dispose([x, idx, g])
