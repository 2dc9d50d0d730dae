"""``nf.image`` against reference results of real TF.js 4.22 (cpu backend).

Cases live in ``tests/fixtures/image.json`` (``python tests/fixtures/gen_image.py`` regenerates
them). The ``*_async`` ops are awaited; the resize gradient kernels are checked against TF.js's
gradients stored with the cases that have ``"grads"``; the places where ndflow deliberately does
better than TF.js are tested against their own expectation (numpy, or an independent reference).
"""

from __future__ import annotations

import asyncio
import inspect
import math

import numpy as np
import pytest
from box_util import iou as box_iou
from oracle_cases import _check_output, case_ids, load_cases, run_case

import ndflow as nf
from ndflow.core.engine import ENGINE

BEYOND_TFJS = {
    "resize_bilinear__empty_image": "TF.js reads past an empty image and returns NaN; ndflow raises",
    "resize_nearest_neighbor__int32_large": "TF.js stores int32 results in a Float32Array (16777217 -> 16777216)",
    "crop_and_resize__box_index_negative": "TF.js reads before the batch (NaN); ndflow gives zeros, as past it",
    "transform__batch2_one_transform": "TF.js's Transform kernel returns after the first image (the rest is fill)",
    "transform__batch2_two_transforms": "TF.js's Transform kernel returns after the first image (the rest is fill)",
    "transform__unknown_fill_mode": "TF.js silently treats an unknown fill_mode as 'constant'; ndflow raises",
}
GRAD_BEYOND_TFJS = {
    "resize_bilinear__grad_half_pixel": "TF.js's ResizeBilinearGrad ignores half_pixel_centers",
    "resize_nearest_neighbor__grad_half_pixel": "TF.js's ResizeNearestNeighborGrad ignores half_pixel_centers",
    "resize_nearest_neighbor__grad_batch2": "TF.js's ResizeNearestNeighborGrad reads dy of image b at image b's "
    "offset in the images, so every image after the first gets a wrong gradient",
}
CASES = load_cases("image", BEYOND_TFJS)
ALL = {c["id"]: c for c in load_cases("image")}
OTSU_OPS = ("round", "bincount", "cumsum")  # threshold(method='otsu') is built from them, as in TF.js


def _sync(fn):
    """Run an async op to completion (fixtures call ops synchronously)."""

    def run(*args, **kwargs):
        return asyncio.run(fn(*args, **kwargs))

    return run


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_image_op_matches_tfjs(case, backend, monkeypatch):
    if "otsu" in case["id"] and not all(hasattr(nf, n) for n in OTSU_OPS):
        pytest.skip("threshold(method='otsu') needs nf.round, nf.bincount and nf.cumsum")
    op_name = case["id"].split("__")[0]
    if op_name.endswith("_async"):
        monkeypatch.setattr(nf.image, op_name, _sync(getattr(nf.image, op_name)))
    run_case(case)


# ----------------------------------------------------------------------------- gradient kernels

GRAD_KERNELS = {"resize_bilinear": "ResizeBilinearGrad", "resize_nearest_neighbor": "ResizeNearestNeighborGrad"}


def _tensor(spec: dict) -> nf.Tensor:
    t = spec["tensor"]
    return nf.tensor([float(v) for v in t["values"]], t["shape"], t["dtype"])


def _resize_grad(op: str, images: nf.Tensor, dy: nf.Tensor, align: bool, half: bool) -> nf.Tensor:
    attrs = {"size": tuple(dy.shape[1:3]), "align_corners": align, "half_pixel_centers": half}
    return ENGINE.run_kernel(GRAD_KERNELS[op], (images, dy), attrs)


GRAD_CASES = [c for c in ALL.values() if "grads" in c and c["id"] not in GRAD_BEYOND_TFJS]


@pytest.mark.parametrize("case", GRAD_CASES, ids=case_ids(GRAD_CASES))
def test_resize_grad_kernel_matches_tfjs(case, backend):
    op = case["id"].split("__")[0]
    flags = [*case["args"][2:], False, False][:2]
    images, dy = _tensor(case["args"][0]), _tensor(case["dy"])
    grad = _resize_grad(op, images, dy, *flags)
    try:
        _check_output(case["id"], 0, grad, case["grads"][0])
    finally:
        nf.dispose([images, dy, grad])


