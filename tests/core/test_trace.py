"""Chrome traces of ``nf.profile``: the Trace Event Format (checked against a JSON schema), one slice per kernel
matching the profile's kernels, nesting under ops, graph nodes and layers, durations that add up, the GPU track,
``ndflow bench --trace`` and debug mode's ``DEBUG_TRACE``."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
from ndflow.cli import main as cli_main
from ndflow.core.engine import ENGINE
from ndflow.core.trace_spans import SPANS

jsonschema = pytest.importorskip("jsonschema", reason="the trace schema check needs jsonschema: pip install '.[test]'")

SCHEMA = json.loads((Path(__file__).parent / "fixtures" / "trace_event_schema.json").read_text())
EPS = 0.01  # microseconds: ts and dur are rounded to nanoseconds


def validate(trace: dict) -> None:
    jsonschema.validate(trace, SCHEMA)
    json.loads(json.dumps(trace, allow_nan=False))  # plain JSON, no NaN


def slices(trace: dict, cat: str | None = None) -> list[dict]:
    return [e for e in trace["traceEvents"] if e["ph"] == "X" and (cat is None or e["cat"] == cat)]


def tree(trace: dict) -> dict[int, dict | None]:
    """Each complete event's parent (by id) on its track; asserts that the slices of every track nest (a child
    inside its parent's range) and that a parent's duration is at least the sum of its children's."""
    parents: dict[int, dict | None] = {}
    tracks: dict[tuple[int, int], list[dict]] = {}
    for e in slices(trace):
        tracks.setdefault((e["pid"], e["tid"]), []).append(e)
    for events in tracks.values():
        events.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack: list[dict] = []
        children: dict[int, float] = {}
        for e in events:
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"] - EPS and e["dur"] > 0:
                if e["ts"] + e["dur"] <= stack[-1]["ts"] + stack[-1]["dur"] + EPS and e["ts"] <= stack[-1]["ts"]:
                    break
                stack.pop()
            parent = stack[-1] if stack else None
            if parent is not None:
                assert e["ts"] >= parent["ts"] - EPS, (e, parent)
                assert e["ts"] + e["dur"] <= parent["ts"] + parent["dur"] + EPS, (e, parent)
                children[id(parent)] = children.get(id(parent), 0.0) + e["dur"]
            parents[id(e)] = parent
            stack.append(e)
        for e in events:
            assert e["dur"] + EPS * 10 >= children.get(id(e), 0.0), e
    return parents


def ancestors(e: dict, parents: dict[int, dict | None]) -> list[dict]:
    out = []
    p = parents[id(e)]
    while p is not None:
        out.append(p)
        p = parents[id(p)]
    return out


def test_trace_validates_and_round_trips(tmp_path: Path):
    x = nf.tensor([[1.0, 2.0], [3.0, 4.0]])
    path = tmp_path / "ops.json"
    info = nf.profile(lambda: nf.tidy(lambda: nf.relu(nf.mat_mul(x, x))), trace=path)
    loaded = json.loads(path.read_text())
    validate(loaded)
    assert loaded == json.loads(json.dumps(info.to_chrome_trace()))
    assert [e["name"] for e in slices(loaded, "kernel")] == ["BatchMatMul", "Relu"]
    meta = {e["name"] for e in loaded["traceEvents"] if e["ph"] == "M"}
    assert {"process_name", "thread_name"} <= meta
    (root,) = slices(loaded, "profile")
    assert root["args"]["kernels"] == 2 and root["args"]["gpu_time"] == "not measured"
    assert info.save_trace(tmp_path / "again.json") == str(tmp_path / "again.json")
    validate(json.loads((tmp_path / "again.json").read_text()))
    nf.dispose([x, info.result])


def test_slices_match_the_profile_kernels():
    a = nf.tensor(np.arange(6, dtype=np.float32).reshape(2, 3))
    b = nf.tensor([1, 2, 3], dtype="int32")

    def run():
        return [nf.sum(nf.exp(a), 1), nf.cast(b, "float32"), nf.concat([a, a], 0)]

    info = nf.profile(lambda: nf.tidy(run))
    trace = info.to_chrome_trace()
    validate(trace)
    kernels = slices(trace, "kernel")
    assert len(kernels) == len(info.kernels) >= 4
    for e, k in zip(kernels, info.kernels, strict=True):
        assert e["name"] == k.name
        assert e["args"]["input_shapes"] == [list(s) for s in k.input_shapes]
        assert e["args"]["output_shapes"] == [list(s) for s in k.output_shapes]
        assert e["args"]["kernel_time_ms"] == pytest.approx(k.kernel_time_ms)
        assert e["args"]["backend"] == nf.get_backend()
        assert e["dur"] == pytest.approx(k.wall_ms * 1000, abs=0.01)
    cast = next(e for e in kernels if e["name"] == "Cast")
    assert cast["args"]["input_dtypes"] == ["int32"] and cast["args"]["output_dtypes"] == ["float32"]
    assert cast["args"]["output_bytes"] == 12
    counters = [e for e in trace["traceEvents"] if e["ph"] == "C"]
    assert [c["args"]["bytes"] for c in counters] == [k.total_bytes_snapshot for k in info.kernels]
    tree(trace)
    nf.dispose([a, b, info.result])


