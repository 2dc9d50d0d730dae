"""Shape ops on string tensors of every rank (0-3) against numpy on object arrays.

TF.js 4.22 takes string tensors in reshape, expandDims, squeeze, stack, unstack, concat, slice,
stridedSlice, gatherND, tile, clone and ensureShape, and its TensorLists hold strings (TensorListFromTensor
unstacks, TensorListStack stacks). ndflow also takes them in gather, transpose and where (TF.js refuses:
"must be numeric tensor"); it refuses, naming the op, where TF.js refuses and ndflow has no string kernel:
reverse, split, pad, mirror_pad, broadcast_to, zeros_like, ones_like, tensor_scatter_update.

String kernels are cpu kernels (torch and webgpu run them on the host): the matrix runs on cpu, and a
few cases check the host fallback on every backend.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import ndflow as nf
from ndflow.converter.runtime.tensor_list import from_tensor, reserve

SHAPES = {0: (), 1: (3,), 2: (2, 3), 3: (2, 3, 2)}
# Unicode, an empty string and a trailing NUL (which numpy's own string arrays would drop).
WORDS = ["ab", "", "ñé", "c\x00", "x y", "日本", "z", "0", "-", "é", "q", "w"]


def strings(rank: int, offset: int = 0) -> np.ndarray:
    shape = SHAPES[rank]
    n = int(np.prod(shape, dtype=int))
    return np.array([WORDS[(i + offset) % len(WORDS)] for i in range(n)], dtype=object).reshape(shape)


def as_tensor(a: np.ndarray) -> nf.Tensor:
    return nf.tensor(a, dtype="string")


def check(got: nf.Tensor, want: np.ndarray) -> None:
    assert got.dtype == "string"
    assert got.shape == want.shape
    values = np.asarray(got.numpy(), dtype=object)
    assert values.shape == want.shape
    assert values.tolist() == want.tolist()


def run(fn: Callable[[nf.Tensor], Any], a: np.ndarray) -> Any:
    """``fn`` on a tensor of ``a``, its intermediates freed; the result as numpy (a list for several)."""
    x = as_tensor(a)
    try:
        out = nf.tidy(lambda: fn(x))
    finally:
        x.dispose()
    outs = list(out) if isinstance(out, list | tuple) else [out]
    try:
        assert all(t.dtype == "string" for t in outs)
        values = [np.asarray(t.numpy(), dtype=object) for t in outs]
        assert [v.shape for v in values] == [t.shape for t in outs]
    finally:
        nf.dispose(outs)
    return values if isinstance(out, list | tuple) else values[0]


def idx(values: Any) -> nf.Tensor:
    return nf.tensor(values, dtype="int32")


def evens(shape: tuple[int, ...]) -> np.ndarray:
    """A bool mask: true at the even flat positions."""
    return np.arange(int(np.prod(shape, dtype=int))).reshape(shape) % 2 == 0


def perm(rank: int) -> list[int]:
    return [*range(1, rank), 0] if rank else []


# (name, lowest rank, ndflow, numpy)
CASES: list[tuple[str, int, Callable[[nf.Tensor], Any], Callable[[np.ndarray], Any]]] = [
    ("reshape_flat", 0, lambda x: nf.reshape(x, [-1]), lambda a: a.reshape(-1)),
    ("reshape_back", 0, lambda x: nf.reshape(nf.reshape(x, [-1]), list(x.shape)), lambda a: a),
    ("expand_dims_first", 0, lambda x: nf.expand_dims(x, 0), lambda a: np.expand_dims(a, 0)),
    ("expand_dims_last", 0, lambda x: nf.expand_dims(x, -1), lambda a: np.expand_dims(a, -1)),
    ("squeeze", 0, lambda x: nf.squeeze(nf.expand_dims(nf.expand_dims(x, 0), -1)), lambda a: a),
    ("squeeze_axis", 0, lambda x: nf.squeeze(nf.expand_dims(x, 0), [0]), lambda a: a),
    ("clone", 0, nf.clone, lambda a: a),
    ("stack_first", 0, lambda x: nf.stack([x, x]), lambda a: np.stack([a, a])),
    ("stack_last", 0, lambda x: nf.stack([x, nf.reshape(x, list(x.shape))], -1), lambda a: np.stack([a, a], -1)),
    ("unstack_first", 1, lambda x: nf.unstack(x), lambda a: list(a)),  # rank 1: scalars
    ("unstack_last", 1, lambda x: nf.unstack(x, -1), lambda a: list(np.moveaxis(a, -1, 0))),
    ("concat_first", 1, lambda x: nf.concat([x, x], 0), lambda a: np.concatenate([a, a], 0)),
    ("concat_last", 1, lambda x: nf.concat([x, x, x], -1), lambda a: np.concatenate([a, a, a], -1)),
    ("slice_all", 0, lambda x: nf.slice(x, [0] * x.rank, [-1] * x.rank), lambda a: a),
    ("slice_part", 1, lambda x: nf.slice(x, [1] + [0] * (x.rank - 1), [1] + [-1] * (x.rank - 1)), lambda a: a[1:2]),
    ("slice_one", 1, lambda x: nf.slice(x, [1] * x.rank, [1] * x.rank), lambda a: a[(slice(1, 2),) * a.ndim]),
    ("strided_slice_all", 0, lambda x: nf.strided_slice(x, [0] * x.rank, list(x.shape)), lambda a: a),
    (
        "strided_slice_reversed",
        1,
        lambda x: nf.strided_slice(x, [-1] * x.rank, [-100] * x.rank, [-1] * x.rank),
        lambda a: a[(slice(None, None, -1),) * a.ndim],
    ),
    (
        "strided_slice_shrink",  # rank 1 -> a scalar
        1,
        lambda x: nf.strided_slice(x, [1] * x.rank, [2] * x.rank, [1] * x.rank, shrink_axis_mask=1),
        lambda a: a[(1,) + (slice(1, 2),) * (a.ndim - 1)],
    ),
    ("getitem_first", 1, lambda x: x[0], lambda a: a[0]),
    ("getitem_element", 1, lambda x: x[(-1,) * x.rank], lambda a: np.array(a[(-1,) * a.ndim], dtype=object)),
    ("getitem_step", 1, lambda x: x[..., ::-2], lambda a: a[..., ::-2]),
    ("gather_first", 1, lambda x: nf.gather(x, idx([1, 0, 1])), lambda a: a[[1, 0, 1]]),
    ("gather_last", 1, lambda x: nf.gather(x, idx([[1], [0]]), -1), lambda a: np.take(a, [[1], [0]], -1)),
    ("gather_scalar_index", 1, lambda x: nf.gather(x, idx(1)), lambda a: np.array(a[1], dtype=object)),
    ("gather_nd_rows", 1, lambda x: nf.gather_nd(x, idx([[1], [0]])), lambda a: a[[1, 0]]),
    (
        "gather_nd_elements",
        1,
        lambda x: nf.gather_nd(x, idx([[1] * x.rank, [0] * x.rank])),
        lambda a: np.array([a[(1,) * a.ndim], a[(0,) * a.ndim]], dtype=object),
    ),
    ("tile", 0, lambda x: nf.tile(x, [2] * x.rank), lambda a: np.tile(a, [2] * a.ndim)),
    ("tile_zero", 1, lambda x: nf.tile(x, [0] + [1] * (x.rank - 1)), lambda a: a[:0]),
    ("transpose", 0, nf.transpose, lambda a: a.transpose()),
    ("transpose_perm", 0, lambda x: nf.transpose(x, perm(x.rank)), lambda a: a.transpose(perm(a.ndim))),
    (
        "where",
        0,
        lambda x: nf.where(nf.tensor(evens(x.shape)), x, nf.fill(list(x.shape), "-", "string")),
        lambda a: np.where(evens(a.shape), a, np.full(a.shape, "-", dtype=object)),
    ),
    (
        "where_broadcast",
        1,
        lambda x: nf.where(nf.tensor([True, False, True][: x.shape[-1]]), x, nf.scalar("-", "string")),
        lambda a: np.where(np.array([True, False, True][: a.shape[-1]]), a, "-").astype(object),
    ),
]


@pytest.fixture
def cpu():
    """String kernels are cpu kernels: run on cpu, restoring the previous backend afterwards."""
    previous = nf.get_backend()
    nf.set_backend("cpu")
    yield
    nf.set_backend(previous)


def compare(got: Any, expected: Any) -> None:
    if isinstance(got, list):
        assert len(got) == len(expected)
        for g, e in zip(got, expected, strict=True):
            compare(g, e)
    else:
        expected = np.asarray(expected, dtype=object)
        assert got.shape == expected.shape and got.tolist() == expected.tolist()


@pytest.mark.parametrize(
    "fn, want, rank",
    [pytest.param(fn, want, rank, id=f"{name}-rank{rank}") for name, low, fn, want in CASES for rank in range(low, 4)],
)
def test_matches_numpy(cpu, fn, want, rank):
    a = strings(rank)
    compare(run(fn, a), want(a))


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_tensor_list_of_strings(cpu, rank):
    a = strings(rank)
    x = as_tensor(a)
    element = list(a.shape[1:])
    lst = from_tensor(x, element, "string")  # TF.js's TensorListFromTensor unstacks
    try:
        stacked = lst.stack(element, "string")
        check(stacked, a)
        item = lst.get_item(1, element, "string")
        check(item, np.asarray(a[1], dtype=object))
        gathered = lst.gather([1, 0], "string", element)
        check(gathered, a[[1, 0]])
        new_first = np.asarray(strings(rank, offset=5)[0], dtype=object)
        replacement = as_tensor(new_first)
        lst.set_item(0, replacement)  # the list keeps it (and frees it when closed)
        again = lst.stack(element, "string")
        want = a.copy()
        want[0] = new_first
        check(again, want)
        nf.dispose([stacked, item, gathered, again])
        if rank > 1:
            joined = lst.concat("string", element)
            check(joined, np.concatenate(list(want), 0))
            joined.dispose()
    finally:
        lst.clear_and_close()
        lst.id_tensor.dispose()
        x.dispose()


def test_reserved_tensor_list_of_strings(cpu):
    lst = reserve([], "string", 3, -1)
    words = [as_tensor(np.array(w, dtype=object)) for w in ("b", "", "ñ")]
    try:
        for i, w in enumerate(words):
            lst.set_item(2 - i, w)
        stacked = lst.stack([], "string")
        check(stacked, np.array(["ñ", "", "b"], dtype=object))
        stacked.dispose()
    finally:
        lst.clear_and_close()
        lst.id_tensor.dispose()
        nf.dispose(words)


REFUSED: list[tuple[str, str, Callable[[nf.Tensor], Any]]] = [
    ("reverse", "x", lambda x: nf.reverse(x)),
    ("split", "x", lambda x: nf.split(x, 1)),
    ("pad", "x", lambda x: nf.pad(x, [[1, 0]] * x.rank)),
    ("mirror_pad", "x", lambda x: nf.mirror_pad(x, [[1, 0]] * x.rank, "reflect")),
    ("broadcast_to", "x", lambda x: nf.broadcast_to(x, [2, *x.shape])),
    ("zeros_like", "x", nf.zeros_like),
    ("ones_like", "x", nf.ones_like),
    ("tensor_scatter_update", "tensor", lambda x: nf.tensor_scatter_update(x, idx([[0]]), nf.stack([x[0]]))),
]


@pytest.mark.parametrize("rank", [1, 2, 3])
@pytest.mark.parametrize("op, arg, fn", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_as_tfjs_refuses(cpu, op, arg, fn, rank):
    """TF.js: "Argument 'x' passed to '<op>' must be numeric tensor, but got string tensor"."""
    x = as_tensor(strings(rank))
    try:
        with pytest.raises(TypeError, match=rf"^{op}: argument '{arg}' must be a numeric tensor, got a string tensor"):
            nf.tidy(lambda: fn(x))
    finally:
        x.dispose()


def test_unstack_of_a_scalar_is_refused(cpu):
    x = nf.scalar("a", "string")
    try:
        with pytest.raises(ValueError, match=r"^unstack: argument 'axis' 0 is out of range for a tensor of rank 0"):
            nf.unstack(x)
    finally:
        x.dispose()


HOST = ("unstack_first", "slice_all", "strided_slice_shrink", "getitem_element", "where", "transpose_perm")


@pytest.mark.parametrize(
    "fn, want, rank",
    [pytest.param(fn, want, r, id=f"{name}-rank{r}") for name, _, fn, want in CASES if name in HOST for r in (1, 3)],
)
def test_every_backend_runs_string_kernels_on_the_host(backend, fn, want, rank):
    a = strings(rank)
    compare(run(fn, a), want(a))