def _adjoint_gap(op: str, shape: tuple, size: tuple, align: bool, half: bool) -> float:
    """|<resize(x), dy> - <x, grad(dy)>|: zero when the gradient is the forward map's transpose."""
    rng = np.random.default_rng(sum(shape) + 7 * sum(size) + 2 * align + half)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    dy = rng.uniform(-1, 1, (shape[0], *size, shape[3])).astype(np.float32)
    tx, tdy = nf.tensor(x), nf.tensor(dy)
    y = getattr(nf.image, op)(tx, list(size), align, half)
    g = _resize_grad(op, tx, tdy, align, half)
    try:
        assert g.shape == tx.shape and g.dtype == "float32"
        forward = (y.numpy().astype(np.float64) * dy).sum()
        return abs(float(forward - (x.astype(np.float64) * g.numpy()).sum()))
    finally:
        nf.dispose([tx, tdy, y, g])


@pytest.mark.parametrize("op", list(GRAD_KERNELS))
@pytest.mark.parametrize("flags", [(False, False), (True, False), (False, True)], ids=["plain", "align", "half"])
@pytest.mark.parametrize(
    "shape,size",
    [
        ((1, 3, 3, 1), (5, 5)),
        ((2, 2, 5, 3), (7, 3)),
        ((1, 6, 4, 2), (2, 3)),
        ((1, 1, 4, 1), (3, 1)),
        ((1, 5, 2, 1), (5, 2)),
    ],
)
def test_resize_grad_kernels_are_the_forward_transpose(op, flags, shape, size, backend):
    """Beyond TF.js: half_pixel_centers is honoured and non-square images get their own shape back."""
    assert _adjoint_gap(op, shape, size, *flags) < 1e-4


@pytest.mark.parametrize("cid", list(GRAD_BEYOND_TFJS))
def test_beyond_tfjs_resize_grads(cid, backend):
    case = ALL[cid]
    op = cid.split("__")[0]
    flags = [*case["args"][2:], False, False][:2]
    images, dy = _tensor(case["args"][0]), _tensor(case["dy"])
    shape, size = tuple(images.shape), tuple(dy.shape[1:3])
    grad = _resize_grad(op, images, dy, *flags)
    got = grad.numpy()
    nf.dispose([images, dy, grad])
    tfjs = np.array(case["grads"][0]["values"], np.float32).reshape(got.shape)
    assert not np.allclose(got, tfjs, atol=1e-3)  # TF.js's gradient is wrong here ...
    if shape[0] > 1:
        np.testing.assert_allclose(got[0], tfjs[0], atol=1e-3)  # ... except for the first image
    assert _adjoint_gap(op, shape, size, *flags) < 1e-4  # ndflow's is the forward map's transpose


# ----------------------------------------------------------------------------- beyond TF.js


def _args(cid: str) -> tuple[list, list]:
    created: list = []

    def build(a):
        if isinstance(a, list):
            return [build(x) for x in a]
        if isinstance(a, dict) and "tensor" in a:
            t = _tensor(a)
            created.append(t)
            return t
        return a

    return build(ALL[cid]["args"]), created


def test_beyond_tfjs_resize_empty_image_raises(backend):
    args, created = _args("resize_bilinear__empty_image")
    with pytest.raises(ValueError, match="resize_bilinear: cannot resize an empty image"):
        nf.image.resize_bilinear(*args)
    with pytest.raises(ValueError, match="resize_nearest_neighbor: cannot resize an empty image"):
        nf.image.resize_nearest_neighbor(*args)
    nf.dispose(created)


def test_beyond_tfjs_resize_nearest_keeps_int32_exact(backend):
    args, created = _args("resize_nearest_neighbor__int32_large")
    y = nf.image.resize_nearest_neighbor(*args)
    assert y.dtype == "int32"
    assert y.numpy().reshape(-1).tolist() == [16777217, 16777217, -2147483647]
    nf.dispose([*created, y])


