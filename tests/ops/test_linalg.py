"""Linear algebra, matrices, complex numbers, spectral and signal ops against real TF.js 4.22 (cpu).

The cases live in ``tests/fixtures/linalg.json``; regenerate them with
``python tests/fixtures/gen_linalg.py`` (needs Node and ``../shared/oracle``). Cases where ndflow
deliberately does better than TF.js are listed in ``BEYOND_TFJS`` and checked against numpy below.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from oracle_cases import case_ids, load_cases, run_case

import ndflow as nf
from ndflow.core.engine import ENGINE

_IRFFT_SHAPE = "TF.js flattens the batch axes of irfft's result except for rank 3 (a rank-1 input gives [1, n]); ndflow keeps them: input.shape[:-1] + [n]"  # noqa: E501
_NORM_AXES = (
    "TF.js's matrix norm assumes axis[0] < axis[1], both non-negative; ndflow normalizes the axes first, as numpy"  # noqa: E501
)
_QR_BATCH = "TF.js reshapes a batch of non-square q and r to the input's shape and fails; ndflow returns them"
_WINDOW_1 = "TF.js's cosine window of length 1 divides 0 by 0 (NaN); ndflow returns [1], as TF (Python)"
_WINDOW_FRACTION = "TF.js makes a window of a fractional length; ndflow raises TypeError"

BEYOND_TFJS = {
    "irfft__vector_3": _IRFFT_SHAPE,
    "irfft__vector_5_imag": _IRFFT_SHAPE,
    "irfft__vector_1": _IRFFT_SHAPE,
    "irfft__vector_2": _IRFFT_SHAPE,
    "irfft__rank4": _IRFFT_SHAPE,
    "irfft__rank3_empty_batch": _IRFFT_SHAPE,
    "rfft__fft_length_pads_empty_inner": "TF.js divides by the empty inner size before padding (NaN batch); ndflow pads with zeros",  # noqa: E501
    "dot__complex": "TF.js's cpu matMul refuses complex64; ndflow's multiplies complex matrices",
    "diag__complex": "TF.js's cpu Diag refuses complex64; ndflow's handles it",
    "norm__matrix_negative_axes": _NORM_AXES,
    "norm__matrix_ord_inf_swapped": _NORM_AXES,
    "norm__rank3_ord_1_reversed_axes": _NORM_AXES + " (TF.js reduces the wrong axis here)",
    "norm__matrix_duplicate_axes": "TF.js reduces a repeated axis to a wrong result; ndflow raises ValueError",
    "norm__vector_duplicate_axes": "TF.js reduces a repeated axis to a wrong result; ndflow raises ValueError",
    "norm__complex_matrix_fro": "TF.js squares complex values (unsupported on cpu); ndflow takes sqrt(sum(|x|^2))",
    "band_part__complex": "TF.js's cpu slice refuses complex64; ndflow's band_part handles it",
    "band_part__empty_batch": "TF.js fails on an empty batch; ndflow returns the empty tensor",
    "band_part__empty_rows": "TF.js fails on empty matrices; ndflow returns the empty tensor",
    "gram_schmidt__no_vectors": "TF.js fails to split an empty tensor; ndflow returns the empty tensor",
    "qr__batch_tall": _QR_BATCH,
    "qr__batch_wide_full": _QR_BATCH,
    "qr__zero_column": "TF.js divides by a zero column norm (NaN); ndflow skips that reflection (a valid QR)",
    "qr__zero_matrix": "TF.js divides by a zero column norm (NaN); ndflow skips that reflection (a valid QR)",
    "qr__empty_batch": "TF.js fails on an empty batch; ndflow returns empty q and r",
    "frame__fractional_step": "TF.js slices at fractional offsets; ndflow raises TypeError",
    "frame__complex": "TF.js's cpu slice refuses complex64; ndflow frames complex signals",
    "stft__frame_length_1": _WINDOW_1,
    "hann_window__length_1": _WINDOW_1,
    "hamming_window__length_1": _WINDOW_1,
    "hann_window__fractional": _WINDOW_FRACTION,
    "hamming_window__fractional": _WINDOW_FRACTION,
}
CASES = load_cases("linalg", BEYOND_TFJS)
BEYOND_CASES = {c["id"]: c for c in load_cases("linalg") if c["id"] in BEYOND_TFJS}
WINDOWS = {"hannWindow": "hann_window", "hammingWindow": "hamming_window"}


def _with_window_fn(case: dict) -> dict:
    """stft cases that pass a window function carry its TF.js name as the last argument."""
    args = case["args"]
    if case["id"].startswith("stft__") and args and isinstance(args[-1], str):
        return {**case, "args": args[:-1] + [getattr(nf.signal, WINDOWS[args[-1]])]}
    return case


@pytest.mark.parametrize("case", CASES, ids=case_ids(CASES))
def test_linalg_op_matches_tfjs(case, backend):
    run_case(_with_window_fn(case))


# ----------------------------------------------------------------------------- beyond TF.js


def _array(arg):
    """A fixture tensor argument as a numpy array."""
    t = arg["tensor"]
    values = [float(v) if isinstance(v, str) else v for v in t["values"]]
    if t["dtype"] == "complex64":
        values = np.array(values[0::2], np.float32) + 1j * np.array(values[1::2], np.float32)
    return np.array(values, dtype={"complex64": np.complex64, "int32": np.int32}.get(t["dtype"], np.float32)).reshape(
        t["shape"]
    )


def _beyond(cid: str) -> tuple[list, list]:
    """(ndflow tensors, numpy arrays) for the tensor arguments of a BEYOND_TFJS case, then the rest."""
    args = [float(a["number"]) if isinstance(a, dict) and "number" in a else a for a in BEYOND_CASES[cid]["args"]]
    tensors = [nf.tensor(_array(a)) if isinstance(a, dict) else a for a in args]
    return tensors, [_array(a) if isinstance(a, dict) else a for a in args]


def _check(got, want, atol=1e-4):
    assert tuple(got.shape) == want.shape, (got.shape, want.shape)
    np.testing.assert_allclose(got.numpy(), want, atol=atol)


@pytest.mark.parametrize("cid", [k for k in BEYOND_TFJS if k.startswith("irfft__")])
def test_beyond_irfft_keeps_batch_shape(cid, backend):
    (x,), (a,) = _beyond(cid)
    y = nf.irfft(x)
    n = a.shape[-1]
    if n <= 2:  # TF.js: the real part of the inverse transform of the n terms
        want = np.fft.ifft(a, axis=-1).real
    else:
        want = np.fft.irfft(a, n=2 * (n - 1), axis=-1)
    _check(y, want.astype(np.float32))
    nf.dispose([x, y])


def test_beyond_rfft_pads_an_empty_signal(backend):
    (x, n), _ = _beyond("rfft__fft_length_pads_empty_inner")
    y = nf.rfft(x, n)
    _check(y, np.zeros((2, 3), np.complex64))
    nf.dispose([x, y])


@pytest.mark.parametrize("cid", ["dot__complex", "diag__complex"])
def test_beyond_complex_products(cid, backend):
    tensors, arrays = _beyond(cid)
    y = nf.dot(*tensors) if cid.startswith("dot") else nf.diag(*tensors)
    _check(y, np.dot(*arrays) if cid.startswith("dot") else np.diag(arrays[0]))
    nf.dispose([*tensors, y])


@pytest.mark.parametrize(
    "cid", ["norm__matrix_negative_axes", "norm__matrix_ord_inf_swapped", "norm__rank3_ord_1_reversed_axes"]
)
def test_beyond_norm_axes_as_numpy(cid, backend):
    (x, ord_, axis, *keep), (a, *_) = _beyond(cid)
    y = nf.norm(x, ord_, axis, *keep)
    _check(y, np.linalg.norm(a, ord_, tuple(axis), keepdims=bool(keep and keep[0])))
    nf.dispose([x, y])


@pytest.mark.parametrize("cid", ["norm__matrix_duplicate_axes", "norm__vector_duplicate_axes"])
def test_beyond_norm_duplicate_axes(cid, backend):
    (x, *rest), _ = _beyond(cid)
    with pytest.raises(ValueError, match="norm: argument 'axis' .* duplicate"):
        nf.norm(x, *rest)
    x.dispose()


def test_beyond_norm_complex_frobenius(backend):
    (x, *rest), (a, *_) = _beyond("norm__complex_matrix_fro")
    y = nf.norm(x, *rest)
    _check(y, np.array(np.linalg.norm(a, "fro"), np.float32))
    nf.dispose([x, y])


@pytest.mark.parametrize("cid", ["band_part__complex", "band_part__empty_batch", "band_part__empty_rows"])
def test_beyond_band_part(cid, backend):
    (x, lower, upper), (a, *_) = _beyond(cid)
    y = nf.linalg.band_part(x, lower, upper)
    _check(y, a * np.eye(*a.shape[-2:], dtype=np.float32))  # lower = upper = 0: the diagonal
    nf.dispose([x, y])


def test_beyond_gram_schmidt_no_vectors(backend):
    (x,), _ = _beyond("gram_schmidt__no_vectors")
    y = nf.linalg.gram_schmidt(x)
    assert y.shape == (0, 3) and y.dtype == "float32"
    nf.dispose([x, y])


def _check_qr(x, q, r, full):
    a = x.numpy().astype(np.float64)
    m, n = a.shape[-2:]
    k = m if full else min(m, n)
    assert q.shape == a.shape[:-2] + (m, k) and r.shape == a.shape[:-2] + (k, n)
    qv, rv = q.numpy(), r.numpy()
    np.testing.assert_allclose(qv @ rv, a, atol=1e-5)
    identity = np.broadcast_to(np.eye(k), qv.shape[:-2] + (k, k))
    np.testing.assert_allclose(np.swapaxes(qv, -1, -2) @ qv, identity, atol=1e-5)
    np.testing.assert_allclose(np.tril(rv, -1), 0, atol=1e-6)


@pytest.mark.parametrize(
    "cid", ["qr__batch_tall", "qr__batch_wide_full", "qr__zero_column", "qr__zero_matrix", "qr__empty_batch"]
)
def test_beyond_qr(cid, backend):
    (x, *full), _ = _beyond(cid)
    full = bool(full and full[0])
    q, r = nf.linalg.qr(x, full)
    _check_qr(x, q, r, full)
    nf.dispose([x, q, r])


def test_beyond_qr_batch_matches_each_matrix(backend):
    """A batch gives what each of its matrices gives alone (TF.js's signs included)."""
    (x,), _ = _beyond("qr__batch_tall")
    q, r = nf.linalg.qr(x)
    for i in range(x.shape[0]):
        xi = x[i]
        qi, ri = nf.linalg.qr(xi)
        np.testing.assert_allclose(q.numpy()[i], qi.numpy(), atol=1e-6)
        np.testing.assert_allclose(r.numpy()[i], ri.numpy(), atol=1e-6)
        nf.dispose([xi, qi, ri])
    nf.dispose([x, q, r])


def test_beyond_frame_fractional_arguments(backend):
    (x, length, step), _ = _beyond("frame__fractional_step")
    with pytest.raises(TypeError, match="frame: argument 'frame_step' must be an int"):
        nf.signal.frame(x, length, step)
    with pytest.raises(TypeError, match="frame: argument 'frame_length' must be an int"):
        nf.signal.frame(x, 2.5, 1)  # TF.js: a tensor of shape [5, 2.5]
    x.dispose()


def test_beyond_frame_complex(backend):
    (x, length, step), (a, *_) = _beyond("frame__complex")
    y = nf.signal.frame(x, length, step)
    _check(y, np.stack([a[0:2], a[1:3]]))
    nf.dispose([x, y])


@pytest.mark.parametrize("cid", ["hann_window__length_1", "hamming_window__length_1"])
def test_beyond_window_of_length_1(cid, backend):
    y = getattr(nf.signal, cid.split("__")[0])(1)
    _check(y, np.ones(1, np.float32))
    y.dispose()


@pytest.mark.parametrize("cid", ["hann_window__fractional", "hamming_window__fractional"])
def test_beyond_window_fractional_length(cid, backend):
    with pytest.raises(TypeError, match=f"{cid.split('__')[0]}: argument 'window_length' must be an int"):
        getattr(nf.signal, cid.split("__")[0])(2.5)


def test_beyond_stft_frame_length_1(backend):
    (x, length, step), (a, *_) = _beyond("stft__frame_length_1")
    y = nf.signal.stft(x, length, step)
    _check(y, a.reshape(-1, 1).astype(np.complex64))  # a window [1] and a 1-point transform
    nf.dispose([x, y])


# ----------------------------------------------------------------------------- more than fixtures


def test_spectral_namespace_is_the_top_level_transforms():
    assert nf.spectral.fft is nf.fft and nf.spectral.ifft is nf.ifft
    assert nf.spectral.rfft is nf.rfft and nf.spectral.irfft is nf.irfft


def test_chained_methods(backend):
    v = nf.tensor([3.0, -4.0])
    m = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    c = nf.complex(v, v)
    outs = [v.dot(v), v.norm(), v.norm(1), m.euclidean_norm(0), c.fft(), c.ifft(), v.rfft(), c.irfft()]
    np.testing.assert_allclose(outs[0].numpy(), 25)
    np.testing.assert_allclose(outs[1].numpy(), 5)
    np.testing.assert_allclose(outs[2].numpy(), 7)
    np.testing.assert_allclose(outs[3].numpy(), [math.sqrt(10), math.sqrt(20)], rtol=1e-6)
    np.testing.assert_allclose(outs[4].numpy(), np.fft.fft(c.numpy()), atol=1e-5)
    np.testing.assert_allclose(outs[5].numpy(), np.fft.ifft(c.numpy()), atol=1e-5)
    np.testing.assert_allclose(outs[6].numpy(), np.fft.rfft(v.numpy()), atol=1e-5)
    assert outs[7].shape == (2,)
    nf.dispose([v, m, c, *outs])


def test_complex_abs_kernel(backend):
    """TF.js's abs runs ComplexAbs for complex64 (ndflow's abs op runs Abs, which also handles it)."""
    c = nf.complex([3.0, -1.0, 0.0], [4.0, 1.0, -2.0])
    y = ENGINE.run_kernel("ComplexAbs", (c,), None)
    assert y.dtype == "float32"
    np.testing.assert_allclose(y.numpy(), [5.0, math.sqrt(2), 2.0], rtol=1e-6)
    nf.dispose([c, y])


def test_kernels_read_reshaped_inputs(backend):
    """A reshaped tensor shares its buffer with the original; these kernels read it in its own shape."""
    x = nf.tensor([1.0, 2.0, 3.0, 4.0])
    m = nf.reshape(x, [2, 2])
    c = nf.complex(m, m)
    outs = [nf.diag(m), nf.linalg.band_part(m, 0, 0), nf.fft(c), nf.real(c), nf.mat_mul(m, m)]
    assert [o.shape for o in outs] == [(2, 2, 2, 2), (2, 2), (2, 2), (2, 2), (2, 2)]
    np.testing.assert_allclose(outs[1].numpy(), [[1, 0], [0, 4]])
    np.testing.assert_allclose(outs[2].numpy(), np.fft.fft(c.numpy()), atol=1e-5)
    np.testing.assert_allclose(outs[4].numpy(), [[7, 10], [15, 22]])
    nf.dispose([x, m, c, *outs])


@pytest.mark.parametrize("n", [1, 2, 5, 8, 33])
def test_fft_round_trips(n, backend):
    rng = np.random.default_rng(n)
    a = (rng.standard_normal((3, n)) + 1j * rng.standard_normal((3, n))).astype(np.complex64)
    x = nf.tensor(a)
    f = nf.fft(x)
    back = nf.ifft(f)
    np.testing.assert_allclose(f.numpy(), np.fft.fft(a), atol=1e-4)
    np.testing.assert_allclose(back.numpy(), a, atol=1e-5)
    nf.dispose([x, f, back])


@pytest.mark.parametrize("n", [4, 6, 16])
def test_rfft_irfft_round_trip(n, backend):
    a = np.random.default_rng(n).standard_normal((2, n)).astype(np.float32)
    x = nf.tensor(a)
    spectrum = nf.rfft(x)
    back = nf.irfft(spectrum)
    np.testing.assert_allclose(spectrum.numpy(), np.fft.rfft(a), atol=1e-4)
    np.testing.assert_allclose(back.numpy(), a, atol=1e-5)
    nf.dispose([x, spectrum, back])


@pytest.mark.parametrize("shape", [(6, 6), (7, 4), (4, 7), (3, 2, 5, 5)])
@pytest.mark.parametrize("full", [False, True])
def test_qr_properties(shape, full, backend):
    x = nf.tensor(np.random.default_rng(sum(shape)).uniform(-1, 1, shape).astype(np.float32))
    q, r = nf.linalg.qr(x, full)
    _check_qr(x, q, r, full)
    nf.dispose([x, q, r])


def test_gram_schmidt_gives_orthonormal_rows(backend):
    x = nf.tensor(np.random.default_rng(0).uniform(-1, 1, (5, 8)).astype(np.float32))
    y = nf.linalg.gram_schmidt(x)
    v = y.numpy()
    np.testing.assert_allclose(v @ v.T, np.eye(5), atol=1e-5)
    nf.dispose([x, y])


def test_enclosing_power_of_two():
    # TF.js's formula 2 ** ceil(log(v) / log(2)), rounding included (2 ** 29 gives 2 ** 30 there too)
    assert [nf.enclosing_power_of_two(v) for v in (0, 1, 2, 3, 5, 8, 100, 1000, 1025)] == [
        0, 1, 2, 4, 8, 8, 128, 1024, 2048,
    ]  # fmt: skip
    assert nf.enclosing_power_of_two(2**29) == 2**30
    with pytest.raises(ValueError, match="enclosing_power_of_two"):
        nf.enclosing_power_of_two(-1)


def test_stft_with_a_python_window(backend):
    signal = nf.tensor(np.arange(12, dtype=np.float32))
    y = nf.signal.stft(signal, 4, 4, 4, lambda n: nf.ones([n]))
    np.testing.assert_allclose(y.numpy(), np.fft.rfft(np.arange(12.0).reshape(3, 4)), atol=1e-4)
    with pytest.raises(TypeError, match="stft: 'window_fn' must return a Tensor"):
        nf.signal.stft(signal, 4, 4, 4, lambda n: [1.0] * n)
    with pytest.raises(TypeError, match="stft: argument 'window_fn'"):
        nf.signal.stft(signal, 4, 4, 4, "hann")
    nf.dispose([signal, y])


@pytest.mark.parametrize("step", [0, -1])
def test_frame_needs_a_positive_step(step, backend):
    """TF.js loops forever here."""
    x = nf.tensor([1.0, 2.0, 3.0])
    with pytest.raises(ValueError, match="frame: argument 'frame_step' must be >= 1"):
        nf.signal.frame(x, 2, step)
    with pytest.raises(ValueError, match="stft: argument 'frame_step' must be >= 1"):
        nf.signal.stft(x, 2, step)
    x.dispose()


def test_errors_name_the_op(backend):
    x = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    s = nf.tensor(["a", "b", "c"])
    with pytest.raises(TypeError, match="frame: a string signal needs a string 'pad_value'"):
        nf.signal.frame(s, 2, 2, True, 0)  # TF.js fails to decode the padding
    with pytest.raises(TypeError, match="complex: argument 'real' must be a real numeric tensor, got complex64"):
        c = nf.complex(x, x)
        try:
            nf.complex(c, x)
        finally:
            c.dispose()
    with pytest.raises(TypeError, match="band_part: argument 'num_lower' must be an int"):
        nf.linalg.band_part(x, "1", 0)
    with pytest.raises(ValueError, match="stft: argument 'fft_length' must be >= 1"):
        nf.signal.stft([1.0], 0, 1)
    with pytest.raises(TypeError, match="stft: argument 'signal' must be a real numeric tensor"):
        nf.signal.stft(s, 1, 1)
    nf.dispose([x, s])


def test_ops_accept_python_values(backend):
    q, r = nf.linalg.qr([[1.0, 2.0], [3.0, 4.0]])
    outs = [
        nf.dot([1.0, 2.0], [3.0, 4.0]),
        nf.outer_product([1, 2], [3, 4]),
        nf.diag([1, 2]),
        nf.norm([3.0, 4.0]),
        nf.complex([1.0], [2.0]),
        q,
        nf.signal.frame([1.0, 2.0, 3.0, 4.0], 2, 2),
        nf.rfft([1.0, 0.0, 0.0, 0.0]),
    ]
    assert [o.dtype for o in outs] == ["float32"] * 4 + ["complex64", "float32", "float32", "complex64"]
    np.testing.assert_allclose(outs[6].numpy(), [[1, 2], [3, 4]])
    nf.dispose([*outs, r])
