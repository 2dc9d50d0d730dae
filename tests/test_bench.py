"""``ndflow bench``: FLOP counting, the kernel profile summary, and the command on small models in tmp_path."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow.cli import main as cli_main
from ndflow.cli.bench import DEFAULT_MODEL, aggregate, bench, default_model, kernel_flops, main, report
from ndflow.core.profiler import KernelProfile

# The synthetic graph: x [1,8,8,3] -> Conv2D 3x3x3x4 SAME -> Relu -> depthwise 3x3x4x1 SAME -> Reshape [1,256]
# -> MatMul [256,2]. Multiply-adds: 8*8*4 outputs * 27, 8*8*4 * 9, 2 * 256.
CONV_FLOPS = 2 * 8 * 8 * 4 * 3 * 3 * 3
DEPTHWISE_FLOPS = 2 * 8 * 8 * 4 * 3 * 3
MATMUL_FLOPS = 2 * 2 * 256
GRAPH_FLOPS = CONV_FLOPS + DEPTHWISE_FLOPS + MATMUL_FLOPS


def _s(text: str) -> dict:
    return {"s": base64.b64encode(text.encode()).decode()}


def _ints(values: list[int]) -> dict:
    return {"list": {"i": [str(v) for v in values]}}


def _node(name: str, op: str, inputs: list[str] = (), **attr: object) -> dict:
    d: dict = {"name": name, "op": op, "attr": {"T": {"type": "DT_FLOAT"}, **attr}}
    if inputs:
        d["input"] = list(inputs)
    return d


def write_graph_model(folder: Path) -> Path:
    """model.json + weights.bin of the synthetic graph; returns the model.json path."""
    rng = np.random.default_rng(0)
    weights = {
        "filter": rng.standard_normal((3, 3, 3, 4)).astype(np.float32),
        "dw": rng.standard_normal((3, 3, 4, 1)).astype(np.float32),
        "shape": np.array([1, 256], np.int32),
        "dense": rng.standard_normal((256, 2)).astype(np.float32),
    }
    conv = {"strides": _ints([1, 1, 1, 1]), "padding": _s("SAME"), "data_format": _s("NHWC")}
    dims = {"shape": {"dim": [{"size": str(d)} for d in (1, 8, 8, 3)]}}
    nodes = [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": dims}},
        *[{"name": n, "op": "Const", "attr": {"dtype": {"type": "DT_INT32" if n == "shape" else "DT_FLOAT"}}}
          for n in weights],
        _node("conv", "Conv2D", ["x", "filter"], **conv),
        _node("relu", "Relu", ["conv"]),
        _node("depthwise", "DepthwiseConv2dNative", ["relu", "dw"], **conv),
        _node("flat", "Reshape", ["depthwise", "shape"]),
        _node("out", "MatMul", ["flat", "dense"], transpose_a={"b": False}, transpose_b={"b": False}),
    ]  # fmt: skip
    data, specs = nf.io.encode_weights(weights)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "weights.bin").write_bytes(data)
    model = {
        "format": "graph-model",
        "modelTopology": {"node": nodes, "versions": {"producer": 7}},
        "weightsManifest": [{"paths": ["weights.bin"], "weights": [dict(s) for s in specs]}],
    }
    path = folder / "model.json"
    path.write_text(json.dumps(model))
    return path


@pytest.fixture
def graph_model(tmp_path: Path) -> Path:
    return write_graph_model(tmp_path / "graph")


# -- FLOPs of one kernel ------------------------------------------------------------------------------
def test_conv_flops_come_from_filter_and_output_shapes():
    # 2 * outputs * kh * kw * in_channels, whatever the strides and padding were
    assert kernel_flops("Conv2D", [(1, 8, 8, 3), (3, 3, 3, 4)], [(1, 8, 8, 4)]) == CONV_FLOPS
    assert kernel_flops("FusedConv2D", [(2, 9, 9, 3), (3, 3, 3, 4), (4,)], [(2, 4, 4, 4)]) == 2 * 2 * 16 * 4 * 27


def test_depthwise_and_transposed_conv_flops():
    assert kernel_flops("DepthwiseConv2dNative", [(1, 8, 8, 4), (3, 3, 4, 1)], [(1, 8, 8, 4)]) == DEPTHWISE_FLOPS
    assert kernel_flops("FusedDepthwiseConv2D", [(1, 8, 8, 4), (3, 3, 4, 2)], [(1, 4, 4, 8)]) == 2 * 128 * 9
    # the gradient-shaped kernel: each of dy's elements spreads over kh * kw * out_channels
    assert kernel_flops("Conv2DBackpropInput", [(1, 4, 4, 6), (2, 2, 5, 6)], [(1, 8, 8, 5)]) == 2 * 96 * 2 * 2 * 5


def test_matmul_flops_do_not_depend_on_transposes():
    plain = kernel_flops("BatchMatMul", [(3, 4, 5), (3, 5, 6)], [(3, 4, 6)])
    transposed = kernel_flops("BatchMatMul", [(3, 5, 4), (3, 6, 5)], [(3, 4, 6)])
    assert plain == transposed == 2 * 3 * 4 * 6 * 5
    # a broadcast batch on b only
    assert kernel_flops("_FusedMatMul", [(1, 256), (256, 2), (2,)], [(1, 2)]) == MATMUL_FLOPS


def test_other_kernels_count_nothing():
    assert kernel_flops("Add", [(4, 4), (4, 4)], [(4, 4)]) == 0
    assert kernel_flops("Relu", [(4, 4)], [(4, 4)]) == 0
    assert kernel_flops("Conv2D", [], []) == 0


def test_aggregate_sums_per_kernel_slowest_first():
    def record(name: str, ms: float) -> KernelProfile:
        return KernelProfile(name, 0, 0, 1, 1, [(1, 256), (256, 2)], [(1, 2)], ms)

    stats = aggregate([record("BatchMatMul", 1.0), record("Relu", 0.5), record("BatchMatMul", 2.0)])
    assert [(s.name, s.calls, s.ms) for s in stats] == [("BatchMatMul", 2, 3.0), ("Relu", 1, 0.5)]
    assert stats[0].flops == 2 * MATMUL_FLOPS and stats[1].flops == 0


# -- the measurement -------------------------------------------------------------------------------
def test_bench_counts_the_flops_of_a_graph_model(graph_model, backend):
    result = bench(str(graph_model), backend, runs=3, warmup=1)
    assert result.kind == "graph" and result.backend == backend
    assert result.flops == GRAPH_FLOPS
    assert len(result.times_ms) == 3 and all(t > 0 for t in result.times_ms)
    assert result.gflops_per_s == pytest.approx(GRAPH_FLOPS / (result.median_ms / 1000) / 1e9)
    names = {k.name for k in result.kernels}
    assert any("Conv2D" in n for n in names) and any("MatMul" in n for n in names)
    assert sum(k.calls for k in result.kernels) >= 3  # a fused plan may merge Relu into the convolution
    assert nf.get_backend() == backend  # restored


def test_report_lists_time_flops_and_kernels(graph_model):
    result = bench(str(graph_model), "cpu", runs=2, warmup=0)
    text = report(result, top=2)
    assert f"FLOPs: {GRAPH_FLOPS} " in text
    assert "time per inference: median" in text and "GFLOP/s" in text
    lines = text.splitlines()
    table = lines[lines.index(next(line for line in lines if line.strip().startswith("kernel"))) + 1 :]
    assert len(table) == 2 + (len(result.kernels) > 2)  # the top 2, then the others summed
    shares = [float(line.split("%")[0].split()[-1]) for line in table]
    assert shares[0] >= shares[1] and sum(shares) == pytest.approx(100.0, abs=0.3)


def test_command_on_a_graph_model(graph_model, capsys):
    assert main([str(graph_model), "--backend", "cpu", "--runs", "2", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{graph_model} [graph] backend=cpu")
    assert f"FLOPs: {GRAPH_FLOPS} (" in out
    assert "slowest kernels" in out


def test_ndflow_bench_subcommand_takes_options_first(graph_model, capsys):
    assert cli_main(["bench", "--runs", "1", "--warmup", "0", "--backend", "cpu", str(graph_model)]) == 0
    assert f"FLOPs: {GRAPH_FLOPS} (" in capsys.readouterr().out


def test_command_on_a_layers_model(tmp_path, capsys):
    model = nf.sequential()
    model.add(nf.layers.dense(units=3, input_shape=[4], activation="relu"))
    model.save(f"file://{tmp_path / 'layers'}")
    model.dispose()
    assert main([str(tmp_path / "layers" / "model.json"), "--backend", "cpu", "--runs", "1"]) == 0
    out = capsys.readouterr().out
    assert "[layers] backend=cpu" in out
    assert "FLOPs: 24 (" in out  # one row of 4 inputs times a 4x3 kernel


def test_command_takes_a_model_folder(graph_model, capsys):
    assert main([str(graph_model.parent), "--backend", "cpu", "--runs", "1", "--warmup", "0"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{graph_model.parent} [graph] backend=cpu") and f"FLOPs: {GRAPH_FLOPS} (" in out


# -- errors: one line on stderr, exit 2 for the command line, 1 for the files ----------------------------
def fails(capsys, argv: list[str], status: int) -> str:
    """Run ``ndflow bench argv``: it exits ``status`` with one error line on stderr; that line."""
    assert main(argv) == status
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert "Traceback" not in err and len(lines) == 1 and lines[0].startswith("ndflow bench: error: "), err
    return lines[0]


def test_no_default_model_is_a_clear_message(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("NDFLOW_ORACLE_HOME", str(tmp_path))
    assert default_model() == tmp_path / "models" / "human" / f"{DEFAULT_MODEL}.json"
    line = fails(capsys, [], 2)
    assert f"the default {DEFAULT_MODEL} is not in {tmp_path / 'models' / 'human'}" in line
    assert line.endswith("fetch the models with: python tools/fetch_models.py")
    assert "../" not in line and "setup.sh" not in line  # nothing outside the repository


def test_bad_arguments(graph_model, tmp_path, capsys):
    assert f"the model {tmp_path / 'missing.json'} does not exist" in fails(capsys, [str(tmp_path / "missing.json")], 2)
    assert f"the model folder {tmp_path} has no model.json" in fails(capsys, [str(tmp_path)], 2)
    line = fails(capsys, [str(graph_model), "--backend", "nonsense"], 2)
    assert "--backend 'nonsense' is not available here (have: " in line
    for flag, value, says in [
        ("--runs", "0", "argument --runs: must be at least 1, got 0"),
        ("--runs", "many", "argument --runs: invalid int value: 'many'"),
        ("--warmup", "-1", "argument --warmup: must be at least 0, got -1"),
        ("--top", "-1", "argument --top: must be at least 0, got -1"),
    ]:
        line = fails(capsys, [str(graph_model), flag, value], 2)
        assert says in line and line.endswith("(see ndflow bench --help)")
    with pytest.raises(ValueError, match="runs must be at least 1"):
        bench(str(graph_model), "cpu", runs=0)


def test_files_that_are_not_models(graph_model, tmp_path, capsys):
    (tmp_path / "notes.json").write_text('{"hello": 1}')
    line = fails(capsys, [str(tmp_path / "notes.json")], 1)
    assert "notes.json" in line and "is this a TF.js model.json?" in line
    (tmp_path / "broken.json").write_text("{hello")
    assert "broken.json is not a model.json (not JSON: " in fails(capsys, [str(tmp_path / "broken.json")], 1)
    (graph_model.parent / "weights.bin").unlink()
    assert "weight file 'weights.bin' is missing" in fails(capsys, [str(graph_model), "--runs", "1"], 1)


@pytest.mark.slow
def test_default_model_when_cached(capsys):
    if not default_model().exists():
        pytest.skip(f"{DEFAULT_MODEL} is not in the cache (run: python tools/fetch_models.py)")
    assert main(["--backend", "cpu", "--runs", "1", "--warmup", "0", "--top", "3"]) == 0
    out = capsys.readouterr().out
    flops = int(out.split("FLOPs: ")[1].split()[0])
    assert 4e8 < flops < 7e8  # a MobileNetV2 backbone at 192x192 with its head
