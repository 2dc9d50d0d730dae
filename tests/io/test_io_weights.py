"""encode_weights / decode_weights: every dtype, quantization, shards, malformed specs and data."""

from __future__ import annotations

import struct

import numpy as np
import pytest

import ndflow as nf
from ndflow import io

MiB = 1024 * 1024


def _round_trip(tensors, **kw):
    data, specs = io.encode_weights(tensors, **kw)
    out = io.decode_weights(data, specs)
    try:
        return data, specs, {k: (v.dtype, tuple(v.shape), v.numpy()) for k, v in out.items()}
    finally:
        nf.dispose(list(out.values()))


def test_round_trip_every_dtype_from_tensors():
    tensors = {
        "f32": nf.tensor([[1.5, -2.25, 0.0], [np.nan, np.inf, -np.inf]]),
        "scalar": nf.scalar(3.0),
        "empty": nf.zeros([0, 3]),
        "i32": nf.tensor([0, -1, 2**31 - 1, -(2**31)], dtype="int32"),
        "b": nf.tensor([True, False, True]),
        "s": nf.tensor(["hello", "", "héllo ✓"]),
        "c": nf.complex([1.5, -2.0], [0.25, 3.0]),
    }
    try:
        data, specs, out = _round_trip(tensors)
        for name, t in tensors.items():
            dtype, shape, values = out[name]
            assert dtype == t.dtype and shape == tuple(t.shape)
            np.testing.assert_array_equal(values, t.numpy())
        assert [s["name"] for s in specs] == list(tensors)
        assert specs[0] == {"name": "f32", "shape": [2, 3], "dtype": "float32"}
        # 24 f32 + 4 + 0 + 16 i32 + 3 bool + (4+5 + 4+0 + 4+10) strings (UTF-8) + 16 complex
        assert len(data) == 24 + 4 + 0 + 16 + 3 + 27 + 16
    finally:
        nf.dispose(list(tensors.values()))


def test_byte_layout_is_tfjs():
    data, specs = io.encode_weights(
        [
            io.NamedTensor("a", np.array([1.0], np.float32)),
            ("b", np.array([True, False])),
            {"name": "s", "tensor": np.array(["hi"], dtype=object)},
            io.NamedTensor("c", np.array([1 + 2j], np.complex64)),
        ]
    )
    assert data == struct.pack("<f", 1.0) + b"\x01\x00" + struct.pack("<I", 2) + b"hi" + struct.pack("<ff", 1, 2)
    assert [s["dtype"] for s in specs] == ["float32", "bool", "string", "complex64"]


def test_group_and_numpy_inputs_and_non_utf8_strings():
    data, specs = io.encode_weights({"s": np.array([b"\x00\xff", b"ok"], dtype=object)}, group="optimizer")
    assert specs == [{"name": "s", "shape": [2], "dtype": "string", "group": "optimizer"}]
    arrays = io.decode_arrays(data, specs)
    assert list(arrays["s"]) == [b"\x00\xff", "ok"]
    out = io.decode_weights(data, specs)
    assert out["s"].bytes_sync() == [b"\x00\xff", b"ok"]
    out["s"].dispose()


def test_duplicate_names_and_unsupported_dtype_raise():
    with pytest.raises(ValueError, match="duplicate weight names"):
        io.encode_weights([("a", np.zeros(1)), ("a", np.zeros(1))])
    with pytest.raises(TypeError):
        io.encode_weights({"d": np.array([np.datetime64("2020-01-01")])})


@pytest.mark.parametrize("qdtype, levels", [("uint8", 255), ("uint16", 65535)])
def test_affine_quantization_error_bound(qdtype, levels):
    rng = np.random.default_rng(0)
    w = rng.normal(size=(64, 33)).astype(np.float32) * 3
    w[0, 0] = 0.0
    data, specs = io.encode_weights({"w": w}, quantize=qdtype)
    q = specs[0]["quantization"]
    assert q["dtype"] == qdtype and set(q) == {"dtype", "min", "scale", "original_dtype"}
    assert len(data) == w.size * io.DTYPE_VALUE_SIZE_MAP[qdtype]
    assert q["scale"] == pytest.approx((w.max() - w.min()) / levels)
    assert round(-q["min"] / q["scale"]) == pytest.approx(-q["min"] / q["scale"])  # zero is exactly representable
    back = io.decode_arrays(data, specs)["w"]
    assert back.dtype == np.float32
    assert np.abs(back - w).max() <= q["scale"] / 2 + 1e-6 * np.abs(w).max()
    assert back[0, 0] == 0.0  # the range is nudged so that zero round-trips exactly


