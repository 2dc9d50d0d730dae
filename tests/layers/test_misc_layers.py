"""SpatialDropout1D, Permute, RepeatVector, Masking, Embedding, merge, advanced activation, noise and
preprocessing layers, and masks through models: TF.js parity (``tests/fixtures/gen_layers_misc.py``),
shapes, configs, errors, training mode and gradients."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow import layers
from ndflow.layers import constraints, initializers, regularizers

FIXTURE = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "layers_misc.json").read_text())
RAW = FIXTURE["raw"]


@nf.serialization.register_class
class MaskProbe(layers.Layer):
    """``x * mask[..., None]``: makes the mask a layer receives visible (as in ``gen_layers_misc.js``)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.supports_masking = True

    def call(self, inputs, mask=None, **kwargs):
        x = inputs[0] if isinstance(inputs, list) else inputs
        if isinstance(mask, list):
            mask = mask[0]
        return nf.mul(x, 1) if mask is None else nf.mul(x, nf.expand_dims(nf.cast(mask, x.dtype), -1))


def as_tensor(record: dict) -> nf.Tensor:
    dtype = record.get("dtype", "float32")
    return nf.tensor(np.array(record["values"], dtype=dtype).reshape(record["shape"]), dtype=dtype)


def assert_close(t: nf.Tensor, record: dict, atol: float = 1e-5) -> None:
    assert list(t.shape) == record["shape"]
    ref = np.array(record["values"], dtype=record.get("dtype", "float32"))
    np.testing.assert_allclose(t.numpy().ravel(), ref, rtol=1e-5, atol=atol)


# -- the models of the fixture, built as gen_layers_misc.js builds them ---------------------------
def core_extra():
    return layers.sequential(
        layers=[
            layers.masking(mask_value=0.5, input_shape=[4, 3]),
            layers.spatial_dropout1d(rate=0.3, seed=2),
            MaskProbe(),
            layers.permute(dims=[2, 1]),
            layers.flatten(),
            layers.repeat_vector(n=2),
            layers.dense(units=2),
            layers.permute(dims=[2, 1]),
        ]
    )


def embedding_mask():
    tokens = layers.input(shape=[5], dtype="int32", name="tokens")
    masked = layers.embedding(input_dim=6, output_dim=3, mask_zero=True).apply(tokens)
    plain = layers.embedding(input_dim=6, output_dim=2, input_length=5).apply(tokens)
    out1 = MaskProbe().apply(layers.dense(units=4).apply(masked))
    out2 = MaskProbe().apply(layers.concatenate().apply([masked, plain]))
    return layers.model(inputs=tokens, outputs=[out1, out2])


def embedding_rnn():
    tokens = layers.input(shape=[5], dtype="int32")
    e = layers.dense(units=3).apply(layers.embedding(input_dim=6, output_dim=3, mask_zero=True).apply(tokens))
    seq = layers.simple_rnn(units=2, return_sequences=True).apply(e)
    last = layers.lstm(units=2).apply(layers.concatenate().apply([e, seq]))
    return layers.model(inputs=tokens, outputs=[seq, last])


def embedding_seq():
    return layers.sequential(
        layers=[
            layers.embedding(
                input_dim=7,
                output_dim=2,
                input_length=4,
                embeddings_initializer="randomNormal",
                embeddings_regularizer=regularizers.l2(l2=0.1),
                embeddings_constraint=constraints.max_norm(max_value=2),
            ),  # fmt: skip
            layers.flatten(),
            layers.dense(units=1),
        ]
    )


def embedding_no_length():
    return layers.sequential(
        layers=[layers.embedding(input_dim=5, output_dim=3, mask_zero=True, batch_size=2), MaskProbe()]
    )


