"""``compile`` / ``fit`` / ``evaluate`` / ``predict`` / ``train_on_batch`` / ``fit_dataset`` against real TF.js 4.22.

``tests/fixtures/training.json`` (from ``gen_training.py`` + ``gen_training.js``) holds, per case, the
spec (model, compile arguments, data, schedule) and what TF.js computed: the History, ``evaluate``,
``predict``, the final weights, the training config and the callback calls. Each case is rebuilt
here from the same spec with the same seeded weights and trained without shuffling.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import ndflow as nf
import ndflow.train  # noqa: F401
from ndflow.layers import losses, metrics
from ndflow.layers.naming import to_snake_case

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "examples"))
import train_digits  # noqa: E402

FIXTURE = json.loads((Path(__file__).resolve().parents[1] / "fixtures" / "training.json").read_text())
CASES = FIXTURE["cases"]
TRAINING = [k for k, c in CASES.items() if not c["spec"].get("functions") and not c["spec"].get("digits")]
FUNCTIONS = [k for k, c in CASES.items() if c["spec"].get("functions")]
RTOL, ATOL = 1e-4, 1e-3


def close(actual: Any, expected: Any, what: str = "") -> None:
    """Compare numbers / nested lists (``None`` stays ``None``)."""
    np.testing.assert_allclose(
        np.asarray(actual, np.float64), np.asarray(expected, np.float64), RTOL, ATOL, err_msg=what
    )


def arr(record: dict) -> np.ndarray:
    """A fixture tensor record as a float32 array."""
    return np.asarray(record["values"], np.float32).reshape(record["shape"])


def build(spec: dict) -> nf.LayersModel:
    """The model of a case spec (as gen_training.js builds it)."""
    if spec["kind"] == "digits_cnn":
        return train_digits.build_model()
    if spec["kind"] == "sequential":
        layers = []
        for layer in spec["layers"]:
            kwargs: dict[str, Any] = {"units": layer["units"], "activation": layer.get("activation", "linear")}
            if "input_shape" in layer:
                kwargs["input_shape"] = layer["input_shape"]
            for key in ("kernel_regularizer", "bias_regularizer"):
                if key in layer:
                    kwargs[key] = nf.regularizers.l1l2(l1=layer[key].get("l1", 0), l2=layer[key].get("l2", 0))
            layers.append(nf.layers.dense(**kwargs))
        return nf.sequential(layers=layers)
    a = nf.input(shape=[spec["input_dim"]], name="a")
    h = nf.layers.dense(units=4, activation="relu", name="h").apply(a)
    o1 = nf.layers.dense(units=1, name="o1").apply(h)
    o2 = nf.layers.dense(units=1, activation="sigmoid", name="o2").apply(h)
    return nf.model(inputs=a, outputs=[o1, o2])


def metric_arg(m: Any) -> Any:
    """``'fn:recall'`` (a tf.metrics function in TF.js) becomes the name ndflow accepts for it."""
    if isinstance(m, str) and m.startswith("fn:"):
        return m[3:]
    if isinstance(m, list):
        return [metric_arg(v) for v in m]
    if isinstance(m, dict):
        return {k: metric_arg(v) for k, v in m.items()}
    return m


def optimizer_arg(spec: Any) -> Any:
    """A name, or ``{'momentum': [lr, m]}`` -> ``nf.train.momentum(lr, m)``."""
    if isinstance(spec, str):
        return spec
    ((name, args),) = spec.items()
    return getattr(nf.train, name)(*args)


def data(case: dict, key: str) -> Any:
    """A data array of a case (the digits come from examples/data, the rest from the fixture)."""
    spec = case["spec"]["data"][key]
    if isinstance(spec, list):
        records = case.get(key, spec)
        return [data_spec(s) if s.get("kind") == "digits" else arr(r) for s, r in zip(spec, records, strict=True)]
    return data_spec(spec) if spec.get("kind") == "digits" else arr(case[key])


def data_spec(spec: dict) -> np.ndarray:
    """The rows of the digits split that a spec names."""
    parts = dict(zip(("x_train", "y_train", "x_test", "y_test"), train_digits.load_digits(), strict=True))
    return parts[spec["part"]][: spec.get("rows")]


def setup_case(case: dict) -> tuple[nf.LayersModel, np.ndarray, list[np.ndarray]]:
    """Build, set the TF.js weights and compile; returns the model and the data."""
    spec = case["spec"]
    model = build(spec["model"])
    model.set_weights([arr(w) for w in case["weights"]])
    c = spec["compile"]
    model.compile(optimizer=optimizer_arg(c["optimizer"]), loss=c["loss"], metrics=metric_arg(c.get("metrics")))
    return model, data(case, "x"), data(case, "y")


def one(ys: list[Any]) -> Any:
    """One target, or the list of them."""
    return ys[0] if len(ys) == 1 else ys


def fit_case(model: nf.LayersModel, case: dict, x: np.ndarray, ys: list[np.ndarray], **kwargs: Any) -> Any:
    """Run the case's fit / fit_dataset schedule."""
    spec = case["spec"]
    fit = spec.get("fit", {})
    val = (arr(case["val_x"]), one([arr(y) for y in case["val_y"]])) if "val_x" in case else None
    if spec.get("dataset"):
        size = spec["dataset"]["batch_size"]
        batches = [(x[s : s + size], one([y[s : s + size] for y in ys])) for s in range(0, len(x), size)]
        return model.fit_dataset(batches, epochs=fit["epochs"], verbose=0, validation_data=val, **kwargs)
    args: dict[str, Any] = {"batch_size": fit["batch_size"], "epochs": fit["epochs"], "shuffle": False, "verbose": 0}
    if "validation_split" in fit:
        args["validation_split"] = fit["validation_split"]
    if "class_weight" in fit:
        args["class_weight"] = {int(k): v for k, v in fit["class_weight"].items()}
    if val is not None:
        args["validation_data"] = val
    return model.fit(x, one(ys), **args, **kwargs)