def test_beyond_tfjs_crop_negative_box_index_gives_zeros(backend):
    cid = "crop_and_resize__box_index_negative"
    args, created = _args(cid)
    result = nf.image.crop_and_resize(*args)
    y = result.numpy()
    tfjs = np.array(ALL[cid]["outputs"][0]["values"], np.float64).reshape(y.shape)
    assert np.all(y[0] == 0)  # box_ind -1: outside the batch
    np.testing.assert_allclose(y[1], tfjs[1], atol=1e-3)  # box_ind 0: as TF.js
    nf.dispose([*created, result])


@pytest.mark.parametrize("cid", ["transform__batch2_one_transform", "transform__batch2_two_transforms"])
def test_beyond_tfjs_transform_every_image(cid, backend):
    args, created = _args(cid)
    image, transforms, *rest = args
    result = nf.image.transform(image, transforms, *rest)
    created.append(result)
    y = result.numpy()
    tfjs = np.array(ALL[cid]["outputs"][0]["values"], np.float64).reshape(y.shape)
    np.testing.assert_allclose(y[0], tfjs[0], atol=1e-3)  # TF.js does the first image right
    for b in range(image.shape[0]):
        one = image[b : b + 1]
        row = transforms[min(b, transforms.shape[0] - 1) : min(b, transforms.shape[0] - 1) + 1]
        single = nf.image.transform(one, row, *rest)
        np.testing.assert_allclose(y[b], single.numpy()[0], atol=1e-6)
        nf.dispose([one, row, single])
    nf.dispose(created)


def test_beyond_tfjs_transform_unknown_fill_mode_raises(backend):
    args, created = _args("transform__unknown_fill_mode")
    with pytest.raises(ValueError, match="transform: argument 'fill_mode' must be one of"):
        nf.image.transform(*args)
    nf.dispose(created)


def test_rotate_with_offset_short_fill_list_raises(backend):
    image = nf.zeros([1, 2, 2, 5])
    with pytest.raises(ValueError, match="rotate_with_offset: argument 'fill_value' has 3 values"):
        nf.image.rotate_with_offset(image, 0.3, [1, 2, 3])
    y = nf.image.rotate_with_offset(image, 0.3, [1, 2, 3, 4, 5])  # channel 3 is alpha: 255
    corner = y.numpy()[0, 0, 0]
    assert corner.tolist() in ([0, 0, 0, 0, 0], [1, 2, 3, 255, 5])
    nf.dispose([image, y])


# ----------------------------------------------------------------------------- NMS against a reference


def _reference_nms(boxes, scores, max_out, iou_thr, score_thr, sigma):
    """TF.js's algorithm, transcribed plainly (a loop per candidate): a sorted candidate list,
    scores decayed lazily when a candidate reaches the top."""
    b = boxes.astype(np.float64)

    def iou(i: int, j: int) -> float:
        return box_iou(b, i, j)

    scale = -0.5 / sigma if sigma > 0 else 0.0
    cands = [[float(s), i, 0] for i, s in enumerate(scores.tolist()) if s > score_thr]
    selected, kept = [], []
    while len(selected) < max_out and cands:
        cands.sort(key=lambda c: (c[0], -c[1]))
        cand = cands.pop()
        original, i, begin = cand
        ignore = False
        for j in range(len(selected) - 1, begin - 1, -1):
            o = iou(i, selected[j])
            if o >= iou_thr:
                ignore = True
                break
            cand[0] *= math.exp(scale * o * o) if o <= iou_thr else 0.0
            if cand[0] <= score_thr:
                break
        cand[2] = len(selected)
        if not ignore:
            if cand[0] == original:
                selected.append(i)
                kept.append(cand[0])
            elif cand[0] > score_thr:
                cands.append(cand)
    return selected, kept