def merge():
    a, b = layers.input(shape=[3, 4], name="a"), layers.input(shape=[3, 4], name="b")
    c, d = layers.input(shape=[4], name="c"), layers.input(shape=[4], name="d")
    outs = [
        layers.add().apply([a, b]),
        layers.multiply().apply([a, b, c]),
        layers.average().apply([a, b]),
        layers.maximum().apply([a, b, a]),
        layers.minimum(name="least").apply([a, b]),
        layers.concatenate(axis=1).apply([a, b]),
        layers.concatenate().apply([a, b, a]),
        layers.dot(axes=2).apply([a, b]),
        layers.dot(axes=[1, 1], normalize=True).apply([a, b]),
        layers.dot(axes=[2, 1]).apply([a, c]),
        layers.dot(axes=-1).apply([c, d]),
        layers.dot(axes=1, normalize=True).apply([c, d]),
        layers.add().apply([c, d, c]),
    ]
    return layers.model(inputs=[a, b, c, d], outputs=outs)


def advanced_activations():
    x, v = layers.input(shape=[3, 4]), layers.input(shape=[5])
    outs = [
        layers.relu().apply(x),
        layers.relu(max_value=0.6).apply(x),
        layers.leaky_relu().apply(x),
        layers.leaky_relu(alpha=0.1).apply(x),
        layers.prelu().apply(x),
        layers.prelu(
            shared_axes=[1],
            alpha_initializer=initializers.constant(value=0.25),
            alpha_regularizer=regularizers.l2(l2=0.01),
            alpha_constraint=constraints.non_neg(),
        ).apply(x),  # fmt: skip
        layers.prelu(shared_axes=2).apply(x),
        layers.elu().apply(x),
        layers.thresholded_relu().apply(x),
        layers.thresholded_relu(theta=0.3).apply(x),
        layers.softmax().apply(v),
        layers.softmax(axis=-1).apply(x),
        layers.softmax(axis=[1, 2]).apply(x),
        layers.softmax(axis=[2]).apply(x),
    ]
    return layers.model(inputs=[x, v], outputs=outs)


def noise():
    return layers.sequential(
        layers=[
            layers.gaussian_noise(stddev=0.5, input_shape=[5]),
            layers.gaussian_dropout(rate=0.3),
            layers.alpha_dropout(rate=0.2),
            layers.dense(units=2),
        ]
    )


def preprocessing():
    return layers.sequential(
        layers=[
            layers.rescaling(scale=1 / 255, offset=-0.5, input_shape=[6, 7, 2]),
            layers.reshape(target_shape=[6, 7, 2]),
            layers.center_crop(height=4, width=3),
            layers.rescaling(scale=2),
        ]
    )


def resizing_json():
    return layers.sequential(
        layers=[
            layers.resizing(
                height=5, width=4, interpolation="nearest", crop_to_aspect_ratio=True, input_shape=[6, 7, 2]
            ),
            layers.resizing(height=3, width=3),
        ]
    )


MODELS = {f.__name__: f for f in [core_extra, embedding_mask, embedding_rnn, embedding_seq, embedding_no_length, merge,
                                   advanced_activations, noise, preprocessing, resizing_json]}  # fmt: skip
PREDICTED = [name for name in MODELS if "outputs" in FIXTURE[name]]
# TF.js's Resizing reports [height, width, input_shape[2]]; ndflow reports the real shape.
OUR_OUTPUT_SHAPES = {"resizing_json": [[None, 3, 3, 2]]}


def check_predict(model, record: dict) -> None:
    weights = [as_tensor(w) for w in record["weights"]]
    xs = [as_tensor(x) for x in record["inputs"]]
    try:
        model.set_weights(weights)
        if "weights_after_set" in record:
            got = model.get_weights()
            for w, ref in zip(got, record["weights_after_set"], strict=True):
                assert_close(w, ref)
            nf.dispose(got)
        if "losses" in record:
            losses = model.calculate_losses()
            for loss, ref in zip(losses, record["losses"], strict=True):
                assert_close(loss, ref, atol=1e-4)
            nf.dispose(losses)
        y = model.predict(xs if len(xs) > 1 else xs[0])
        ys = y if isinstance(y, list) else [y]
        assert len(ys) == len(record["outputs"])
        for out, ref in zip(ys, record["outputs"], strict=True):
            assert_close(out, ref)
        nf.dispose(ys)
    finally:
        nf.dispose([weights, xs])