def early_stopping(spec: dict) -> list[Any]:
    """The case's callbacks (EarlyStopping), if any."""
    es = (spec.get("callbacks") or {}).get("early_stopping")
    return [nf.layers.EarlyStopping(**es)] if es else []


@pytest.mark.parametrize("name", [k for k in TRAINING if "history" in CASES[k]])
def test_fit_matches_tfjs(name: str) -> None:
    """Per-epoch loss and metrics, epochs, params, evaluate, predict and final weights equal TF.js's."""
    case = CASES[name]
    model, x, ys = setup_case(case)
    assert model.metrics_names == case["metrics_names"]
    history = fit_case(model, case, x, ys, callbacks=early_stopping(case["spec"]) or None)
    expected = case["history"]
    n_out = len(ys)
    shift = n_out - 1  # TF.js 4.22 shifts multi-output validation values (see training.py)
    val_names = [k for k in expected["history"] if k.startswith("val_")]
    assert list(history.history) == list(expected["history"])
    for key, values in expected["history"].items():
        if key in val_names and shift:
            continue
        close(history.history[key], values, f"{name}: {key}")
    for k in range(len(val_names) - shift):
        close(history.history[val_names[k]], expected["history"][val_names[k + shift]], f"{name}: {val_names[k]}")
    assert history.epoch == expected["epoch"]
    params = {to_snake_case(k): v for k, v in expected["params"].items()}
    if case["spec"].get("dataset"):  # TF.js: initialEpoch null, steps null (a generator has no size)
        params.update(initial_epoch=0, steps=3)
    assert history.params == params
    if "evaluate" in case:
        out = model.evaluate(x, one(ys), batch_size=case["spec"]["evaluate"]["batch_size"])
        values = [float(t.data_sync()[0]) for t in (out if isinstance(out, list) else [out])]
        nf.dispose(out)
        close(values, case["evaluate"][shift:], f"{name}: evaluate")
    if "predict" in case:
        pred = model.predict(x, batch_size=3)
        preds = pred if isinstance(pred, list) else [pred]
        for p, e in zip(preds, case["predict"], strict=True):
            close(p.numpy(), arr(e), f"{name}: predict")
        nf.dispose(pred)
    if "final_weights" in case:
        weights = model.get_weights()
        for w, e in zip(weights, case["final_weights"], strict=True):
            close(w.numpy(), arr(e), f"{name}: final weights")
        nf.dispose(weights)
    assert model.get_training_config() == json.loads(json.dumps(case["training_config"]))
    optimizer, owned = model.optimizer, model.is_optimizer_owned
    model.dispose()
    if not owned:  # an optimizer passed to compile belongs to the caller (as in TF.js)
        optimizer.dispose()


