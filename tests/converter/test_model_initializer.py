"""A graph model shaped like a converted TF2 SavedModel that TF.js 4.22 loads and runs: a string input, a
``StatelessWhile`` (library functions) over TensorLists of strings and ints, and a ``modelInitializer`` that
fills a hash table (``HashTableV2`` + ``LookupTableImportV2``) which the main graph reads
(``LookupTableFindV2``) through a resource placeholder matched by ``resourceId`` with the
``initializerSignature``.

As in real converted models, the initializer's function ``library`` holds functions it never calls, whose
Const nodes have no weight (the converter extracts weights from the initializer's top-level nodes only) and
whose ops ndflow cannot run: TF.js never executes them, so the load must not require them. A Const that a
run needs and that has no weight is still refused at load. Expected values are computed with numpy."""

from __future__ import annotations

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gm_helpers import attr_str, attr_type, check_outputs, expected_inputs, fixture, node, placeholder

import ndflow as nf
from ndflow.converter import load_graph_model
from ndflow.converter.load.plan import build_graph, called_functions, validation_scope

I32, STR = attr_type("DT_INT32"), attr_type("DT_STRING")
RES, VARIANT = attr_type("DT_RESOURCE"), attr_type("DT_VARIANT")
KEYS = ["a", "b", "c", "dd"]
VALUES = [10, 20, 30, 40]
DEFAULT = -1
RESOURCE_ID = 101
WORDS = ["b", "zz", "a", "c", "a"]


def _const(name: str, dtype: dict = I32) -> dict:
    return node(name, "Const", dtype=dtype, value={})


def _fn(name: str, args: list[tuple[str, str]], outs: list[tuple[str, str]], nodes: list[dict], ret: dict) -> dict:
    return {
        "signature": {
            "name": name,
            "inputArg": [{"name": a, "type": t} for a, t in args],
            "outputArg": [{"name": o, "type": t} for o, t in outs],
        },
        "nodeDef": nodes,
        "ret": ret,
    }


LOOP_VARS = [("i", "DT_INT32"), ("n", "DT_INT32"), ("wl", "DT_VARIANT"), ("il", "DT_VARIANT"), ("ol", "DT_VARIANT")]
LOOP_VARS += [("acc", "DT_INT32")]
LOOP_OUTS = [(f"{a}_out", t) for a, t in LOOP_VARS]


def _main_library() -> list[dict]:
    cond = _fn("cond_fn", LOOP_VARS, [("ok", "DT_BOOL")], [node("less", "Less", ["i", "n"], T=I32)], {"ok": "less:z:0"})
    body_nodes = [
        _const("body_fn/one"),
        _const("body_fn/shape"),
        node("word", "TensorListGetItem", ["wl", "i", "body_fn/shape:output:0"], element_dtype=STR),
        node("id", "TensorListGetItem", ["il", "i", "body_fn/shape:output:0"], element_dtype=I32),
        node("next_i", "AddV2", ["i", "body_fn/one:output:0"], T=I32),
        node("back", "Sub", ["n", "next_i:z:0"], T=I32),  # n - 1 - i: the words go in reversed
        node("put", "TensorListSetItem", ["ol", "back:z:0", "word:item:0"], element_dtype=STR),
        node("weighted", "Mul", ["id:item:0", "next_i:z:0"], T=I32),
        node("sum", "AddV2", ["acc", "weighted:z:0"], T=I32),
        node("n_id", "Identity", ["n"], T=I32),
        node("wl_id", "Identity", ["wl"], T=VARIANT),
        node("il_id", "Identity", ["il"], T=VARIANT),
    ]
    ret = {
        "i_out": "next_i:z:0",
        "n_out": "n_id:output:0",
        "wl_out": "wl_id:output:0",
        "il_out": "il_id:output:0",
        "ol_out": "put:output_handle:0",
        "acc_out": "sum:z:0",
    }
    body = _fn("body_fn", LOOP_VARS, LOOP_OUTS, body_nodes, ret)
    # Never called by any node: its Const has no weight and its op has no mapper; TF.js never runs it.
    unused = _fn(
        "unused_main_fn",
        [("x", "DT_STRING")],
        [("y", "DT_STRING")],
        [_const("unused_main_fn/prefix", STR), node("fmt", "StringFormat", ["x", "unused_main_fn/prefix:output:0"])],
        {"y": "fmt:output:0"},
    )
    return [cond, body, unused]