@pytest.mark.parametrize("case", list(MODELS))
def test_names_json_shapes_summary(case):
    record = FIXTURE[case]
    model = MODELS[case]()
    try:
        assert model.name == record["model_name"]
        assert [layer.name for layer in model.layers] == record["layer_names"]
        assert [[w.name, w.original_name] for w in model.weights] == record["weight_names"]
        assert [list(o.shape) for o in model.outputs] == OUR_OUTPUT_SHAPES.get(case, record["output_shapes"])
        assert model.to_json(return_string=False) == record["json"]
        assert model.to_json() == record["json_string"]
        for summary in record["summaries"]:
            lines: list[str] = []
            model.summary(summary["line_length"], summary["positions"], print_fn=lines.append)
            assert lines == summary["lines"]
    finally:
        model.dispose()


@pytest.mark.parametrize("case", PREDICTED)
def test_predict_matches_tfjs(case):
    model = MODELS[case]()
    try:
        check_predict(model, FIXTURE[case])
    finally:
        model.dispose()


@pytest.mark.parametrize("case", list(MODELS))
def test_model_from_tfjs_json(case):
    """TF.js's JSON rebuilds a model that serializes as TF.js's reloaded model does, and predicts the same."""
    record = FIXTURE[case]
    model = layers.deserialize_layer(record["json"])
    try:
        assert model.to_json() == record["json_reloaded"]
        assert [[w.name, w.original_name] for w in model.weights] == record["weight_names"]
        if "outputs" in record:
            check_predict(model, record)
    finally:
        model.dispose()


# -- layers applied to tensors (the raw case) -------------------------------------------------------
def run_raw(layer, *xs, **kwargs):
    tensors = [as_tensor(x) for x in xs]
    try:
        return layer.apply(tensors if len(tensors) > 1 else tensors[0], kwargs or None)
    finally:
        nf.dispose(tensors)


CROPS = {"crop_4x3": (4, 3, "x"), "crop_6x6": (6, 6, "x"), "crop_5x7": (5, 7, "x"), "crop_up_8x9": (8, 9, "x"),
         "crop_rank3": (3, 3, "image3"), "crop_int": (3, 2, "xi"), "crop_up_int": (7, 5, "xi")}  # fmt: skip


@pytest.mark.parametrize("name", list(CROPS))
def test_center_crop_matches_tfjs(name):
    height, width, source = CROPS[name]
    layer = layers.center_crop(height=height, width=width)
    y = run_raw(layer, RAW["inputs"][source])
    try:
        assert y.dtype == RAW["inputs"][source]["dtype"]
        assert_close(y, RAW["center_crop"][name], atol=1e-4)
        assert layer.compute_output_shape((None, 6, 7, 2)) == (None, height, width, 2)
    finally:
        y.dispose()


@pytest.mark.parametrize("name", list(RAW["resizing"]))
def test_resizing_matches_tfjs(name):
    if name == "rank3":
        layer, source = layers.resizing(height=4, width=3), "image3"
    else:
        interpolation, crop, size = name.split("_")
        h, w = map(int, size.split("x"))
        layer = layers.resizing(height=h, width=w, interpolation=interpolation, crop_to_aspect_ratio=crop == "true")
        source = "small"
    y = run_raw(layer, RAW["inputs"][source])
    try:
        assert_close(y, RAW["resizing"][name], atol=1e-4)
    finally:
        y.dispose()


def test_rescaling_matches_tfjs():
    a = run_raw(layers.rescaling(scale=2, offset=1), RAW["inputs"]["xi"])
    b = run_raw(layers.rescaling(scale=0.5), RAW["inputs"]["image3"])
    try:
        assert a.dtype == "float32"
        assert_close(a, RAW["rescaling_int"])
        assert_close(b, RAW["rescaling_default"])
    finally:
        nf.dispose([a, b])