def test_train_on_batch_matches_tfjs() -> None:
    """Three ``train_on_batch`` calls return TF.js's loss and metrics, then ``evaluate`` agrees."""
    case = CASES["train_on_batch"]
    model, x, ys = setup_case(case)
    for expected in case["train_on_batch"]:
        close(model.train_on_batch(x, ys[0]), expected)
    out = model.evaluate(x, ys[0], batch_size=32)
    close([float(t.data_sync()[0]) for t in out], case["evaluate"])
    nf.dispose(out)
    model.dispose()


def test_callback_calls_match_tfjs() -> None:
    """The order of callback calls, their indices and logs are TF.js's."""
    case = CASES["callbacks_order"]
    model, x, ys = setup_case(case)
    events: list[list[Any]] = []

    def record(name: str) -> Any:
        def hook(*args: Any) -> None:
            events.append([name, args[0] if len(args) > 1 else None, dict(args[-1] or {})])

        return hook

    hooks = ("on_train_begin", "on_train_end", "on_epoch_begin", "on_epoch_end", "on_batch_begin", "on_batch_end")
    fit_case(model, case, x, ys, callbacks={h: record(h) for h in hooks})
    assert [e[:2] for e in events] == [e[:2] for e in case["events"]]
    for got, expected in zip(events, case["events"], strict=True):
        assert list(got[2]) == list(expected[2])
        for key, value in expected[2].items():
            close(got[2][key], value, f"{got[0]} {key}")
    model.dispose()


@pytest.mark.parametrize("name", FUNCTIONS)
def test_loss_and_metric_functions_match_tfjs(name: str) -> None:
    """Each loss / metric function (by compile's string name, or tf.metrics function) equals TF.js's."""
    case = CASES[name]
    y_true, y_pred = nf.tensor(arr(case["y_true"])), nf.tensor(arr(case["y_pred"]))
    for key, expected in case["results"].items():
        kind, _, fn_name = key.partition(":")
        if kind == "loss":
            fn = losses.get(fn_name)
        elif fn_name.startswith("fn:"):
            fn = getattr(metrics, to_snake_case(fn_name[3:]))
        else:
            fn = metrics.get(fn_name)
        if "error" in expected:  # a name TF.js's compile rejects: ndflow accepts it (the same function)
            expected = case["results"].get(f"metric:fn:{fn_name}")
            if expected is None:
                continue
        out = fn(y_true, y_pred)
        close(out.numpy(), arr(expected), f"{name}: {key}")
        out.dispose()
    nf.dispose([y_true, y_pred])


def test_load_training_config_round_trip() -> None:
    """``load_training_config`` of TF.js's training config compiles the same loss, metrics and optimizer."""
    for name in ("binary_adagrad_val_data", "multi_output", "momentum_object", "metric_zoo"):
        case = CASES[name]
        model = build(case["spec"]["model"])
        model.load_training_config(case["training_config"])
        assert model.metrics_names == [n.lower() if n in ("MSE", "MAE", "MAPE") else n for n in case["metrics_names"]]
        assert model.get_training_config() == case["training_config"]
        model.dispose()


def test_sample_weight_equals_class_weight() -> None:
    """``sample_weight`` (beyond TF.js) weighs per-sample losses as the equivalent ``class_weight`` does."""
    case = CASES["class_weight"]
    model, x, ys = setup_case(case)
    table = {int(k): v for k, v in case["spec"]["fit"]["class_weight"].items()}
    sample_weight = np.array([table[int(c)] for c in ys[0].argmax(1)], np.float32)
    history = model.fit(x, ys[0], batch_size=4, epochs=2, shuffle=False, verbose=0, sample_weight=sample_weight)
    close(history.history["loss"], case["history"]["history"]["loss"])
    model.dispose()