def test_float16_quantization():
    w = np.array([0.1, -2.5, 65504, 1e5, 1e-6, np.inf, np.nan], np.float32)
    data, specs = io.encode_weights({"w": w}, quantize="float16")
    assert specs[0]["quantization"] == {"dtype": "float16", "original_dtype": "float32"}
    assert len(data) == 2 * w.size
    back = io.decode_arrays(data, specs)["w"]
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(back, w.astype(np.float16).astype(np.float32))
    finite = np.abs(w) < 65504
    assert np.all(np.abs(back[finite] - w[finite]) <= np.abs(w[finite]) * 2**-11 + 2**-24)


def test_quantization_edge_cases():
    const = np.full(4, -0.75, np.float32)
    pos = np.linspace(1, 2, 5, dtype=np.float32)
    data, specs = io.encode_weights({"c": const, "p": pos, "i": np.array([1, 2], np.int32)}, quantize="uint8")
    qc, qp = specs[0]["quantization"], specs[1]["quantization"]
    assert (qc["min"], qc["scale"]) == (-0.75, 1.0)
    assert qp["min"] == 1.0  # not nudged: zero is outside [1, 2]
    assert "quantization" not in specs[2]  # only float32 weights are quantized, as the converter does
    arrays = io.decode_arrays(data, specs)
    np.testing.assert_array_equal(arrays["c"], const)
    assert np.abs(arrays["p"] - pos).max() <= qp["scale"] / 2 + 1e-7
    with pytest.raises(ValueError, match="NaN or Infinity"):
        io.encode_weights({"w": np.array([1.0, np.nan], np.float32)}, quantize="uint8")
    with pytest.raises(ValueError, match="unknown quantization dtype"):
        io.encode_weights({"w": np.zeros(2, np.float32)}, quantize="int4")
    data, specs = io.encode_weights({"w": np.zeros((0,), np.float32)}, quantize="uint16")
    assert data == b"" and io.decode_arrays(data, specs)["w"].shape == (0,)


def test_quantization_map_by_name_pattern():
    ws = {"conv/kernel": np.ones(3, np.float32) * [1, 2, 3], "conv/bias": np.ones(2, np.float32), "dense/k": np.ones(2)}
    _, specs = io.encode_weights(ws, quantize={"uint8": "conv/*", "float16": True})
    q = {s["name"]: s.get("quantization", {}).get("dtype") for s in specs}
    assert q == {"conv/kernel": "uint8", "conv/bias": "uint8", "dense/k": "float16"}
    with pytest.raises(ValueError, match="match the weight"):
        io.encode_weights(ws, quantize={"uint8": "conv/*", "uint16": ["conv/bias"]})


def test_int32_dequantization_rounds_half_up_as_tfjs():
    spec = {"name": "i", "shape": [5], "dtype": "int32", "quantization": {"dtype": "uint8", "min": -3.0, "scale": 0.5}}
    out = io.decode_arrays(bytes([0, 1, 3, 5, 7]), [spec])["i"]
    np.testing.assert_array_equal(out, [-3, -2, -1, 0, 1])  # -2.5 -> -2, -1.5 -> -1, -0.5 -> 0, 0.5 -> 1