def _main_nodes() -> list[dict]:
    loop_types = {"list": {"type": [t for _, t in LOOP_VARS]}}
    return [
        placeholder("words", [-1], "DT_STRING"),
        node("unknown", "Placeholder", dtype=RES, shape={"shape": {}}),
        _const("default"),
        _const("elem_shape"),
        _const("zero"),
        node("n", "Size", ["words"], T=STR, out_type=I32),
        node("ids", "LookupTableFindV2", ["unknown", "words", "default"], Tin=STR, Tout=I32),
        node("words_list", "TensorListFromTensor", ["words", "elem_shape"], element_dtype=STR, shape_type=I32),
        node("ids_list", "TensorListFromTensor", ["ids", "elem_shape"], element_dtype=I32, shape_type=I32),
        node("out_list", "TensorListReserve", ["elem_shape", "n"], element_dtype=STR, shape_type=I32),
        node(
            "loop",
            "StatelessWhile",
            ["zero", "n", "words_list", "ids_list", "out_list", "zero"],
            cond={"func": {"name": "cond_fn"}},
            body={"func": {"name": "body_fn"}},
            T=loop_types,
        ),
        node("stack", "TensorListStack", ["loop:4", "elem_shape"], element_dtype=STR, num_elements={"i": "-1"}),
        node("ids_out", "Identity", ["ids"], T=I32),
        node("reversed_out", "Identity", ["stack"], T=STR),
        node("total_out", "Identity", ["loop:5"], T=I32),
    ]


def _initializer() -> dict:
    table_attr = {"key_dtype": STR, "value_dtype": I32, "shared_name": attr_str("hash_table_1")}
    saver = _fn(
        "__inference_saver_12",
        [("prefix", "DT_STRING")],
        [("done", "DT_STRING")],
        [
            _const("tensor_names", STR),
            _const("shape_and_slices", STR),
            node("save", "SaveV2", ["prefix", "tensor_names:output:0", "shape_and_slices:output:0"]),
            node("done_id", "Identity", ["prefix", "^save"], T=STR),
        ],
        {"done": "done_id:output:0"},
    )
    caller = _fn(
        "__inference_restore_34",
        [("prefix", "DT_STRING")],
        [("out", "DT_STRING")],
        [
            _const("restore_const", STR),
            node("call", "StatefulPartitionedCall", ["prefix"], f={"func": {"name": "__inference_saver_12"}}),
        ],
        {"out": "call:output:0"},
    )
    return {
        "node": [
            node("hash_table", "HashTableV2", **table_attr),
            _const("keys", STR),
            _const("values"),
            node("import", "LookupTableImportV2", ["hash_table", "keys", "values"], Tin=STR, Tout=I32),
            node("Identity", "Identity", ["hash_table", "^import"], T=RES),
        ],
        "versions": {"producer": 1395},
        "library": {"function": [saver, caller]},
    }


def _run_restore() -> dict:
    """An initializer node that calls the restore function (in an If branch), which calls the saver."""
    return node(
        "run_restore", "StatelessIf", ["keys", "keys"], then_branch={"func": {"name": "__inference_restore_34"}}
    )


def _weights() -> dict[str, np.ndarray]:
    return {
        "default": np.array(DEFAULT, np.int32),
        "elem_shape": np.array(-1, np.int32),  # elements of unknown shape
        "zero": np.array(0, np.int32),
        "body_fn/one": np.array(1, np.int32),
        "body_fn/shape": np.array(-1, np.int32),
        "keys": np.array(KEYS, dtype=object),
        "values": np.array(VALUES, np.int32),
    }


def _model_json(weights: dict[str, np.ndarray]) -> tuple[dict[str, Any], bytes]:
    data, specs = nf.io.encode_weights(weights)
    model = {
        "format": "graph-model",
        "generatedBy": "2.15.0",
        "convertedBy": "TensorFlow.js Converter v4.22.0",
        "modelTopology": {
            "node": _main_nodes(),
            "library": {"function": _main_library()},
            "versions": {"producer": 1395},
        },
        "weightsManifest": [{"paths": ["group1-shard1of1.bin"], "weights": specs}],
        "signature": {
            "inputs": {
                "words": {"name": "words:0", "dtype": "DT_STRING", "tensorShape": {"dim": [{"size": "-1"}]}},
                "unknown": {"name": "unknown:0", "dtype": "DT_RESOURCE", "tensorShape": {}, "resourceId": RESOURCE_ID},
            },
            "outputs": {
                "ids": {"name": "ids_out:0", "dtype": "DT_INT32"},
                "reversed": {"name": "reversed_out:0", "dtype": "DT_STRING"},
                "total": {"name": "total_out:0", "dtype": "DT_INT32"},
            },
        },
        "modelInitializer": _initializer(),
        "initializerSignature": {
            "outputs": {
                "Identity:0": {"name": "Identity:0", "dtype": "DT_RESOURCE", "resourceId": RESOURCE_ID},
            }
        },
    }
    return model, data