def test_kernels_nest_under_named_ops_and_durations_add_up():
    x = nf.tensor([[1.0, -2.0], [3.0, 4.0]])
    inner = nf.op({"inner_op": lambda t: nf.neg(nf.abs(t))})
    outer = nf.op({"outer_op": lambda t: nf.add(inner(t), nf.square(t))})
    info = nf.profile(lambda: outer(x))
    trace = info.to_chrome_trace()
    validate(trace)
    parents = tree(trace)
    by_name = {e["name"]: e for e in slices(trace)}
    assert parents[id(by_name["outer_op"])]["name"] == "nf.profile"
    assert parents[id(by_name["inner_op"])]["name"] == "outer_op"
    assert parents[id(by_name["Abs"])]["name"] == "inner_op" and parents[id(by_name["Neg"])]["name"] == "inner_op"
    assert parents[id(by_name["Square"])]["name"] == "outer_op" and parents[id(by_name["Add"])]["name"] == "outer_op"
    assert by_name["outer_op"]["cat"] == "op"
    assert not SPANS.on and not SPANS.open_scopes and not ENGINE._slow
    nf.dispose([x, info.result])


def test_layers_model_kernels_nest_under_their_layers():
    model = nf.sequential(
        {
            "layers": [
                nf.layers.dense({"units": 4, "input_shape": [3], "activation": "relu", "name": "hidden"}),
                nf.layers.dense({"units": 2, "name": "head"}),
            ]
        }
    )
    x = nf.ones([2, 3])
    info = nf.profile(lambda: model.predict(x))
    trace = info.to_chrome_trace()
    validate(trace)
    parents = tree(trace)
    layers = {e["name"]: e for e in slices(trace, "layer")}
    assert set(layers) == {"hidden", "head"} and layers["hidden"]["args"]["class"] == "Dense"
    under = {name: [e["name"] for e in slices(trace, "kernel") if layers[name] in ancestors(e, parents)]
             for name in layers}  # fmt: skip
    assert under["hidden"] and under["head"]
    assert len(slices(trace, "kernel")) == len(info.kernels)
    nf.dispose([x, info.result])
    model.dispose()


def _graph_model(folder: Path) -> Path:
    rng = np.random.default_rng(1)
    weights = {"w": rng.standard_normal((4, 3)).astype(np.float32), "b": np.ones(3, np.float32)}
    dims = {"shape": {"dim": [{"size": "-1"}, {"size": "4"}]}}
    t = {"T": {"type": "DT_FLOAT"}}
    nodes = [
        {"name": "x", "op": "Placeholder", "attr": {"dtype": {"type": "DT_FLOAT"}, "shape": dims}},
        {"name": "w", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}}},
        {"name": "b", "op": "Const", "attr": {"dtype": {"type": "DT_FLOAT"}}},
        {"name": "mm", "op": "MatMul", "input": ["x", "w"], "attr": {**t, "transpose_a": {"b": False}}},
        {"name": "sig", "op": "Sigmoid", "input": ["mm"], "attr": t},
        {"name": "out", "op": "Add", "input": ["sig", "b"], "attr": t},
    ]
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


def test_graph_model_kernels_nest_under_their_nodes(tmp_path: Path):
    model = nf.load_graph_model(str(_graph_model(tmp_path / "g")))
    x = nf.ones([2, 4])
    nf.dispose(model.execute(x))  # plans and replays once: the profiled run must still show its nodes
    info = nf.profile(lambda: model.execute(x))
    trace = info.to_chrome_trace()
    validate(trace)
    parents = tree(trace)
    nodes = {e["name"]: e for e in slices(trace, "node")}
    # the graph optimizer fuses mm and sig into one node (sig, op _FusedMatMul)
    assert set(nodes) <= {"mm", "sig", "out"} and {"sig", "out"} <= set(nodes) and nodes["out"]["args"]["op"] == "Add"
    kernels = slices(trace, "kernel")
    assert len(kernels) == len(info.kernels) >= 2
    for e in kernels:
        assert any(p["cat"] == "node" for p in ancestors(e, parents)), e["name"]
    names = {e["name"]: parents[id(e)]["name"] for e in kernels}
    assert names["Add"] == "out" and nodes[names[kernels[0]["name"]]]["args"]["op"] in ("MatMul", "_FusedMatMul")
    nf.dispose([x, info.result])
    model.dispose()