# -- beyond the fixture: memory, errors, data forms, schedules -------------------------------------------------


def mlp(optimizer: Any = "adam", loss: Any = "meanSquaredError", metrics: Any = None) -> nf.LayersModel:
    """A small compiled regression model."""
    model = nf.sequential(
        layers=[nf.layers.dense(units=4, activation="relu", input_shape=[3]), nf.layers.dense(units=1)]
    )
    model.compile(optimizer=optimizer, loss=loss, metrics=metrics)
    return model


DATA_X = np.linspace(-1, 1, 30, dtype=np.float32).reshape(10, 3)
DATA_Y = DATA_X.sum(1, keepdims=True) * 0.5


def test_memory_flat_across_epochs() -> None:
    """No tensor survives a step or an epoch: only the optimizer's slots appear, on the first step."""
    model = mlp(metrics=["mae"])
    start = nf.memory().num_tensors
    counts: dict[Any, list[int]] = {0: [], 1: [], "epoch": []}
    callback = {  # (the epoch's running totals are 2 scalars from the second batch on, as in TF.js)
        "on_batch_begin": lambda batch, logs: counts[batch].append(nf.memory().num_tensors),
        "on_epoch_end": lambda epoch, logs: counts["epoch"].append(nf.memory().num_tensors),
    }
    history = model.fit(DATA_X, DATA_Y, batch_size=4, epochs=20, verbose=0, callbacks=callback, validation_split=0.2)
    slots = 2 * len(model.trainable_weights)  # Adam's m and v
    assert nf.memory().num_tensors == start + slots
    assert len(set(counts["epoch"])) == 1 and len(set(counts[0][1:])) == 1 and len(set(counts[1])) == 1
    assert counts[0][0] + slots == counts[0][1] == counts["epoch"][0]  # slots: made by the first step
    assert len(history.history["loss"]) == 20 and history.history["loss"][-1] < history.history["loss"][0]
    model.dispose()  # frees the weights and the slots of the optimizer compile made
    assert nf.memory().num_tensors == start - len(model.weights)


def test_errors_name_the_argument() -> None:
    """fit before compile, x / y lengths, unknown names: clear errors naming what is wrong."""
    model = nf.sequential(layers=[nf.layers.dense(units=1, input_shape=[3])])
    with pytest.raises(RuntimeError, match="fit: the model needs to be compiled"):
        model.fit(DATA_X, DATA_Y, verbose=0)
    model.predict(DATA_X).dispose()  # built but not compiled
    with pytest.raises(RuntimeError, match="fit: .*compile"):
        model.fit(DATA_X, DATA_Y, verbose=0)
    with pytest.raises(ValueError, match="compile: loss: Unknown loss 'meanSquareError'"):
        model.compile(optimizer="sgd", loss="meanSquareError")
    with pytest.raises(ValueError, match="compile: optimizer: Unknown optimizer 'adamw'"):
        model.compile(optimizer="adamw", loss="mse")
    with pytest.raises(ValueError, match="compile: metrics: Unknown metric 'f1'"):
        model.compile(optimizer="sgd", loss="mse", metrics=["f1"])
    with pytest.raises(ValueError, match="compile: loss is required"):
        model.compile(optimizer="sgd")
    model.compile(optimizer="sgd", loss="mean_squared_error")
    with pytest.raises(ValueError, match="fit: x and y should have the same number of samples, found 10 input .* 8"):
        model.fit(DATA_X, DATA_Y[:8], verbose=0)
    with pytest.raises(ValueError, match="fit: x: expected .* to have shape"):
        model.fit(DATA_X[:, :2], DATA_Y, verbose=0)
    with pytest.raises(ValueError, match="batch_size is required to be a positive integer"):
        model.fit(DATA_X, DATA_Y, batch_size=0, verbose=0)
    with pytest.raises(ValueError, match="evaluate: y: expected"):
        model.evaluate(DATA_X, np.zeros((10, 2), np.float32))
    with pytest.raises(ValueError, match="class_weight must contain all classes"):
        model.fit(DATA_X, (DATA_Y > 0).astype(np.float32), class_weight={0: 1.0}, verbose=0)
    model.dispose()