def _write(folder: Path, model: dict[str, Any], data: bytes) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "model.json").write_text(json.dumps(model))
    (folder / "group1-shard1of1.bin").write_bytes(data)
    return str(folder / "model.json")


def _expected(words: list[str]) -> tuple[np.ndarray, np.ndarray, int]:
    table = dict(zip(KEYS, VALUES, strict=True))
    ids = np.array([table.get(w, DEFAULT) for w in words], np.int32)
    reversed_words = np.array(words[::-1], dtype=object)
    total = int(np.sum(ids * np.arange(1, len(words) + 1)))
    return ids, reversed_words, total


def _check(outputs: Any, words: list[str]) -> None:
    ids, reversed_words, total = _expected(words)
    got_ids, got_reversed, got_total = outputs
    assert got_ids.dtype == "int32" and got_reversed.dtype == "string" and got_total.dtype == "int32"
    np.testing.assert_array_equal(got_ids.numpy(), ids)
    assert got_reversed.shape == (len(words),)
    assert got_reversed.numpy().tolist() == reversed_words.tolist()
    assert got_total.shape == () and int(got_total.numpy()) == total


def test_loads_and_runs_like_tfjs(tmp_path):
    model = load_graph_model(_write(tmp_path / "m", *_model_json(_weights())))
    words = nf.tensor(WORDS, dtype="string")
    other = nf.tensor(["dd", "q"], dtype="string")
    try:
        assert model.input_nodes == ["words", "unknown"] and model.output_nodes == ["ids", "reversed", "total"]
        # TF.js reads DT_RESOURCE as no dtype; the hash-table input is a scalar handle
        assert [(i.name, i.shape, i.dtype) for i in model.inputs] == [("words", [-1], "string"), ("unknown", [], None)]
        assert model.needs_async()
        # a dict feed, a lone tensor and a list: the resource input comes from the initializer's output
        out = asyncio.run(model.execute_async({"words": words}))
        _check(out, WORDS)
        nf.dispose(out)
        out = asyncio.run(model.predict_async(words))
        _check(out, WORDS)
        nf.dispose(out)
        out = asyncio.run(model.execute_async([other]))
        _check(out, ["dd", "q"])
        nf.dispose(out)
        # the initializer ran once: one table, filled from the initializer's weights
        tables = list(model.executor.resources.tables.values())
        size = tables[0].size()
        assert len(tables) == 1 and size.numpy().tolist() == len(KEYS)
        size.dispose()
        assert not tables[0].handle.is_disposed  # the initializer's output is the table's own handle
    finally:
        nf.dispose([words, other])
        model.dispose()


def test_loads_from_memory_without_optimizations():
    model_json, data = _model_json(_weights())
    art = nf.io.ModelArtifacts.from_dict(
        {**model_json, "weightSpecs": model_json["weightsManifest"][0]["weights"], "weightData": data}
    )
    model = load_graph_model(nf.io.from_memory(art), {"optimize": False})
    words = nf.tensor(["a"], dtype="string")
    try:
        out = asyncio.run(model.execute_async({"words": words}))
        _check(out, ["a"])
        nf.dispose(out)
    finally:
        words.dispose()
        model.dispose()


def test_only_what_runs_is_validated():
    model_json, _ = _model_json(_weights())
    init = build_graph(model_json["modelInitializer"])
    nodes, functions = validation_scope(init, ["Identity:0"])
    assert nodes == {"hash_table", "keys", "values", "import", "Identity"} and functions == []
    nodes, functions = validation_scope(init)  # every node: still no function is called
    assert functions == []
    main = build_graph(model_json["modelTopology"])
    nodes, functions = validation_scope(main)
    assert [f.name for f in functions] == ["cond_fn", "body_fn"]
    assert called_functions(main.nodes["loop"]) == ["cond_fn", "body_fn"]
    caller = init.functions["__inference_restore_34"]
    assert called_functions(caller.nodes["call"]) == ["__inference_saver_12"]
    case = node("case", "Case", ["x"], branches={"list": {"func": [{"name": "f0"}, {"name": "f1"}]}})
    assert called_functions(build_graph({"node": [placeholder("x", []), case]}).nodes["case"]) == ["f0", "f1"]