def test_ndflow_bench_trace_writes_a_loadable_file(tmp_path: Path, capsys):
    model = _graph_model(tmp_path / "g")
    out = tmp_path / "bench.json"
    argv = ["bench", "--runs", "1", "--warmup", "0", "--backend", "cpu", "--trace", str(out), str(model)]
    assert cli_main(argv) == 0
    assert str(out) in capsys.readouterr().out
    trace = json.loads(out.read_text())
    validate(trace)
    tree(trace)
    assert {e["name"] for e in slices(trace, "node")} >= {"sig", "out"}
    assert cli_main(["bench", "--backend", "cpu", "--trace", str(tmp_path / "no" / "t.json"), str(model)]) == 2
    assert "--trace" in capsys.readouterr().err


def test_gpu_time_gets_its_own_track():
    x = nf.tensor([1.0, 2.0, 3.0])
    info = nf.profile(lambda: nf.tidy(lambda: nf.exp(nf.neg(x))))
    info.gpu_timer = "CUDA events"
    trace = info.to_chrome_trace()
    validate(trace)
    tree(trace)
    gpu = slices(trace, "gpu")
    kernels = slices(trace, "kernel")
    assert [e["name"] for e in gpu] == [e["name"] for e in kernels] == ["Neg", "Exp"]
    assert len({e["tid"] for e in gpu}) == 1 and gpu[0]["tid"] not in {e["tid"] for e in kernels}
    for g, k in zip(gpu, kernels, strict=True):
        assert k["ts"] - EPS <= g["ts"] and g["ts"] + g["dur"] <= k["ts"] + k["dur"] + EPS
        assert k["args"]["gpu_time"].startswith("measured (CUDA events)")
    names = [e["args"]["name"] for e in trace["traceEvents"] if e["ph"] == "M" and e["name"] == "thread_name"]
    assert "GPU (CUDA events)" in names
    nf.dispose([x, info.result])


def test_kernels_of_other_threads_get_their_own_track():
    x = nf.tensor([1.0, 2.0])
    made = []

    def run():
        worker = threading.Thread(target=lambda: made.append(nf.neg(x)))
        worker.start()
        worker.join()
        return nf.exp(x)

    info = nf.profile(run)
    trace = info.to_chrome_trace()
    validate(trace)
    tree(trace)
    tids = {e["name"]: e["tid"] for e in slices(trace, "kernel")}
    assert tids["Neg"] != tids["Exp"]
    nf.dispose([x, info.result, made])


def test_debug_trace_flag_writes_a_trace(tmp_path: Path):
    path = tmp_path / "debug.json"
    x = nf.tensor([1.0, 4.0])
    nf.env().set("DEBUG_TRACE", str(path))
    try:
        nf.env().set("DEBUG", True)
        y = nf.tidy("debugged", lambda: nf.sqrt(x))
    finally:
        nf.env().set("DEBUG", False)
        nf.env().set("DEBUG_TRACE", "")
    trace = json.loads(path.read_text())
    validate(trace)
    parents = tree(trace)
    sqrt = [e for e in slices(trace, "kernel") if e["name"] == "Sqrt"]
    assert sqrt and parents[id(sqrt[-1])]["name"] == "debugged"
    assert not SPANS.on and not ENGINE._profiles
    nf.dispose([x, y])


def test_bad_trace_paths_raise_clear_errors(tmp_path: Path):
    x = nf.tensor([1.0])
    with pytest.raises(TypeError, match="profile: argument 'trace'"):
        nf.profile(lambda: nf.neg(x), trace=3)
    info = nf.profile(lambda: nf.neg(x))
    with pytest.raises(OSError, match="save_trace: cannot write"):
        info.save_trace(tmp_path / "missing" / "t.json")
    nf.dispose([x, info.result])


def test_a_failing_function_closes_its_spans():
    x = nf.tensor([1.0])

    def boom(t):
        nf.neg(t)
        raise ValueError("stop")

    failing = nf.op({"failing": boom})
    with pytest.raises(ValueError, match="stop"):
        nf.profile(lambda: failing(x))
    assert not SPANS.on and not SPANS.open_scopes and not ENGINE._profiles and not ENGINE._slow
    nf.dispose(x)


def test_device_timer_names_cuda_events_only_for_torch_on_cuda():
    from ndflow.core.profiler import device_timer

    def fake(is_cuda: bool) -> object:
        cls = type("TorchBackend", (), {"__module__": "ndflow.backends.torch.backend", "is_cuda": is_cuda})
        return cls()

    assert device_timer(fake(True)) == "CUDA events"
    assert device_timer(fake(False)) == ""
    assert device_timer(nf.find_backend("cpu")) == ""  # wall time: no GPU track