def test_computed_masks_match_tfjs():
    x = as_tensor(FIXTURE["core_extra"]["inputs"][0])
    tokens = nf.tensor([3, 1, 0, 5, 0, 0, 2, 4, 4, 1], [2, 5], "int32")
    cat_x = [nf.ones([2, 5, 3]), nf.ones([2, 5, 2])]
    cat_mask = nf.tensor([1, 1, 0, 1, 0, 0, 1, 1, 1, 1], [2, 5], "bool")
    masks = [
        layers.masking(mask_value=0.5).compute_mask(x),
        layers.embedding(input_dim=6, output_dim=2, mask_zero=True).compute_mask(tokens),
        layers.concatenate().compute_mask(cat_x, [cat_mask, None]),
    ]
    try:
        for mask, ref in zip(masks, [RAW["masking_mask"], RAW["embedding_mask"], RAW["concat_mask"]], strict=True):
            assert mask.dtype == "bool"
            assert_close(mask, ref)
        assert layers.embedding(input_dim=6, output_dim=2).compute_mask(tokens) is None
        assert layers.concatenate().compute_mask(cat_x, [None, None]) is None
    finally:
        nf.dispose([x, tokens, cat_x, cat_mask, masks])
    y = run_raw(layers.masking(), {"shape": [2, 2, 2], "values": [0, 0, 1, 0, 0, 0, 0, 0]})
    try:
        assert_close(y, RAW["masking_default"])
    finally:
        y.dispose()


def test_softmax_mask_repeat_vector_permute_match_tfjs():
    sm = RAW["softmax_mask"]
    x, mask = as_tensor(sm["x"]), as_tensor(sm["mask"])
    outs = [
        layers.softmax().apply(x, {"mask": mask}),
        run_raw(layers.repeat_vector(n=4), RAW["repeat_vector"]["x"]),
        run_raw(layers.permute(dims=[3, 1, 2]), RAW["permute"]["x"]),
    ]
    try:
        for y, ref in zip(outs, [sm["y"], RAW["repeat_vector"]["y"], RAW["permute"]["y"]], strict=True):
            assert_close(y, ref)
    finally:
        nf.dispose([x, mask, outs])


def test_merges_on_tensors_match_tfjs():
    m = RAW["merge"]
    m1, m2, m3, m4 = (as_tensor(m[k]) for k in ("m1", "m2", "m3", "m4"))
    outs = {
        "add_ranks": layers.add([m1, m2]),
        "maximum_bcast": layers.maximum([m1, m3]),
        "average_ranks": layers.average([m2, m1, m3]),
        "dot_32": layers.dot([m1, m4], axes=[1, 1]),
    }
    try:
        for name, y in outs.items():
            assert_close(y, m[name])
    finally:
        nf.dispose([m1, m2, m3, m4, list(outs.values())])


