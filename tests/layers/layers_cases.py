"""The models of ``layers_core.json``, built in ndflow as ``gen_layers_core.js`` builds them in TF.js."""

from __future__ import annotations

import json
from pathlib import Path

from ndflow import layers
from ndflow.layers import constraints, initializers, regularizers

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "layers_core.json"
ACTIVATIONS = [
    "linear", "relu", "relu6", "elu", "selu", "sigmoid", "hardSigmoid", "softmax", "softplus", "softsign", "tanh",
    "swish", "mish", "gelu", "gelu_new", "logSoftmax",
]  # fmt: skip


def load_fixture() -> dict:
    """The TF.js reference records, by case name."""
    return json.loads(FIXTURE.read_text())


def seq_mlp() -> layers.Sequential:
    return layers.sequential(
        layers=[
            layers.dense(units=4, input_shape=[3], activation="relu"),
            layers.dropout(rate=0.5),
            layers.dense(units=2, activation="softmax"),
        ]
    )


def seq_reshape() -> layers.Sequential:
    return layers.sequential(
        layers=[
            layers.reshape(target_shape=[2, 3], input_shape=[6]),
            layers.dense(units=5, activation="sigmoid"),
            layers.flatten(),
            layers.dense(units=2, use_bias=False, activation="elu"),
            layers.activation(activation="softmax"),
        ]
    )


def functional_multi() -> layers.LayersModel:
    a = layers.input(shape=[3], name="a")
    b = layers.input(shape=[3])
    shared = layers.dense(units=2, name="shared")
    ya, yb = shared.apply(a), shared.apply(b)
    h = layers.dense(units=4, activation="relu").apply(ya)
    out1 = layers.dense(units=1).apply(h)
    out2 = layers.activation(activation="tanh").apply(yb)
    return layers.model(inputs=[a, b], outputs=[out1, out2])


def nested() -> layers.LayersModel:
    inner = layers.sequential(layers=[layers.dense(units=3, input_shape=[4], activation="relu"), layers.dense(units=2)])
    x = layers.input(shape=[4])
    y = inner.apply(x)
    z = layers.dense(units=1, activation="sigmoid").apply(y)
    return layers.model(inputs=x, outputs=z)


def seq_of_functional() -> layers.Sequential:
    x = layers.input(shape=[3])
    inner = layers.model(inputs=x, outputs=layers.dense(units=4, activation="tanh").apply(x), name="encoder")
    m = layers.sequential()
    m.add(inner)
    m.add(layers.dense(units=2))
    return m


def config_zoo() -> layers.Sequential:
    return layers.sequential(
        layers=[
            layers.dense(
                units=3,
                input_shape=[3],
                kernel_initializer="identity",
                bias_initializer="ones",
                kernel_constraint=constraints.max_norm(max_value=1.5, axis=0),
                bias_constraint="nonNeg",
                kernel_regularizer=regularizers.l1l2(l1=0.01, l2=0.02),
                bias_regularizer=regularizers.l2(l2=0.5),
            ),
            layers.dense(
                units=3,
                kernel_initializer=initializers.constant(value=0.25),
                bias_initializer=initializers.random_uniform(minval=-0.1, maxval=0.2, seed=7),
                kernel_constraint=constraints.unit_norm(axis=1),
                kernel_regularizer=regularizers.l1(l1=0.1),
                activation="hardSigmoid",
            ),
            layers.dense(
                units=4,
                kernel_initializer=initializers.he_uniform(seed=3),
                bias_initializer=initializers.truncated_normal(mean=0.5, stddev=0.1),
                kernel_constraint=constraints.min_max_norm(min_value=0.5, max_value=0.8, rate=0.7),
                activation="logSoftmax",
            ),
            layers.dense(
                units=2,
                kernel_initializer=initializers.orthogonal(gain=2),
                bias_initializer=initializers.random_normal(stddev=0.3),
                activation="gelu_new",
                trainable=False,
            ),
            layers.dense(
                units=2,
                kernel_initializer=initializers.variance_scaling(scale=2, mode="fanOut", distribution="uniform"),
                bias_initializer=initializers.le_cun_normal(seed=1),
                activation="swish",
            ),
            layers.dense(units=2, kernel_initializer="glorotUniform", bias_initializer="heNormal", activation="mish"),
        ]
    )


MODELS = {
    "seq_mlp": seq_mlp,
    "seq_reshape": seq_reshape,
    "functional_multi": functional_multi,
    "nested": nested,
    "seq_of_functional": seq_of_functional,
    "config_zoo": config_zoo,
}
