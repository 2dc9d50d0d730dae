"""Shape transforms (split, unstack, tile, reverse*, pad*, mirror_pad, space/batch/depth, broadcast_to,
broadcast_args, meshgrid, one_hot, concat1d..4d, slice1d..4d, ensure_shape) and every mask of
strided_slice, against real TF.js 4.22 (cpu backend).

The cases live in ``tests/fixtures/transform.json``; regenerate them with
``python tests/fixtures/gen_transform.py`` (needs Node and ``../shared/oracle``).
"""

from __future__ import annotations

import numpy as np
import pytest
from oracle_cases import load_cases, run_case

import ndflow as nf

# Places where ndflow deliberately differs from TF.js 4.22; each is checked below against numpy
# (or against ndflow's own float32 path, which the fixture checks against TF.js).
COMPLEX_CASES = [
    "split__complex", "unstack__complex", "tile__complex", "reverse__complex", "pad__complex",
    "mirror_pad__complex", "space_to_batch_nd__complex", "broadcast_to__complex",
]  # fmt: skip
BEYOND_TFJS = {
    **{cid: "TF.js's cpu kernel refuses complex64; ndflow's numpy kernels handle it" for cid in COMPLEX_CASES},
    "split__sizes_infer_first": "TF.js counts a leading -1 into the known sizes and then fails; ndflow infers it",
    "reverse__duplicate_axis": "TF.js reverses a repeated axis twice (a no-op); ndflow raises a clear error",
    "pad__too_few_paddings": "TF.js returns a tensor of the wrong rank; ndflow raises a clear error",
    "pad__negative_padding": "TF.js returns garbage for negative paddings; ndflow raises a clear error",
    "pad1d__rank2": "TF.js pads a rank-2 tensor to a wrong rank-1 result; ndflow raises a clear error",
    "batch_to_space_nd__crops_too_big": "TF.js returns a tensor of negative extent; ndflow raises a clear error",
    "batch_to_space_nd__empty_block": "TF.js crashes on reduce([]); ndflow returns x unchanged (as TensorFlow)",
    "depth_to_space__nchw_cpu_unsupported": "TF.js's cpu kernel supports NHWC only; ndflow also does NCHW",
    "one_hot__depth_fraction": "TF.js builds a tensor of shape [2, 2.5]; ndflow raises a TypeError",
    "broadcast_to__to_zero": "TF.js returns the input shape [1, 2] instead of [0, 2]; ndflow broadcasts",
    "concat1d__mixed_dtypes": "TF.js keeps the first tensor's dtype (truncating floats); ndflow's concat upcasts",
    "strided_slice__empty_begin_after_end": "TF.js fails on an empty slice begin > end; ndflow returns it",
    "strided_slice__empty_begin_after_end_2d": "TF.js fails on an empty slice begin > end; ndflow returns it",
    "strided_slice__shrink_with_stride": "TF.js gives wrong values when shrinking with a stride elsewhere",
    "strided_slice__shrink_with_stride_3d": "TF.js reads out of range when shrinking with a stride elsewhere",
    "strided_slice__all_masks": "TF.js reads out of range when shrinking with a stride elsewhere",
    "strided_slice__strides_shorter": "TF.js silently drops begin/end entries past len(strides); ndflow raises",
    "strided_slice__begin_shorter_no_strides": "TF.js silently drops end entries past len(begin); ndflow raises",
}
CASES = load_cases("transform", BEYOND_TFJS)
ALL_CASES = {c["id"]: c for c in load_cases("transform")}


PARAMS = [pytest.param(c, id=c["id"]) for c in CASES]


@pytest.mark.parametrize("case", PARAMS)
def test_transform_matches_tfjs(case, backend, monkeypatch):
    """``backend`` (tests/conftest.py) runs every case on each available backend."""
    if case["op"] == "meshgrid":  # TF.js's config object {indexing} is a keyword argument in ndflow
        meshgrid = nf.meshgrid

        def positional_config(*args):
            if args and isinstance(args[-1], dict):
                return meshgrid(*args[:-1], **args[-1])
            return meshgrid(*args)

        monkeypatch.setattr(nf, "meshgrid", positional_config)
    run_case(case)


# ----------------------------------------------------------------------------- beyond TF.js


def _array(spec: dict) -> np.ndarray:
    values, dtype = spec["values"], spec["dtype"]
    if dtype == "complex64":
        values = [complex(r, i) for r, i in zip(values[0::2], values[1::2], strict=True)]
    np_dtype = {"float32": np.float32, "int32": np.int32, "bool": np.bool_, "complex64": np.complex64}[dtype]
    return np.array(values, dtype=np_dtype).reshape(spec["shape"])


def _args(case: dict, created: list, as_numpy: bool = False) -> list:
    """The case's arguments: tensors as ndflow tensors (kept in ``created``) or numpy arrays."""

    def build(arg):
        if isinstance(arg, list):
            return [build(a) for a in arg]
        if isinstance(arg, dict) and "tensor" in arg:
            a = _array(arg["tensor"])
            if as_numpy:
                return a
            t = nf.tensor(a, list(a.shape), arg["tensor"]["dtype"])
            created.append(t)
            return t
        return arg

    return [build(a) for a in case["args"]]