@pytest.mark.parametrize(
    ("name", "fn", "match"),
    [
        ("permute_bad", lambda: layers.permute(dims=[1, 3]), "Permute: invalid permutation dims=\\[1, 3\\]"),
        ("merge_one", lambda: layers.add().apply([layers.input(shape=[2])]), "at least 2 inputs, got 1"),
        ("merge_batch", lambda: layers.add([layers.input(batch_shape=[2, 3]), layers.input(batch_shape=[3, 3])]),
         "different batch sizes"),
        ("merge_bcast", lambda: layers.add([layers.input(shape=[3]), layers.input(shape=[4])]),
         "could not be broadcast together with shapes \\[3\\] \\[4\\]"),
        ("concat_shapes", lambda: layers.concatenate([layers.input(shape=[2, 3]), layers.input(shape=[3, 3])]),
         "matching shapes except for the concat axis"),
        ("dot_incompatible", lambda: layers.dot([layers.input(shape=[3]), layers.input(shape=[4])], axes=1),
         "dimension incompatibility: 3 !== 4"),
        ("dot_rank4", lambda: layers.dot([layers.input(shape=[3, 2, 2]), layers.input(shape=[3, 2, 2])], axes=1),
         "4D or higher rank"),
        ("resizing_interp", lambda: layers.resizing(height=2, width=2, interpolation="bicubic"),
         "invalid interpolation 'bicubic'"),
        ("embedding_dim", lambda: layers.embedding(input_dim=0, output_dim=2),
         "expected input_dim to be a positive integer, but got 0"),
        ("embedding_length", lambda: layers.embedding(input_dim=3, output_dim=2, input_length=4).apply(
            layers.input(shape=[5])), "input_length is 4, but the input shape is \\[None, 5\\]"),
    ],
)  # fmt: skip
def test_errors_like_tfjs(name, fn, match):
    assert RAW["errors"][name] is not None  # TF.js raises too
    with pytest.raises((ValueError, TypeError, NotImplementedError), match=match):
        fn()


def test_beyond_tfjs_elu_alpha_and_softmax_any_axis():
    assert RAW["errors"]["elu_alpha"] and RAW["errors"]["softmax_nonlast"]  # TF.js refuses both
    x = nf.tensor(np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4))
    ys = [layers.elu(alpha=0.5).apply(x), layers.softmax().apply(x)]
    try:
        v = x.numpy()
        np.testing.assert_allclose(ys[0].numpy(), np.where(v > 0, v, 0.5 * (np.exp(v) - 1)), rtol=1e-5, atol=1e-6)
        e = np.exp(v - v.max(axis=1, keepdims=True))
        np.testing.assert_allclose(ys[1].numpy(), e / e.sum(axis=1, keepdims=True), rtol=1e-5)
    finally:
        nf.dispose([x, ys])


# -- shapes, configs and errors of every layer --------------------------------------------------------
SHAPE_CASES = [
    (lambda: layers.spatial_dropout1d(rate=0.5), (None, 5, 3), (None, 5, 3)),
    (lambda: layers.permute(dims=[3, 1, 2]), (None, 2, 3, 4), (None, 4, 2, 3)),
    (lambda: layers.repeat_vector(n=3), (None, 4), (None, 3, 4)),
    (lambda: layers.masking(mask_value=-1), (None, 5, 3), (None, 5, 3)),
    (lambda: layers.embedding(input_dim=9, output_dim=4, input_length=[None, 3]), (None, 2, 3), (None, 2, 3, 4)),
    (lambda: layers.subtract(), [(None, 3), (None, 3)], (None, 3)),
    (lambda: layers.add(), [(4, 1, 3), (None, 2, 1)], (4, 2, 3)),
    (lambda: layers.concatenate(axis=-2), [(None, 2, 3), (None, 5, 3)], (None, 7, 3)),
    (lambda: layers.concatenate(axis=1), [(None, None, 3), (None, 5, 3)], (None, None, 3)),
    (lambda: layers.dot(axes=[1, 2]), [(None, 3, 4), (None, 5, 3)], (None, 4, 5)),
    (lambda: layers.relu(max_value=6), (None, 3), (None, 3)),
    (lambda: layers.leaky_relu(alpha=0.2), (None, 3), (None, 3)),
    (lambda: layers.prelu(shared_axes=[1, 2]), (None, 2, 3, 4), (None, 2, 3, 4)),
    (lambda: layers.elu(alpha=0.5), (None, 3), (None, 3)),
    (lambda: layers.thresholded_relu(theta=0.5), (None, 3), (None, 3)),
    (lambda: layers.softmax(axis=[1, 2]), (None, 2, 3), (None, 2, 3)),
    (lambda: layers.gaussian_noise(stddev=0.2, seed=3), (None, 3), (None, 3)),
    (lambda: layers.gaussian_dropout(rate=0.2), (None, 3), (None, 3)),
    (lambda: layers.alpha_dropout(rate=0.2, noise_shape=[None, 1]), (None, 3), (None, 3)),
    (lambda: layers.rescaling(scale=0.5, offset=1), (None, 4, 4, 3), (None, 4, 4, 3)),
    (lambda: layers.center_crop(height=2, width=3), (None, 4, 5, 3), (None, 2, 3, 3)),
    (lambda: layers.resizing(height=8, width=6), (7, 4, 5, 3), (7, 8, 6, 3)),
    (lambda: layers.resizing(height=8, width=6), (4, 5, 3), (8, 6, 3)),
]


