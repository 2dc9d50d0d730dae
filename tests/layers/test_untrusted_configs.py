"""Untrusted layer configs: weights are checked against the manifest and the MAX_WEIGHT_BYTES limit before they
are allocated, so a huge config is a ValueError naming the layer and weight, not a MemoryError (issue 24)."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

import ndflow as nf
from ndflow.core.flags import env

L = nf.layers


def _sequential(layer):
    model = nf.sequential()
    model.add(layer)
    return model


def _saved_dense(tmp_path) -> dict:
    model = _sequential(L.dense(units=3, input_shape=[4]))
    model.save(str(tmp_path))
    model.dispose()
    return json.loads((tmp_path / "model.json").read_text())


def _set_units(tmp_path, model_json: dict, units: int) -> None:
    model_json["modelTopology"]["config"]["layers"][-1]["config"]["units"] = units
    (tmp_path / "model.json").write_text(json.dumps(model_json))


def test_a_billion_unit_dense_config_is_refused_before_allocation(tmp_path):
    _set_units(tmp_path, _saved_dense(tmp_path), 10**9)
    code = f"""
        import resource, time
        resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
        import ndflow as nf
        start = time.perf_counter()
        try:
            nf.load_layers_model({str(tmp_path)!r})
        except ValueError as exc:
            print("REFUSED", time.perf_counter() - start, exc)
    """
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    assert "REFUSED" in out.stdout, out.stdout + out.stderr
    assert float(out.stdout.split()[1]) < 5.0
    assert "dense_Dense1" in out.stdout and "kernel" in out.stdout and "MAX_WEIGHT_BYTES" in out.stdout


def test_config_shape_that_disagrees_with_the_manifest_names_layer_and_weight(tmp_path):
    _set_units(tmp_path, _saved_dense(tmp_path), 5)
    with pytest.raises(ValueError, match=r"layer 'dense_Dense1'.*'dense_Dense1/kernel'.*\[4, 5\].*\[4, 3\]"):
        nf.load_layers_model(str(tmp_path))


def test_a_matching_model_still_loads(tmp_path):
    _saved_dense(tmp_path)
    model = nf.load_layers_model(str(tmp_path))
    assert [tuple(w.shape) for w in model.weights] == [(4, 3), (3,)]
    model.dispose()


@pytest.mark.parametrize(
    ("make", "weight"),
    [
        (lambda: L.dense(units=10**9, input_shape=[4]), "kernel"),
        (lambda: L.conv2d(filters=10**9, kernel_size=3, input_shape=[8, 8, 3]), "kernel"),
        (lambda: L.conv2d(filters=2, kernel_size=10**5, input_shape=[8, 8, 3]), "kernel"),
        (lambda: L.dense(units=4, batch_input_shape=[None, 10**9]), "kernel"),
        (lambda: L.lstm(units=10**6, input_shape=[3, 4]), "recurrent_kernel"),
        (lambda: L.simple_rnn(units=10**6, input_shape=[3, 4]), "recurrent_kernel"),
        (lambda: L.embedding(input_dim=10**9, output_dim=8, input_shape=[3]), "embeddings"),
    ],
    ids=["dense_units", "conv_filters", "conv_kernel_size", "batch_input_shape", "lstm_units", "rnn_units", "embed"],
)
def test_huge_configs_are_refused_naming_layer_weight_and_size(make, weight):
    with pytest.raises(ValueError, match=rf"layer '.*': weight '{weight}' of shape .* bytes.*MAX_WEIGHT_BYTES"):
        _sequential(make())
    assert nf.memory().num_tensors == 0  # weights made before the refused one are freed


def test_the_limit_is_a_flag():
    previous = env().get("MAX_WEIGHT_BYTES")
    try:
        env().set("MAX_WEIGHT_BYTES", 40)
        with pytest.raises(ValueError, match="over the limit of 40 bytes"):
            _sequential(L.dense(units=3, input_shape=[4]))  # kernel: 48 bytes
        model = _sequential(L.dense(units=2, input_shape=[4]))  # 32 bytes
        model.dispose()
    finally:
        env().set("MAX_WEIGHT_BYTES", previous)
