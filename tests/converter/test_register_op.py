"""nf.register_op / nf.deregister_op / nf.get_registered_op with TF.js's custom-op contract, checked against a
TF.js 4.22 run of the same graph model (tests/fixtures/tfjs_surface.json, tests/fixtures/gen_tfjs_surface.js)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf

FIXTURES = Path(__file__).parents[1] / "fixtures"
WANT = json.loads((FIXTURES / "tfjs_surface.json").read_text())["custom_op"]
MODEL = FIXTURES / "graph_models" / "custom_op" / "model.json"
BASIC = FIXTURES / "graph_models" / "basic"
OP = "NdflowTestScaleAdd"


@pytest.fixture(autouse=True)
def _clean_registry() -> Iterator[None]:
    yield
    for name in (OP, "Relu"):
        nf.deregister_op(name)


def _scale_add(seen: dict) -> object:
    def run(node: object) -> list[nf.Tensor]:
        seen["inputs"] = [list(t.shape) for t in node.inputs]
        seen["attrs"] = node.attrs
        x, y = node.inputs
        return [x * node.attrs["alpha"] + y, x - y]

    return run


def _inputs() -> dict[str, nf.Tensor]:
    return {k: nf.tensor(WANT[k]["values"], WANT[k]["shape"]) for k in ("x", "y")}


def test_custom_op_runs_as_in_tfjs() -> None:
    seen: dict = {}
    nf.register_op(OP, _scale_add(seen))
    model = nf.load_graph_model(str(MODEL))
    feeds = _inputs()
    outs = model.execute(feeds, ["out", "out2"])
    for got, want in zip(outs, WANT["outputs"], strict=True):
        assert list(got.shape) == want["shape"] and got.dtype == want["dtype"]
        np.testing.assert_allclose(got.data_sync(), want["values"], rtol=1e-6)
    assert seen == WANT["node"]  # the node object's inputs and decoded attrs, value for value
    nf.dispose([*outs, *feeds.values()])
    model.dispose()


def test_get_and_deregister() -> None:
    fn = _scale_add({})
    assert nf.get_registered_op(OP) is None
    nf.register_op(OP, fn)
    mapper = nf.get_registered_op(OP)
    assert mapper.tf_op_name == OP and mapper.category == "custom" and mapper.custom_executor is fn
    model = nf.load_graph_model(str(MODEL))
    nf.deregister_op(OP)
    assert nf.get_registered_op(OP) is None
    feeds = _inputs()
    with pytest.raises(NotImplementedError, match=OP):  # TF.js: "Custom op ... is not registered."
        model.execute(feeds, ["out"])
    nf.dispose(list(feeds.values()))
    model.dispose()
    nf.deregister_op(OP)  # a second time: nothing to do, as TF.js's delete


def test_unregistered_op_error_names_register_op() -> None:
    with pytest.raises(NotImplementedError, match=r"nf.register_op\(op_name, fn\)"):
        nf.load_graph_model(str(MODEL))


def test_async_function_and_execute_async() -> None:
    async def run(node: object) -> list[nf.Tensor]:
        x, y = node.inputs
        return [x + y, x * y]

    nf.register_op(OP, run)
    model = nf.load_graph_model(str(MODEL))
    feeds = _inputs()
    result = asyncio.run(model.execute_async(feeds, ["out"]))
    out = result[0] if isinstance(result, list) else result
    np.testing.assert_allclose(out.data_sync(), np.add(WANT["x"]["values"], WANT["y"]["values"]), rtol=1e-6)
    nf.dispose([result, *feeds.values()])
    model.dispose()


def test_override_builtin_and_restore() -> None:
    expected = json.loads((BASIC / "expected.json").read_text())
    x = nf.tensor(expected["inputs"][0]["values"], expected["inputs"][0]["shape"])
    nf.register_op("Relu", lambda node: nf.mul(node.inputs[0], 0.0) + 7.0)
    model = nf.load_graph_model(str(BASIC / "model.json"))  # optimizer on by default: must keep the override
    result = model.predict(x)
    out = result[0] if isinstance(result, list) else result
    assert out.data_sync().tolist() == [7.0] * 4
    nf.dispose(result)
    model.dispose()
    nf.deregister_op("Relu")
    model = nf.load_graph_model(str(BASIC / "model.json"))
    result = model.predict(x)
    out = result[0] if isinstance(result, list) else result
    np.testing.assert_allclose(out.data_sync(), expected["outputs"][0]["values"], rtol=1e-5, atol=1e-6)
    nf.dispose([result, x])
    model.dispose()


def test_bad_registration_and_bad_results() -> None:
    with pytest.raises(TypeError, match="register_op: argument 'op_func' must be callable"):
        nf.register_op(OP, 3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="register_op: argument 'name'"):
        nf.register_op("", lambda node: node.inputs[0])
    nf.register_op(OP, lambda node: "not a tensor")
    model = nf.load_graph_model(str(MODEL))
    feeds = _inputs()
    with pytest.raises(TypeError, match=f"custom op '{OP}': the registered function must return a Tensor"):
        model.execute(feeds, ["out"])
    nf.dispose(list(feeds.values()))
    model.dispose()