@pytest.mark.parametrize(("make", "in_shape", "out_shape"), SHAPE_CASES)
def test_output_shape_and_config_round_trip(make, in_shape, out_shape):
    layer = make()
    assert layer.compute_output_shape(in_shape) == out_shape
    config = layer.get_config()
    assert "name" in config and "trainable" in config
    again = type(layer).from_config(json.loads(json.dumps(config)))
    if isinstance(layer, layers.Embedding):
        config["dtype"] = "float32"  # implied by batch_input_shape: TF.js's reloaded layer has it too
    assert again.get_config() == config
    assert nf.serialization.to_json(again.get_config()) == nf.serialization.to_json(config)


@pytest.mark.parametrize(
    ("fn", "match"),
    [
        (lambda: layers.repeat_vector(n=0), "RepeatVector: expected n to be a positive integer"),
        (lambda: layers.permute(dims=2), "Permute: dims must be a list"),
        (lambda: layers.masking(mask_value="x"), "Masking: mask_value must be a number"),
        (lambda: layers.embedding(input_dim=3, output_dim=-1), "Embedding: expected output_dim"),
        (lambda: layers.concatenate(axis=1.5), "Concatenate: axis must be an integer"),
        (lambda: layers.dot(axes=[1, 2, 3]), "Dot: axes must be an integer or a list of 2 integers"),
        (lambda: layers.dot(axes=None), "Dot: axes must be"),
        (lambda: layers.add(layers.input(shape=[2])), "Add: expected a list of tensors to merge"),
        (lambda: layers.subtract([layers.input(shape=[2])] * 3), "exactly 2 inputs, got 3"),
        (lambda: layers.relu(max_value="6"), "ReLU: max_value must be a number"),
        (lambda: layers.leaky_relu(alpha=[1]), "LeakyReLU: alpha must be a number"),
        (lambda: layers.prelu(shared_axes="1"), "PReLU: expected shared_axes"),
        (lambda: layers.prelu(shared_axes=3).apply(layers.input(shape=[2, 2])), "shared axis 3 is out of range"),
        (lambda: layers.prelu().apply(layers.input(shape=[None, 2])), "must be known along the axes"),
        (lambda: layers.thresholded_relu(theta=None) and layers.thresholded_relu(theta="a"), "theta must be a number"),
        (lambda: layers.softmax(axis=[]), "Softmax: axis must be"),
        (lambda: layers.gaussian_noise(stddev=None), "GaussianNoise: stddev must be a number"),
        (lambda: layers.gaussian_dropout(rate="0.1"), "GaussianDropout: rate must be a number"),
        (lambda: layers.alpha_dropout(rate=None), "AlphaDropout: rate must be a number"),
        (lambda: layers.rescaling(scale="1"), "Rescaling: scale must be a number"),
        (lambda: layers.center_crop(height=0, width=2), "CenterCrop: expected height to be a positive integer"),
        (lambda: layers.resizing(height=2, width=2.5), "Resizing: expected width to be a positive integer"),
        (lambda: layers.center_crop(height=2, width=2).compute_output_shape((None, 4)), "expected an image"),
        (lambda: layers.spatial_dropout1d(rate=0.5).apply(layers.input(shape=[3])), "expected ndim=3"),
    ],
)
def test_errors_name_the_layer_and_argument(fn, match):
    with pytest.raises((ValueError, TypeError), match=match):
        fn()


