"""TF.js config dicts on the model methods, the camelCase keyword hint, and the methods' real signatures."""

from __future__ import annotations

import asyncio
import inspect

import numpy as np
import pytest

import ndflow as nf

X = np.arange(24, dtype=np.float32).reshape(12, 2) / 24
Y = X.sum(axis=1, keepdims=True)


def dense_model(compiled: bool = True) -> nf.Sequential:
    model = nf.sequential(layers=[nf.layers.dense(units=1, input_shape=[2], kernel_initializer="ones")])
    if compiled:
        model.compile(optimizer="sgd", loss="meanSquaredError")
    return model


def test_compile_fit_evaluate_predict_take_tfjs_config_dicts():
    model = dense_model(compiled=False)
    model.compile({"optimizer": "sgd", "loss": "meanSquaredError", "metrics": ["mae"]})
    assert model.metrics_names == ["loss", "mae"]
    history = model.fit(X, Y, {"batchSize": 8, "epochs": 2, "verbose": 0, "validationSplit": 0.25})
    assert history.epoch == [0, 1] and "val_loss" in history.history
    values = model.evaluate(X, Y, {"batchSize": 4})
    pred = model.predict(X, {"batchSize": 4})
    assert pred.shape == (12, 1)
    snake = model.fit(X, Y, {"batch_size": 6, "epochs": 1, "verbose": 0})  # snake_case keys too
    assert snake.params["batch_size"] == 6
    nf.dispose([*values, pred])
    model.dispose()


def test_config_dicts_awaited_and_on_the_async_variants(tmp_path):
    model = dense_model()
    ds = nf.data.zip({"xs": nf.data.array(X.tolist()), "ys": nf.data.array(Y.tolist())}).batch(4)

    async def main() -> None:
        h = await model.fit(X, Y, {"batchSize": 4, "epochs": 1, "verbose": 0})
        h2 = await model.fit_async(X, Y, {"batchSize": 4, "epochs": 2, "verbose": 0, "yieldEvery": "batch"})
        h3 = await model.fit_dataset(ds, {"epochs": 2, "verbose": 0, "batchesPerEpoch": 2})
        h4 = await model.fit_dataset_async(ds, {"epochs": 1, "verbose": 0})
        assert [len(x.epoch) for x in (h, h2, h3, h4)] == [1, 2, 2, 1]
        v1 = await model.evaluate_async(X, Y, {"batchSize": 4})
        v2 = await model.evaluate_dataset(ds, {"batches": 2})
        v3 = await model.evaluate_dataset_async(ds, {"batches": 1})
        await model.save(f"file://{tmp_path}", {"includeOptimizer": True})
        loaded = await nf.load_layers_model(f"file://{tmp_path}/model.json")
        assert loaded.optimizer is not None
        nf.dispose([v1, v2, v3])
        loaded.dispose()

    asyncio.run(main())
    model.dispose()


def test_camel_case_keywords_get_the_snake_case_hint():
    model = dense_model()
    with pytest.raises(TypeError, match=r"fit: unexpected argument\(s\) 'batchSize' \(use 'batch_size'\)"):
        model.fit(X, Y, batchSize=8)
    with pytest.raises(TypeError, match=r"evaluate: unexpected argument\(s\) 'batchSize' \(use 'batch_size'\)"):
        model.evaluate(X, Y, batchSize=4)
    with pytest.raises(TypeError, match=r"predict: .*'batchSize' \(use 'batch_size'\)"):
        model.predict(X, batchSize=4)
    with pytest.raises(TypeError, match=r"fit_dataset: .*'batchesPerEpoch' \(use 'batches_per_epoch'\)"):
        model.fit_dataset([(X, Y)], batchesPerEpoch=1)
    with pytest.raises(TypeError, match=r"save: .*'includeOptimizer' \(use 'include_optimizer'\)"):
        model.save("memory://x", includeOptimizer=True)
    with pytest.raises(TypeError, match=r"fit_async: .*'validationSplit' \(use 'validation_split'\)"):
        asyncio.run(model.fit_async(X, Y, validationSplit=0.5))
    with pytest.raises(TypeError, match=r"fit: unexpected argument\(s\) 'bogus'$"):
        model.fit(X, Y, bogus=1)
    model.dispose()


def test_bad_config_dicts():
    model = dense_model()
    with pytest.raises(ValueError, match=r"fit: unknown config key 'batchSise'; expected some of \[.*'batchSize'"):
        model.fit(X, Y, {"batchSise": 8})
    with pytest.raises(TypeError, match="fit: 'epochs' is given both in the config dict and as a keyword"):
        model.fit(X, Y, {"epochs": 2}, epochs=3)
    with pytest.raises(TypeError, match="config dict must be the last positional argument"):
        model.fit(X, Y, {"epochs": 2}, 3)
    with pytest.raises(ValueError, match="compile: unknown config key 'lossFn'"):
        model.compile({"optimizer": "sgd", "lossFn": "mse"})
    model.dispose()


METHODS = {
    "compile": ["optimizer", "loss", "metrics"],
    "fit": [
        "x", "y", "batch_size", "epochs", "verbose", "callbacks", "validation_split", "validation_data", "shuffle",
        "class_weight", "sample_weight", "initial_epoch", "steps_per_epoch", "validation_steps", "yield_every",
        "distribution",
    ],
    "evaluate": ["x", "y", "batch_size", "verbose", "steps"],
    "predict": ["x", "batch_size", "verbose"],
    "fit_dataset": [
        "dataset", "epochs", "batches_per_epoch", "verbose", "callbacks", "validation_data",
        "validation_batch_size", "validation_batches", "class_weight", "initial_epoch", "yield_every",
        "distribution",
    ],
    "evaluate_dataset": ["dataset", "batches", "verbose"],
    "save": ["handler_or_url", "include_optimizer", "quantization_dtype", "trainable_only"],
    "summary": ["line_length", "positions", "print_fn"],
}  # fmt: skip


@pytest.mark.parametrize("cls", [nf.LayersModel, nf.Sequential])
@pytest.mark.parametrize("name", sorted(METHODS))
def test_real_signatures_and_docstrings(cls, name):
    method = getattr(cls, name)
    params = [p for p in inspect.signature(method).parameters if p != "self"]
    assert params == METHODS[name]
    doc = inspect.getdoc(method) or ""
    assert len(doc.splitlines()) >= 4, f"{cls.__name__}.{name} has a one-line docstring"
    if name != "summary":
        assert "Example" in doc or "see ``LayersModel" in doc


@pytest.mark.parametrize("name", ["fit", "evaluate", "fit_dataset", "evaluate_dataset"])
def test_async_variants_have_the_same_parameters(name):
    plain = list(inspect.signature(getattr(nf.Sequential, name)).parameters)
    asynchronous = list(inspect.signature(getattr(nf.Sequential, f"{name}_async")).parameters)
    assert asynchronous[: len(plain)] == plain
    assert set(asynchronous) - set(plain) <= {"yield_every"}