def test_categorical_crossentropy_rejects_class_indices() -> None:
    """categoricalCrossentropy with [n, 1] targets points to the sparse loss (TF.js's check)."""
    model = nf.sequential(layers=[nf.layers.dense(units=1, activation="sigmoid", input_shape=[3])])
    model.compile(optimizer="sgd", loss="categoricalCrossentropy")
    with pytest.raises(ValueError, match="sparseCategoricalCrossentropy"):
        model.fit(DATA_X, np.zeros((10, 1), np.float32), verbose=0)
    model.dispose()


def test_multi_input_dicts_and_names() -> None:
    """Two named inputs fed by dict, two outputs by list; losses by dict, snake_case and Keras aliases."""
    a, b = nf.input(shape=[3], name="a"), nf.input(shape=[2], name="b")
    merged = nf.layers.dense(units=4, activation="tanh", name="mix").apply(a)
    out1 = nf.layers.dense(units=1, name="y1").apply(merged)
    out2 = nf.layers.dense(units=3, activation="softmax", name="y2").apply(nf.layers.dense(units=3).apply(b))
    model = nf.model(inputs=[a, b], outputs=[out1, out2])
    model.compile(
        optimizer="rmsprop",
        loss={"y1": "mse", "y2": "sparse_categorical_crossentropy"},
        metrics={"y2": ["accuracy", "sparseTopKCategoricalAccuracy"]},
    )
    assert model.metrics_names == ["loss", "y1_loss", "y2_loss", "y2_acc", "y2_sparseTopKCategoricalAccuracy"]
    xb = np.random.default_rng(0).random((10, 2), np.float32)
    labels = np.arange(10) % 3
    history = model.fit({"a": DATA_X, "b": xb}, [DATA_Y, labels], batch_size=5, epochs=2, verbose=0)
    assert history.history["y2_sparseTopKCategoricalAccuracy"] == [1.0, 1.0]  # k=5 >= 3 classes
    loss = history.history["loss"][-1]
    assert np.isclose(loss, history.history["y1_loss"][-1] + history.history["y2_loss"][-1], atol=1e-5)
    out = model.evaluate([DATA_X, xb], {"y1": DATA_Y, "y2": labels.astype(np.int32)})
    assert len(out) == 5
    nf.dispose(out)
    model.dispose()


def test_callable_loss_and_metric() -> None:
    """User functions as loss and metric: the metric is named after the function."""

    def half_mse(y_true: nf.Tensor, y_pred: nf.Tensor) -> nf.Tensor:
        return nf.mul(0.5, losses.mean_squared_error(y_true, y_pred))

    model = mlp(optimizer="sgd", loss=half_mse, metrics=[half_mse, metrics.mean_absolute_error])
    assert model.metrics_names == ["loss", "half_mse", "meanAbsoluteError"]
    history = model.fit(DATA_X, DATA_Y, batch_size=10, epochs=1, verbose=0)
    assert np.isclose(history.history["loss"][0], history.history["half_mse"][0], atol=1e-6)
    with pytest.raises(ValueError, match="non-string loss"):
        model.get_training_config()
    model.dispose()


def test_fit_dataset_sources() -> None:
    """Lists, callables and generators (with batches_per_epoch) give the same training as fit."""
    batches = [(DATA_X[s : s + 4], DATA_Y[s : s + 4]) for s in range(0, 10, 4)]
    histories = []
    for source, kwargs in (
        (batches, {}),
        (lambda: iter(batches), {}),
        (({"xs": nf.tensor(x), "ys": nf.tensor(y)} for _ in range(2) for x, y in batches), {"batches_per_epoch": 3}),
    ):
        nf.layers.naming.reset_uids()
        model = mlp(optimizer="sgd")
        model.set_weights([np.full(w.shape, 0.1, np.float32) for w in model.weights])
        histories.append(model.fit_dataset(source, epochs=2, verbose=0, **kwargs).history["loss"])
        model.dispose()
    nf.layers.naming.reset_uids()
    model = mlp(optimizer="sgd")
    model.set_weights([np.full(w.shape, 0.1, np.float32) for w in model.weights])
    expected = model.fit(DATA_X, DATA_Y, batch_size=4, epochs=2, shuffle=False, verbose=0).history["loss"]
    for history in histories:
        close(history, expected)
    one_shot = ((x, y) for x, y in batches)
    with pytest.raises(ValueError, match="one-shot iterator"):
        model.fit_dataset(one_shot, epochs=2, verbose=0)
    out, expected_out = model.evaluate_dataset(batches), model.evaluate(DATA_X, DATA_Y)
    close(out.numpy(), expected_out.numpy())
    nf.dispose([out, expected_out])
    model.dispose()