# -- masks, functional forms, training mode, gradients --------------------------------------------
def test_merge_masks_are_anded_and_dot_drops_them():
    tokens1, tokens2 = layers.input(shape=[3], dtype="int32"), layers.input(shape=[3], dtype="int32")
    e1, e2 = (
        layers.embedding(input_dim=4, output_dim=2, mask_zero=True, embeddings_initializer="ones").apply(t)
        for t in (tokens1, tokens2)
    )
    outs = [MaskProbe().apply(layers.add([e1, e2])), MaskProbe().apply(layers.dot([e1, e2], axes=2))]
    model = layers.model(inputs=[tokens1, tokens2], outputs=outs)
    t1, t2 = nf.tensor([[1, 0, 2]], dtype="int32"), nf.tensor([[3, 3, 0]], dtype="int32")
    try:
        added, dotted = model.predict([t1, t2])
        np.testing.assert_allclose(added.numpy(), [[[2, 2], [0, 0], [0, 0]]])  # masks [1,0,1] & [1,1,0]
        np.testing.assert_allclose(dotted.numpy(), np.full((1, 3, 3), 2.0))  # no mask after Dot
        nf.dispose([added, dotted])
    finally:
        nf.dispose([t1, t2])
        model.dispose()


def test_functional_forms_and_subtract():
    a, b = layers.input(shape=[2]), layers.input(shape=[2])
    y = layers.subtract([a, b], name="diff")
    assert isinstance(y, layers.SymbolicTensor) and y.shape == (None, 2) and y.source_layer.name == "diff"
    x1, x2 = nf.tensor([[1.0, 2.0]]), nf.tensor([[0.5, 4.0]])
    outs = [layers.subtract([x1, x2]), layers.concatenate([x1, x2], axis=0), layers.minimum([x1, x2])]
    try:
        np.testing.assert_allclose(outs[0].numpy(), [[0.5, -2.0]])
        np.testing.assert_allclose(outs[1].numpy(), [[1.0, 2.0], [0.5, 4.0]])
        np.testing.assert_allclose(outs[2].numpy(), [[0.5, 2.0]])
        assert layers.subtract().get_config() == {"name": "subtract_Subtract2", "trainable": True}
    finally:
        nf.dispose([x1, x2, outs])


def test_noise_layers_only_act_when_training():
    x = nf.ones([400, 50])
    made = [layers.gaussian_noise(stddev=0.5, seed=1), layers.gaussian_dropout(rate=0.5, seed=1),
            layers.alpha_dropout(rate=0.3, seed=1), layers.spatial_dropout1d(rate=0.5, seed=1)]  # fmt: skip
    try:
        for layer in made[:3]:
            y = layer.apply(x)
            np.testing.assert_array_equal(y.numpy(), 1.0)
            y.dispose()
        noisy_tensors = [layer.apply(x, {"training": True}) for layer in made[:3]]
        noisy = [t.numpy() for t in noisy_tensors]
        nf.dispose(noisy_tensors)
        assert abs(noisy[0].mean() - 1) < 0.02 and abs(noisy[0].std() - 0.5) < 0.02
        assert abs(noisy[1].mean() - 1) < 0.02 and abs(noisy[1].std() - 1.0) < 0.03
        alpha_p = -1.6732632423543772 * 1.0507009873554805  # dropped units take SELU's lower bound
        a = (0.7 * (1 + 0.3 * alpha_p**2)) ** -0.5
        expected = [a * alpha_p - a * alpha_p * 0.3, a * 1 - a * alpha_p * 0.3]
        np.testing.assert_allclose(np.unique(noisy[2]), expected, rtol=1e-6)
        z = nf.random_normal([200000], 0, 1, None, 5)
        selu = nf.selu(z)
        dropped = made[2].apply(selu, {"training": True})
        values = dropped.numpy()
        assert abs(values.mean()) < 0.02 and abs(values.std() - 1) < 0.02  # self-normalizing: kept at 0, 1
        nf.dispose([z, selu, dropped])
        x3 = nf.ones([20, 6, 8])
        y3 = made[3].apply(x3, {"training": True})
        values = y3.numpy()
        assert (values == values[:, :1, :]).all() and set(np.unique(values)) == {0.0, 2.0}  # whole channels
        first, second = (made[0].apply(x, {"training": True}) for _ in range(2))
        assert not np.array_equal(first.numpy(), second.numpy())  # the seed advances per call
        nf.dispose([x3, y3, first, second])
    finally:
        x.dispose()