def _outputs(result) -> list:
    return list(result) if isinstance(result, tuple | list) else [result]


@pytest.mark.parametrize("cid", COMPLEX_CASES)
def test_beyond_tfjs_complex_inputs(cid, backend):
    """A complex op result equals the op on the real part plus 1j times the op on the imaginary part."""
    case = ALL_CASES[cid]
    op = getattr(nf, cid.split("__")[0])
    created: list = []
    args = _args(case, created)
    x = args[0]
    re, im = nf.tensor(x.numpy().real.copy()), nf.tensor(x.numpy().imag.copy())
    created += [re, im]
    got, got_re, got_im = (_outputs(op(v, *args[1:])) for v in (x, re, im))
    try:
        assert len(got) == len(got_re)
        for g, r, i in zip(got, got_re, got_im, strict=True):
            assert g.dtype == "complex64" and g.shape == r.shape
            np.testing.assert_array_equal(g.numpy(), r.numpy() + 1j * i.numpy())
    finally:
        nf.dispose(created + got + got_re + got_im)


RAISES = [
    "reverse__duplicate_axis", "pad__too_few_paddings", "pad__negative_padding", "pad1d__rank2",
    "batch_to_space_nd__crops_too_big", "one_hot__depth_fraction",
    "strided_slice__strides_shorter", "strided_slice__begin_shorter_no_strides",
]  # fmt: skip


@pytest.mark.parametrize("cid", RAISES)
def test_beyond_tfjs_clear_errors(cid, backend):
    case = ALL_CASES[cid]
    name = cid.split("__")[0]
    created: list = []
    args = _args(case, created)
    try:
        with pytest.raises((ValueError, TypeError), match=f"^{name}: "):
            getattr(nf, name)(*args)
    finally:
        nf.dispose(created)


# id -> numpy reference of the outputs, from the case's arguments as numpy arrays
NUMPY_REFERENCE = {
    "split__sizes_infer_first": lambda x, sizes, axis: np.split(x, [3], axis),
    "batch_to_space_nd__empty_block": lambda x, block, crops: [x],
    "depth_to_space__nchw_cpu_unsupported": lambda x, bs, fmt: [
        x.reshape(1, bs, bs, 2, 2, 1).transpose(0, 3, 4, 1, 5, 2).reshape(1, 2, 2 * bs, bs)
    ],
    "broadcast_to__to_zero": lambda x, shape: [np.broadcast_to(x, shape)],
    "concat1d__mixed_dtypes": lambda tensors: [np.concatenate(tensors).astype(np.float32)],
    "strided_slice__empty_begin_after_end": lambda x, *spec: [x[4:1:1]],
    "strided_slice__empty_begin_after_end_2d": lambda x, *spec: [x[0:2, 3:1]],
    "strided_slice__shrink_with_stride": lambda x, *spec: [x[0:2:2, 1]],
    "strided_slice__shrink_with_stride_3d": lambda x, *spec: [x[1, 0:3, 0:4:2]],
    "strided_slice__all_masks": lambda x, *spec: [x[1, ..., None, :3:2, 3::-1]],
}


@pytest.mark.parametrize("cid", sorted(NUMPY_REFERENCE))
def test_beyond_tfjs_values(cid, backend):
    case = ALL_CASES[cid]
    want = NUMPY_REFERENCE[cid](*_args(case, [], as_numpy=True))
    created: list = []
    got = _outputs(getattr(nf, cid.split("__")[0])(*_args(case, created)))
    try:
        assert len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            assert g.shape == w.shape
            np.testing.assert_array_equal(g.numpy(), w)
    finally:
        nf.dispose(created + got)


def test_beyond_tfjs_list_is_complete():
    tested = set(COMPLEX_CASES) | set(RAISES) | set(NUMPY_REFERENCE)
    assert tested == set(BEYOND_TFJS)


# ----------------------------------------------------------------------------- behaviour beyond the fixture


def test_depth_to_space_nchw_is_nhwc_transposed(backend):
    x = np.random.default_rng(0).standard_normal((2, 12, 3, 2)).astype(np.float32)
    t = nf.tensor(x)
    nchw = nf.depth_to_space(t, 2, "NCHW")
    nhwc_in = nf.transpose(t, [0, 2, 3, 1])
    nhwc = nf.depth_to_space(nhwc_in, 2)
    back = nf.transpose(nhwc, [0, 3, 1, 2])
    assert nchw.shape == (2, 3, 6, 4)
    np.testing.assert_array_equal(nchw.numpy(), back.numpy())
    nf.dispose([t, nchw, nhwc_in, nhwc, back])


@pytest.mark.parametrize(
    "shape,block,pads",
    [((2, 4, 6, 3), [2, 3], [[1, 1], [0, 0]]), ((1, 5, 2), [3], [[1, 0]]), ((3, 2, 2, 2, 1), [2, 1, 2], [[0, 0]] * 3)],
)
def test_space_to_batch_round_trip(shape, block, pads, backend):
    x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    t = nf.tensor(x)
    s = nf.space_to_batch_nd(t, block, pads)
    b = nf.batch_to_space_nd(s, block, pads)
    assert s.shape[0] == shape[0] * int(np.prod(block))
    np.testing.assert_array_equal(b.numpy(), x)
    nf.dispose([t, s, b])