def test_called_functions_of_called_functions_are_validated():
    model_json, _ = _model_json(_weights())
    init = copy.deepcopy(model_json["modelInitializer"])
    init["node"].append(_run_restore())
    graph = build_graph(init)
    nodes, functions = validation_scope(graph)
    assert [f.name for f in functions] == ["__inference_saver_12", "__inference_restore_34"]


def _load_error(model_json: dict[str, Any], data: bytes, tmp_path: Path) -> str:
    with pytest.raises((ValueError, NotImplementedError)) as err:
        load_graph_model(_write(tmp_path, model_json, data))
    return str(err.value)


def test_reachable_initializer_const_without_weight_is_refused(tmp_path):
    weights = _weights()
    del weights["values"]
    msg = _load_error(*_model_json(weights), tmp_path)
    assert "(modelInitializer): 1 Const node(s) have no weight in the weights manifest: 'values'" in msg


@pytest.mark.parametrize("signature", [{"outputs": {}}, {}], ids=["no-outputs", "empty"])
def test_a_signature_that_names_no_output_validates_the_sink_nodes(tmp_path, signature):
    """With no output named, the initializer runs its sink nodes: a Const they need is checked at load."""
    weights = _weights()
    del weights["values"]
    model_json, data = _model_json(weights)
    model_json["initializerSignature"] = signature
    msg = _load_error(model_json, data, tmp_path)
    assert "(modelInitializer): 1 Const node(s) have no weight in the weights manifest: 'values'" in msg


def test_called_function_of_the_initializer_is_checked(tmp_path):
    model_json, data = _model_json(_weights())
    init = model_json["modelInitializer"]
    init["node"].append(_run_restore())
    init["node"][-2]["input"].append("^run_restore")  # Identity waits on it: the run needs it
    msg = _load_error(model_json, data, tmp_path)
    assert "(modelInitializer): 3 Const node(s) have no weight" in msg
    assert "'__inference_saver_12/tensor_names'" in msg and "'__inference_restore_34/restore_const'" in msg


def test_initializer_node_that_its_outputs_do_not_need_is_not_checked(tmp_path):
    model_json, data = _model_json(_weights())
    init = model_json["modelInitializer"]
    init["node"] += [_const("stray"), node("stray_use", "SaveV2", ["stray"])]  # no output needs these
    model = load_graph_model(_write(tmp_path, model_json, data))
    words = nf.tensor(["c"], dtype="string")
    try:
        out = asyncio.run(model.execute_async({"words": words}))
        _check(out, ["c"])
        nf.dispose(out)
    finally:
        words.dispose()
        model.dispose()


def test_main_graph_function_const_without_weight_is_refused(tmp_path):
    weights = _weights()
    del weights["body_fn/one"]
    msg = _load_error(*_model_json(weights), tmp_path)
    assert "graph model" in msg and "1 Const node(s) have no weight in the weights manifest: 'body_fn/one'" in msg


def test_main_graph_const_without_weight_is_refused(tmp_path):
    weights = _weights()
    del weights["default"]
    msg = _load_error(*_model_json(weights), tmp_path)
    assert "1 Const node(s) have no weight in the weights manifest: 'default'" in msg
    assert "modelInitializer" not in msg


def test_called_function_with_unsupported_op_is_refused(tmp_path):
    model_json, data = _model_json(_weights())
    topology = model_json["modelTopology"]
    call = node("fmt_call", "StatelessIf", ["words", "words"], then_branch={"func": {"name": "unused_main_fn"}})
    topology["node"].append(call)
    data, model_json["weightsManifest"][0]["weights"] = nf.io.encode_weights(
        {**_weights(), "unused_main_fn/prefix": np.array("p", dtype=object)}
    )
    with pytest.raises(NotImplementedError, match=r"StringFormat: 'unused_main_fn/fmt'"):
        load_graph_model(_write(tmp_path, model_json, data))


def test_initializer_without_signature_keeps_the_table_handle():
    """TF1 style (the ``initializer`` fixture): no initializerSignature, so the initializer computes its sink
    (``LookupTableImportV2``, whose output is the table's handle) and the main graph finds the table by name."""
    model = load_graph_model(str(fixture("initializer")))
    feeds = expected_inputs("initializer")
    try:
        for _ in range(2):
            out = asyncio.run(model.execute_async(feeds))
            check_outputs("initializer", out)
            out.dispose()
        assert not model.executor.resources.get_hash_table_handle_by_name("table").is_disposed
    finally:
        nf.dispose(list(feeds.values()))
        model.dispose()