def test_resizing_runs_inside_a_model():
    model = layers.sequential(layers=[layers.resizing(height=3, width=2, input_shape=[4, 5, 1]), layers.flatten()])
    x = nf.ones([2, 4, 5, 1])
    try:
        assert model.outputs[0].shape == (None, 6)
        y = model.predict(x)
        np.testing.assert_allclose(y.numpy(), 1.0)
        y.dispose()
    finally:
        x.dispose()
        model.dispose()


def test_training_step_changes_every_trainable_weight():
    tokens, x = layers.input(shape=[4], dtype="int32"), layers.input(shape=[4, 3])
    seeded = [initializers.random_uniform(minval=-1, maxval=1, seed=k) for k in range(4)]  # deterministic
    e = layers.embedding(input_dim=5, output_dim=3, mask_zero=True, embeddings_initializer=seeded[0]).apply(tokens)
    p = layers.prelu(shared_axes=[1], alpha_initializer=initializers.constant(value=0.3)).apply(e)
    d = layers.dense(units=3, kernel_initializer=seeded[1]).apply(
        layers.masking(mask_value=9).apply(layers.rescaling(scale=0.5).apply(x))
    )
    merged = layers.concatenate().apply([
        layers.add([p, d]), layers.subtract([p, d]), layers.multiply([p, d]), layers.average([p, d]),
        layers.maximum([p, d]), layers.minimum([p, d]),
    ])  # fmt: skip
    h = merged
    chain = [
        layers.relu(max_value=5), layers.leaky_relu(), layers.elu(alpha=0.7), layers.thresholded_relu(theta=-9),
        layers.spatial_dropout1d(rate=0.2, seed=1), layers.gaussian_noise(stddev=0.1, seed=1),
        layers.gaussian_dropout(rate=0.1, seed=1), layers.alpha_dropout(rate=0.1, seed=1), layers.softmax(axis=-1),
        layers.permute(dims=[2, 1]),
    ]  # fmt: skip
    for layer in chain:
        h = layer.apply(h)
    h = layers.flatten().apply(layers.dot([h, h], axes=[1, 1], normalize=True))
    y = layers.dense(units=1, kernel_initializer=seeded[2]).apply(
        layers.flatten().apply(
            layers.repeat_vector(n=2).apply(layers.dense(units=2, kernel_initializer=seeded[3]).apply(h))
        )
    )
    model = layers.model(inputs=[tokens, x], outputs=y)
    t = nf.tensor([[1, 2, 0, 4], [3, 0, 1, 2]], dtype="int32")
    v = nf.tensor(np.linspace(-1, 1, 24, dtype=np.float32).reshape(2, 4, 3))
    weights = [w.read() for w in model.trainable_weights]
    assert {w.name.split("/")[0].split("_")[0] for w in weights} == {"embedding", "p", "dense"}
    before = [w.numpy().copy() for w in weights]
    try:
        nf.train.sgd(0.5).minimize(
            lambda: nf.mean(nf.square(model.apply([t, v], {"training": True}))), var_list=weights
        )
        for w, old in zip(weights, before, strict=True):
            assert not np.array_equal(w.numpy(), old), f"{w.name} did not change"
    finally:
        nf.dispose([t, v])
        model.dispose()
