"""TF.js passes options as one object: ``tf.initializers.glorotUniform({seed: 1})``, ``tf.regularizers.l2({l2})``,
``tf.constraints.maxNorm({maxValue, axis})``. The same dict works here (camelCase or snake_case keys), an unknown
key is refused by name, and positional arguments keep working."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda: nf.initializers.glorot_uniform({"seed": 1}), {"seed": 1}),
        (lambda: nf.initializers.random_normal({"mean": 1, "stddev": 2, "seed": 3}), {"mean": 1, "stddev": 2}),
        (lambda: nf.initializers.variance_scaling({"scale": 2, "mode": "fanIn"}), {"scale": 2, "mode": "fan_in"}),
        (lambda: nf.initializers.constant({"value": 3}), {"value": 3}),
        (lambda: nf.constraints.max_norm({"maxValue": 2, "axis": 1}), {"max_value": 2, "axis": 1}),
        (lambda: nf.constraints.min_max_norm({"minValue": 0.5, "maxValue": 1}), {"min_value": 0.5, "max_value": 1}),
    ],
)
def test_config_objects(make, expected) -> None:
    config = make().get_config()
    assert {k: config[k] for k in expected} == expected


def test_regularizer_objects() -> None:
    r = nf.regularizers.l1l2({"l1": 0.1, "l2": 0.2})
    assert (r.l1, r.l2) == (0.1, 0.2)
    assert nf.regularizers.l2({"l2": 0.5}).l2 == 0.5 and nf.regularizers.l2(0.5).l2 == 0.5


def test_a_seeded_initializer_from_an_object_equals_the_keyword_form() -> None:
    a = nf.initializers.glorot_uniform({"seed": 7})([3, 4])
    b = nf.initializers.glorot_uniform(seed=7)([3, 4])
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    nf.dispose([a, b])


def test_unknown_keys_and_camel_case_keywords_are_refused() -> None:
    with pytest.raises(ValueError, match="glorot_uniform: unknown config key 'sed'"):
        nf.initializers.glorot_uniform({"sed": 1})
    with pytest.raises(TypeError, match=r"max_norm: unexpected argument\(s\) 'maxValue' \(use 'max_value'\)"):
        nf.constraints.max_norm(maxValue=2)


def test_sequential_and_model_take_tfjs_objects() -> None:
    """``tf.sequential({layers: [...]})`` and ``tf.model({inputs, outputs})``: the two commonest TF.js lines."""
    seq = nf.sequential({"layers": [nf.layers.dense({"units": 2, "inputShape": [3]})], "name": "s"})
    assert seq.name == "s" and list(seq.output_shape) == [None, 2]
    x = nf.input({"shape": [3]})
    y = nf.layers.dense({"units": 4}).apply(x)
    fn = nf.model({"inputs": x, "outputs": y})
    assert list(fn.output_shape) == [None, 4]
    with pytest.raises(ValueError, match="sequential: unknown config key 'layerz'"):
        nf.sequential({"layerz": []})
    seq.dispose()
    fn.dispose()
