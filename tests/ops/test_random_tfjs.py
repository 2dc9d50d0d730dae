"""Seeded random streams against real TF.js 4.22, value for value.

``tests/fixtures/random_streams.json`` comes from ``tests/fixtures/gen_random_streams.js`` (TF.js on its cpu
backend): seeded ``random_*``/``truncated_normal``/``multinomial``/``dropout`` calls, the kernels of a dense
and a conv2d layer built with each seeded initializer, and seeded ``Dropout`` layers in training. Every value
must be equal, float32 bits included: TF.js computes in doubles and rounds once into a Float32Array, and
ndflow keeps that order of operations. The one exception is the ``orthogonal`` initializer: its normal
draws are exact, but its QR decomposition is ndflow's (LAPACK's), not TF.js's Householder loop in JS, so
the rounding of the orthogonal factor differs (checked to 1e-6; they differ by up to 2e-7).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow.core.alea import Alea
from ndflow.ops.random_streams import GaussStream, UniformStream, js_number_string, seed_text

CASES = json.loads((Path(__file__).parent.parent / "fixtures" / "random_streams.json").read_text())["cases"]
OPS = [c for c in CASES if c["kind"] == "op"]
INITS = [c for c in CASES if c["kind"] == "initializer"]
DROPOUT_LAYERS = [c for c in CASES if c["kind"] == "dropout_layer"]

_OP_NAMES = {
    "randomUniform": "random_uniform", "randomNormal": "random_normal", "truncatedNormal": "truncated_normal",
    "randomStandardNormal": "random_standard_normal", "randomUniformInt": "random_uniform_int",
    "randomGamma": "random_gamma", "multinomial": "multinomial", "dropout": "dropout",
}  # fmt: skip
_INIT_NAMES = {
    "randomUniform": "random_uniform", "randomNormal": "random_normal", "truncatedNormal": "truncated_normal",
    "glorotUniform": "glorot_uniform", "glorotNormal": "glorot_normal", "heUniform": "he_uniform",
    "heNormal": "he_normal", "leCunUniform": "le_cun_uniform", "leCunNormal": "le_cun_normal",
    "varianceScaling": "variance_scaling", "orthogonal": "orthogonal",
}  # fmt: skip


def _ids(cases: list[dict], *keys: str) -> list[str]:
    return [f"{i}-" + "-".join(str(c.get(k)) for k in keys) for i, c in enumerate(cases)]


def _expected(output: dict) -> np.ndarray:
    dtype = {"float32": np.float32, "int32": np.int32, "bool": bool}[output["dtype"]]
    return np.array(output["values"], dtype).reshape(output["shape"])


def _check(result: nf.Tensor, output: dict) -> None:
    try:
        assert list(result.shape) == output["shape"] and result.dtype == output["dtype"]
        np.testing.assert_array_equal(result.numpy(), _expected(output), strict=True)
    finally:
        result.dispose()


@pytest.mark.parametrize("case", OPS, ids=_ids(OPS, "op"))
def test_op_streams_match_tfjs(case, backend):
    op, args = case["op"], list(case["args"])
    if op in ("multinomial", "dropout"):
        args[0] = np.array(args[0], np.float32)  # TF.js turns the nested list into a float32 tensor
    _check(getattr(nf, _OP_NAMES[op])(*args), case["output"])


def _kernel(layer_kind: str, init: nf.initializers.Initializer) -> nf.Tensor:
    if layer_kind == "dense":
        layer, shape = nf.layers.dense(units=5, kernel_initializer=init), [7]
    else:
        layer, shape = nf.layers.conv2d(filters=4, kernel_size=[3, 3], kernel_initializer=init), [8, 8, 2]
    layer.apply(nf.input(shape=shape))
    weights = layer.get_weights()  # copies
    layer.dispose()
    nf.dispose(weights[1:])
    return weights[0]


@pytest.mark.parametrize("case", INITS, ids=_ids(INITS, "initializer", "layer"))
def test_seeded_initializers_give_tfjs_kernels(case):
    config = {k: v for k, v in case["config"].items()}
    if "mode" in config:
        config["mode"] = {"fanIn": "fan_in", "fanOut": "fan_out", "fanAvg": "fan_avg"}[config["mode"]]
    init = getattr(nf.initializers, _INIT_NAMES[case["initializer"]])(**config)
    kernel = _kernel(case["layer"], init)
    if case["initializer"] == "orthogonal":  # ndflow's QR, not TF.js's: see the module docstring
        try:
            np.testing.assert_allclose(kernel.numpy(), _expected(case["output"]), rtol=0, atol=1e-6)
        finally:
            kernel.dispose()
        return
    _check(kernel, case["output"])


@pytest.mark.parametrize("case", DROPOUT_LAYERS, ids=_ids(DROPOUT_LAYERS, "rate", "seed"))
def test_seeded_dropout_layer_in_training(case):
    layer = nf.layers.dropout(rate=case["rate"], seed=case["seed"], noise_shape=case["noise_shape"])
    x = nf.tensor(case["x"], case["x_shape"])
    try:
        _check(layer.apply(x, {"training": True}), case["output"])
    finally:
        x.dispose()


# ----------------------------------------------------------------------------- the pieces


@pytest.mark.parametrize(
    "value, text",
    [(3, "3"), (-7, "-7"), (1.5, "1.5"), (0.1, "0.1"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
     (1e-7, "1e-7"), (1e-6, "0.000001"), (2**60, "1152921504606847000"), (-0.0, "0"), (1.25e-300, "1.25e-300"),
     (float("nan"), "NaN"), (float("-inf"), "-Infinity"), (5e-324, "5e-324")],
)  # fmt: skip
def test_js_number_string(value, text):
    assert js_number_string(value) == text


def test_seed_text_follows_tfjs_truthiness():
    assert seed_text(0, "op", falsy_is_unseeded=False) == "0"  # the uniform draws: 0 is a seed
    assert seed_text("", "op", falsy_is_unseeded=False) == ""
    assert seed_text(0, "op", falsy_is_unseeded=True) != seed_text(0, "op", falsy_is_unseeded=True)  # unseeded
    assert seed_text(np.int64(12), "op", falsy_is_unseeded=True) == "12"
    with pytest.raises(TypeError, match="op: argument 'seed' must be an int, float or str, got bool"):
        seed_text(True, "op", falsy_is_unseeded=True)


@pytest.mark.parametrize("seed", ["3", "", "abc", "0.8741234"])
def test_uniform_stream_is_alea(seed):
    gen, stream = Alea(seed), UniformStream(seed)
    want = [gen.random() for _ in range(300)]
    assert stream.take(200).tolist() + [stream.next() for _ in range(100)] == want


def test_unseeded_draws_differ_and_seed_zero_is_unseeded_for_normals(backend):
    draws = [nf.random_normal([20], 0, 1, None, 0) for _ in range(2)]
    uniform = [nf.random_uniform([20], 0, 1, "float32", 0) for _ in range(2)]
    try:
        assert not np.array_equal(draws[0].numpy(), draws[1].numpy())
        np.testing.assert_array_equal(uniform[0].numpy(), uniform[1].numpy())
    finally:
        nf.dispose(draws + uniform)


@pytest.mark.parametrize("truncated, as_int", [(False, False), (True, False), (False, True)])
def test_gauss_stream_continues_across_calls(truncated, as_int):
    """Values handed out one by one (as the gamma draw asks for them) continue the stream a block call gives."""
    whole = GaussStream(0.5, 2.0, as_int, truncated, "g").take(501)
    stream = GaussStream(0.5, 2.0, as_int, truncated, "g")
    parts = [stream.take(3), np.array([stream.next() for _ in range(97)]), stream.take(0), stream.take(401)]
    np.testing.assert_array_equal(np.concatenate(parts), whole)