def test_steps_per_epoch_and_shuffle_modes() -> None:
    """steps_per_epoch continues through the data across epochs; shuffle=True and 'batch' train too."""
    model = mlp(optimizer="sgd")
    history = model.fit(DATA_X, DATA_Y, batch_size=4, epochs=3, steps_per_epoch=2, verbose=0)
    assert history.params["steps"] == 2 and history.params["samples"] is None
    seen: list[int] = []
    model.fit(DATA_X, DATA_Y, batch_size=4, epochs=2, steps_per_epoch=2, verbose=0, shuffle=False,
              callbacks={"on_batch_end": lambda b, logs: seen.append(int(logs["size"]))})  # fmt: skip
    assert seen == [4, 4, 2, 4]
    for shuffle in (True, "batch"):
        losses_ = model.fit(DATA_X, DATA_Y, batch_size=3, epochs=2, shuffle=shuffle, verbose=0).history["loss"]
        assert all(np.isfinite(losses_))
    with pytest.raises(ValueError, match="validation_steps"):
        model.fit(DATA_X, DATA_Y, validation_steps=1, verbose=0)
    model.dispose()


def test_predict_batches_and_on_batch() -> None:
    """predict in batches of any size equals predict_on_batch."""
    model = mlp()
    whole = model.predict_on_batch(DATA_X)
    for batch_size in (1, 3, 32):
        part = model.predict(DATA_X, batch_size=batch_size)
        close(part.numpy(), whole.numpy())
        part.dispose()
    whole.dispose()
    model.dispose()


def test_regularizer_penalty_in_loss() -> None:
    """The training loss adds the weights' penalties; evaluate does not (as TF.js)."""
    model = nf.sequential(
        layers=[nf.layers.dense(units=1, input_shape=[3], kernel_regularizer=nf.regularizers.l1l2(l1=0, l2=10.0))]
    )
    model.compile(optimizer=nf.train.sgd(0.0), loss="mse")
    model.set_weights([np.ones((3, 1), np.float32), np.zeros((1,), np.float32)])
    loss = model.fit(DATA_X, DATA_Y, batch_size=10, epochs=1, verbose=0).history["loss"][0]
    plain = model.evaluate(DATA_X, DATA_Y)
    assert np.isclose(loss, float(plain.data_sync()[0]) + 30.0, rtol=1e-5)
    plain.dispose()
    optimizer = model.optimizer
    model.dispose()
    optimizer.dispose()


def test_recompile_frees_the_old_optimizer() -> None:
    """Compiling again with a string optimizer frees the slots of the one compile made before."""
    model = mlp(optimizer="adam")
    start = nf.memory().num_tensors
    model.fit(DATA_X, DATA_Y, epochs=1, verbose=0)
    assert nf.memory().num_tensors == start + 2 * len(model.trainable_weights)
    model.compile(optimizer="rmsprop", loss="mse")
    assert nf.memory().num_tensors == start
    model.dispose()


def test_digits_reference_is_tfjs_measurement() -> None:
    """The TF.js accuracies quoted by examples/train_digits.py are those of the fixture's 10-epoch runs."""
    full = CASES["digits_cnn_full"]
    reference = train_digits.TFJS_REFERENCE
    assert reference["seeded_unshuffled"] == round(full["seeded"]["test_accuracy"], 4)
    assert reference["random_init_runs"] == [round(r["test_accuracy"], 4) for r in full["runs"]]
    assert full["spec"]["fit"] == {"batch_size": 32, "epochs": 10, "validation_split": 0.1}