def test_kernels_read_inputs_that_share_a_reshaped_buffer(backend):
    """A Reshape output shares its input's buffer; the kernels must use the tensor's own shape."""

    def check():
        flat = nf.tensor(np.arange(12, dtype=np.float32))
        x = nf.reshape(flat, [3, 4])
        idx = nf.reshape(nf.tensor([0, 1, 2, 1], dtype="int32"), [2, 2])
        ref = np.arange(12, dtype=np.float32).reshape(3, 4)
        cases = {
            "split": (nf.split(x, 2, 1)[1], ref[:, 2:]),
            "unstack": (nf.unstack(x, 1)[3], ref[:, 3]),
            "tile": (nf.tile(x, [1, 2]), np.tile(ref, [1, 2])),
            "reverse": (nf.reverse(x, 1), ref[:, ::-1]),
            "pad": (nf.pad(x, [[1, 0], [0, 1]]), np.pad(ref, [[1, 0], [0, 1]])),
            "mirror_pad": (nf.mirror_pad(x, [[1, 1], [2, 0]], "reflect"), np.pad(ref, [[1, 1], [2, 0]], "reflect")),
            "broadcast_to": (nf.broadcast_to(nf.reshape(flat, [1, 12]), [2, 12]), np.tile(ref.reshape(1, 12), [2, 1])),
            "space_to_batch_nd": (
                nf.space_to_batch_nd(nf.reshape(flat, [1, 3, 4, 1]), [1, 2], [[0, 0], [0, 0]]),
                ref.reshape(3, 2, 2).transpose(2, 0, 1).reshape(2, 3, 2, 1),
            ),
            "depth_to_space": (
                nf.depth_to_space(nf.reshape(flat, [1, 1, 3, 4]), 2),
                ref.reshape(1, 1, 3, 2, 2, 1).transpose(0, 1, 3, 2, 4, 5).reshape(1, 2, 6, 1),
            ),
            "one_hot": (nf.one_hot(idx, 3), np.eye(3, dtype=np.int32)[[[0, 1], [2, 1]]]),
        }
        for name, (got, want) in cases.items():
            assert got.shape == want.shape, name
            np.testing.assert_array_equal(got.numpy(), want, err_msg=name)

    nf.tidy(check)


def test_chained_methods(backend):
    def check():
        x = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
        results = [
            *x.split(2),
            *x.unstack(1),
            x.tile([1, 2]),
            x.reverse(0),
            x.pad([[0, 1], [1, 0]], 9),
            x.mirror_pad([[1, 1], [0, 0]], "symmetric"),
            x.broadcast_to([3, 2, 2]),
            nf.tensor([0, 1], dtype="int32").one_hot(2),
            x.reshape([1, 1, 1, 4]).depth_to_space(2),
            x.reshape([1, 4, 1]).space_to_batch_nd([2], [[0, 0]]),
            x.reshape([4, 1, 1]).batch_to_space_nd([2], [[0, 0]]),
        ]
        assert [r.shape for r in results] == [
            (1, 2), (1, 2), (2,), (2,), (2, 4), (2, 2), (3, 3), (4, 2), (3, 2, 2), (2, 2), (1, 2, 2, 1),
            (2, 2, 1), (2, 2, 1),
        ]  # fmt: skip
        np.testing.assert_array_equal(results[5].numpy(), [[3, 4], [1, 2]])

    nf.tidy(check)


def test_meshgrid_single_input_is_returned(backend):
    x = nf.tensor([1, 2, 3], dtype="int32")
    (only,) = nf.meshgrid(x)
    assert only is x
    assert nf.meshgrid() == ()
    x.dispose()


def test_ensure_shape_returns_the_input(backend):
    x = nf.tensor([[1.0, 2.0, 3.0]])
    assert nf.ensure_shape(x, [None, 3]) is x
    y = nf.ensure_shape([1, 2], [2])
    assert y.shape == (2,) and y is not x
    nf.dispose([x, y])


@pytest.mark.parametrize(
    "call",
    [
        lambda: nf.split([1.0, 2.0, 3.0], 2),
        lambda: nf.meshgrid([1.0, 2.0], ["a"]),
        lambda: nf.ensure_shape([1.0, 2.0], [3]),
        lambda: nf.pad([1.0], [[1, 1], [1, 1]]),
        lambda: nf.one_hot([1.5, 2], 3, dtype="string"),
        lambda: nf.broadcast_args([1, 2], [[3]]),
        lambda: nf.slice2d([1.0, 2.0], [0, 0], [1, 1]),
        lambda: nf.concat2d([[1.0], [[2.0]]]),
    ],
)
def test_errors_leave_no_tensors_behind(call, backend):
    """Temporaries converted from lists are disposed on the error paths (the autouse fixture counts)."""
    with pytest.raises((ValueError, TypeError)):
        call()