@pytest.mark.parametrize("seed", range(24))
def test_nms_matches_tfjs_algorithm_on_random_boxes(seed, backend):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 60))
    centers = rng.uniform(0, 1, (n, 2))
    sizes = rng.uniform(0.05, 0.5, (n, 2))
    boxes = np.concatenate([centers - sizes / 2, centers + sizes / 2], 1)[:, [0, 1, 2, 3]].astype(np.float32)
    flip = rng.random(n) < 0.3  # some boxes given by the other diagonal
    boxes[flip] = boxes[flip][:, [2, 3, 0, 1]]
    low = -1 if seed % 2 else 0  # soft-NMS raises negative scores: TF.js's lazy heap order matters
    scores = np.round(rng.uniform(low, 1, n), 2).astype(np.float32)  # rounding makes ties
    max_out = int(rng.integers(0, n + 2))
    iou_thr = float(rng.choice([0.0, 0.3, 0.5, 0.7, 1.0]))
    score_thr = float(rng.choice([-math.inf, -0.5, 0.2, 0.5]))
    sigma = float(rng.choice([0.0, 0.2, 0.5, 1.0]))
    tb, ts = nf.tensor(boxes), nf.tensor(scores)
    res = nf.image.non_max_suppression_with_score(tb, ts, max_out, iou_thr, score_thr, sigma)
    want_idx, want_scores = _reference_nms(boxes, scores, min(max_out, n), iou_thr, score_thr, sigma)
    assert res.selected_indices.numpy().tolist() == want_idx
    np.testing.assert_allclose(res.selected_scores.numpy(), np.array(want_scores, np.float32), atol=1e-6)
    hard = nf.image.non_max_suppression(tb, ts, max_out, iou_thr, score_thr)
    assert hard.numpy().tolist() == _reference_nms(boxes, scores, min(max_out, n), iou_thr, score_thr, 0)[0]
    nf.dispose([tb, ts, res, hard])


# ----------------------------------------------------------------------------- API shape


def test_async_ops_are_coroutines_and_results_are_named(backend):
    for name in ("non_max_suppression", "non_max_suppression_with_score", "non_max_suppression_padded"):
        assert inspect.iscoroutinefunction(getattr(nf.image, f"{name}_async"))
    boxes, scores = nf.tensor([[0, 0, 1, 1], [0, 0, 1, 0.9]]), nf.tensor([0.6, 0.9])
    padded = asyncio.run(nf.image.non_max_suppression_padded_async(boxes, scores, 2, 0.5, 0, True))
    assert padded._fields == ("selected_indices", "valid_outputs")
    assert padded.selected_indices.numpy().tolist() == [1, 0] and int(padded.valid_outputs.numpy()) == 1
    scored = nf.image.non_max_suppression_with_score(boxes, scores, 2)
    assert scored._fields == ("selected_indices", "selected_scores")
    nf.dispose([boxes, scores, padded, scored])


def test_nms_rejects_non_int_max_output_size(backend):
    boxes, scores = nf.tensor([[0, 0, 1, 1]]), nf.tensor([0.5])
    with pytest.raises(TypeError, match="non_max_suppression: argument 'max_output_size' must be an int"):
        nf.image.non_max_suppression(boxes, scores, 2.5)
    nf.dispose([boxes, scores])


def test_resize_is_chained_and_accepts_nested_lists(backend):
    x = nf.tensor(np.arange(8, dtype=np.float32).reshape(2, 2, 2))
    a, b = x.resize_bilinear([3, 3]), x.resize_nearest_neighbor([4, 4], True)
    c = nf.image.resize_bilinear(x.numpy().tolist(), [3, 3])
    assert a.shape == (3, 3, 2) and b.shape == (4, 4, 2)
    np.testing.assert_array_equal(a.numpy(), c.numpy())
    nf.dispose([x, a, b, c])


def test_resize_large_image_is_fast_and_exact(backend):
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (2, 120, 160, 3)).astype(np.float32)
    t = nf.tensor(x)
    big = nf.image.resize_bilinear(t, [240, 320], True)
    y = big.numpy()
    np.testing.assert_allclose(y[:, 0, 0], x[:, 0, 0], atol=1e-6)  # corners align
    np.testing.assert_allclose(y[:, -1, -1], x[:, -1, -1], atol=1e-6)
    small = nf.image.resize_nearest_neighbor(t, [60, 80])
    np.testing.assert_array_equal(small.numpy(), x[:, ::2, ::2])
    nf.dispose([t, big, small])