@pytest.mark.parametrize(
    "spec, data, match",
    [
        ({"name": "w", "shape": [2], "dtype": "float64"}, b"\0" * 16, "unknown dtype 'float64'"),
        ({"name": "w", "shape": [3], "dtype": "float32"}, b"\0" * 8, "needs 12 bytes at offset 0"),
        ({"name": "w", "shape": [2], "dtype": "float32"}, b"\0" * 12, "4 bytes left over"),
        ({"name": "w", "shape": [-1], "dtype": "float32"}, b"", "non-negative ints"),
        ({"name": "w", "shape": [1], "dtype": "string"}, struct.pack("<I", 9) + b"abc", "runs past the end"),
        ({"name": "w", "shape": [2], "dtype": "string"}, struct.pack("<I", 0) + b"\1", "lies past the end"),
        ({"name": "w", "shape": [1], "dtype": "float32", "quantization": {"dtype": "int4"}}, b"\0", "int4"),
        ({"name": "w", "shape": [1], "dtype": "float32", "quantization": {"dtype": "uint8"}}, b"\0", "'min'"),
        ({"name": "w", "shape": [1], "dtype": "int32", "quantization": {"dtype": "float16"}}, b"\0\0", "float16"),
        ({"name": "w", "shape": [1], "dtype": "bool", "quantization": {"dtype": "uint8", "min": 0, "scale": 1}}, b"\0",
         "bool"),
        ({"shape": [1], "dtype": "float32"}, b"\0" * 4, "no string 'name'"),
    ],
)  # fmt: skip
def test_malformed_specs_and_data_raise_clear_errors(spec, data, match):
    with pytest.raises(ValueError, match=match):
        io.decode_weights(data, [spec])


def test_error_names_the_weight_that_does_not_fit():
    specs = [{"name": "ok", "shape": [1], "dtype": "float32"}, {"name": "dense/kernel", "shape": [4], "dtype": "int32"}]
    with pytest.raises(ValueError, match=r"weight 'dense/kernel' \(shape \[4\], int32.*needs 16 bytes at offset 4"):
        io.decode_weights(b"\0" * 12, specs)


def test_decode_accepts_a_list_of_shards():
    w = np.arange(10, dtype=np.float32)
    data, specs = io.encode_weights({"w": w})
    shards = io.split_weight_data(data, 7)
    assert [len(s) for s in shards] == [7, 7, 7, 7, 7, 5]
    np.testing.assert_array_equal(io.decode_arrays(shards, specs)["w"], w)


def test_split_at_4mib_boundaries():
    assert io.DEFAULT_SHARD_SIZE_BYTES == 4 * MiB
    assert io.split_weight_data(b"") == []
    assert [len(s) for s in io.split_weight_data(bytes(4 * MiB))] == [4 * MiB]
    assert [len(s) for s in io.split_weight_data(bytes(4 * MiB + 1))] == [4 * MiB, 1]
    assert [len(s) for s in io.split_weight_data(bytes(8 * MiB))] == [4 * MiB, 4 * MiB]
    with pytest.raises(ValueError, match="positive int"):
        io.split_weight_data(b"x", 0)


def test_shard_weights_manifest_and_names():
    a = np.arange(MiB, dtype=np.float32)  # exactly 4 MiB
    b = np.arange(3, dtype=np.int32)
    data, specs = io.encode_weights({"a": a, "b": b})
    manifest, files = io.shard_weights(specs, data)
    assert manifest[0]["paths"] == ["group1-shard1of2.bin", "group1-shard2of2.bin"]
    assert [len(files[p]) for p in manifest[0]["paths"]] == [4 * MiB, 12]
    assert io.get_weight_specs(manifest) == specs
    out = io.decode_arrays([files[p] for p in manifest[0]["paths"]], specs)
    np.testing.assert_array_equal(out["a"], a)
    np.testing.assert_array_equal(out["b"], b)
    manifest, files = io.shard_weights(specs[:1], data[: 4 * MiB])
    assert manifest[0]["paths"] == ["group1-shard1of1.bin"]
    assert io.shard_file_name(2, 3, 10) == "group2-shard3of10.bin"


def test_decode_weights_makes_no_tensor_when_it_fails():
    specs = [{"name": "a", "shape": [1], "dtype": "float32"}, {"name": "b", "shape": [1], "dtype": "nope"}]
    before = nf.memory().num_tensors
    with pytest.raises(ValueError):
        io.decode_weights(b"\0" * 8, specs)
    assert nf.memory().num_tensors == before
