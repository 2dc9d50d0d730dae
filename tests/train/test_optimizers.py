"""Optimizers against TF.js 4.22 (``tests/fixtures/optimizers.json``, from ``gen_optimizers.py``).

Each fixture case is replayed step by step: ``w``, ``b`` and the cost after each of five
``minimize`` steps of ``mean((x @ w + b - y)^2)``, ``get_weights`` after two steps, and
``get_class_name`` / ``get_config``. Then convergence on a small regression, weight and config
round trips, memory, errors, and the places where ndflow departs from TF.js (``BEYOND_TFJS``).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import ndflow as nf
import ndflow.train as train
from ndflow.core.tensor import DisposedTensorError

FIXTURE = json.loads((Path(__file__).resolve().parent.parent / "fixtures" / "optimizers.json").read_text())
STEPS = FIXTURE["steps"]
WEIGHTS = FIXTURE["weights"]
CONFIGS = FIXTURE["configs"]
RTOL, ATOL = 1e-5, 1e-6  # same float32 ops in the same order as TF.js: agreement to a few ulps

BEYOND_TFJS = {
    "rmsprop_centered_zero_grad": "TF.js takes sqrt(ms - (mg^2 + eps)), NaN where a gradient is 0; ndflow adds eps",
    "adamax_get_weights": "TF.js 4.22 throws 'getWeights() is not implemented for Adamax yet'; ndflow implements it",
    "get_weights_owned": "TF.js returns the slot variables themselves; ndflow returns clones the caller disposes",
    "set_weights_frees": "TF.js's setWeights leaks the slot variables it replaces; ndflow disposes them",
    "set_momentum": "TF.js's setMomentum does not change the momentum used by the update; ndflow's does",
    "slot_shape_check": "TF.js broadcasts a slot of another shape silently; ndflow raises",
    # step cases where the epsilon sign shows (ms - mg^2 not >> eps): checked against numpy instead
    "rmsprop__centered_momentum_epsilon": "centered RMSProp with eps=1e-4: ndflow adds eps, TF.js subtracts it",
}


def _values(spec: dict) -> np.ndarray:
    flat = [math.nan if v == "NaN" else v for v in spec["values"]]
    return np.array(flat, np.float32).reshape(spec["shape"])


def _close(actual: np.ndarray, expected: np.ndarray, what: str) -> None:
    np.testing.assert_allclose(actual, expected, rtol=RTOL, atol=ATOL, err_msg=what)


@contextlib.contextmanager
def problem() -> Iterator[tuple[nf.Variable, nf.Variable, object]]:
    """The fixture's variables ``w`` and ``b`` and the cost function (everything disposed after)."""
    p = FIXTURE["problem"]
    x, y = nf.tensor2d(p["x"]), nf.tensor2d(p["y"])
    w, b = nf.tidy(lambda: (nf.variable(nf.tensor2d(p["w0"]), name="w"), nf.variable(nf.tensor1d(p["b0"]), name="b")))
    try:
        yield w, b, lambda: nf.mean(nf.square(nf.sub(nf.add(nf.mat_mul(x, w), b), y)))
    finally:
        nf.dispose([x, y, w, b])


def _make(case: dict) -> train.Optimizer:
    return getattr(train, case["optimizer"])(*case["args"])


def _step_case(optimizer: str, args: list) -> dict:
    return next(c for c in STEPS if c["optimizer"] == optimizer and c["args"] == args)


# ----------------------------------------------------------------------------- five steps vs TF.js


STEPS_TFJS = [c for c in STEPS if c["id"] not in BEYOND_TFJS]


@pytest.mark.parametrize("case", STEPS_TFJS, ids=[c["id"] for c in STEPS_TFJS])
def test_first_five_steps_match_tfjs(backend, case):
    with problem() as (w, b, f):
        opt = _make(case)
        var_list = None if case["var_list"] is None else [{"w": w, "b": b}[n] for n in case["var_list"]]
        n_vars = 2 if var_list is None else len(var_list)
        ws, bs, costs = [], [], []
        try:
            for step in range(5):
                before = nf.memory().num_tensors
                cost = opt.minimize(f, True, var_list)
                new = nf.memory().num_tensors - before
                # the cost, plus the slot variables on the first step; nothing else, ever
                slots = n_vars * len(opt._slot_suffixes()) if step == 0 else 0
                assert new == 1 + slots, f"step {step}: {new} new tensors"
                costs.append(cost.data_sync()[0])
                cost.dispose()
                ws.append(w.numpy())
                bs.append(b.numpy())
            assert opt.iterations == case["iterations"] == 5
        finally:
            before = nf.memory().num_tensors
            opt.dispose()
            assert before - nf.memory().num_tensors == n_vars * len(opt._slot_suffixes())
    _close(np.stack(ws), _values(case["w"]), "w")
    _close(np.stack(bs).reshape(5, 1), _values(case["b"]), "b")
    _close(np.array(costs), _values(case["cost"]), "cost")


@pytest.mark.parametrize("form", ["dict", "list"])
def test_compute_then_apply_gradients_matches_minimize(backend, form):
    case = next(c for c in STEPS if c["id"] == "adam__lr")
    with problem() as (w, b, f):
        opt = _make(case)
        try:
            for _ in range(5):
                value, grads = opt.compute_gradients(f)
                assert value.shape == () and set(grads) == {"w", "b"}
                if form == "dict":
                    opt.apply_gradients(grads)
                else:
                    opt.apply_gradients([{"name": k, "tensor": g} for k, g in grads.items()])
                nf.dispose([value, grads])
            _close(w.numpy(), _values(case["w"])[-1], "w")
            _close(b.numpy(), _values(case["b"])[-1].reshape(1), "b")
            assert opt.iterations == 5
        finally:
            opt.dispose()


def test_minimize_without_return_cost_returns_none(backend):
    with problem() as (w, b, f):
        opt = train.sgd(0.1)
        before = nf.memory().num_tensors
        assert opt.minimize(f) is None
        assert nf.memory().num_tensors == before
        _close(w.numpy(), _values(STEPS[0]["w"])[0], "w")


def test_gradient_none_skips_the_variable_but_counts_the_step(backend):
    with problem() as (w, b, f):
        opt = train.momentum(0.1, 0.9)
        try:
            value, grads = opt.compute_gradients(f)
            w0 = w.numpy()
            opt.apply_gradients([{"name": "w", "tensor": None}, {"name": "b", "tensor": grads["b"]}])
            nf.dispose([value, grads])
            np.testing.assert_array_equal(w.numpy(), w0)
            assert opt.iterations == 1 and len(opt.get_config()) == 3
            assert [s.original_name for s in opt._slots[0]] == ["w/momentum", "b/momentum"]
        finally:
            opt.dispose()


# ----------------------------------------------------------------------------- known minimum

rng = np.random.default_rng(0)
REG_X = rng.uniform(-1, 1, (16, 3)).astype(np.float32)
REG_W, REG_B = np.array([[0.5], [-1.0], [2.0]], np.float32), 0.3
REG_Y = REG_X @ REG_W + REG_B
CONVERGE = {
    "sgd": (lambda: train.sgd(0.3), 300),
    "momentum": (lambda: train.momentum(0.1, 0.9), 300),
    "momentum_nesterov": (lambda: train.momentum(0.1, 0.9, True), 300),
    "adagrad": (lambda: train.adagrad(0.5), 300),
    "adadelta": (lambda: train.adadelta(0.3), 300),
    "adam": (lambda: train.adam(0.05), 300),
    "adamax": (lambda: train.adamax(0.05), 300),
    "rmsprop": (lambda: train.rmsprop(0.01), 500),
    "rmsprop_centered_momentum": (lambda: train.rmsprop(0.005, 0.9, 0.9, None, True), 300),
}


@pytest.mark.parametrize("name", list(CONVERGE))
def test_reaches_the_minimum_of_a_linear_regression(backend, name):
    make, steps = CONVERGE[name]
    x, y = nf.tensor2d(REG_X), nf.tensor2d(REG_Y)
    w = nf.tidy(lambda: nf.variable(nf.zeros([3, 1])))
    b = nf.tidy(lambda: nf.variable(nf.zeros([1])))
    opt = make()
    try:
        for step in range(steps):
            opt.minimize(lambda: nf.mean(nf.square(nf.sub(nf.add(nf.mat_mul(x, w), b), y))))
            if step == 1:
                stable = nf.memory().num_tensors
            elif step > 1:
                assert nf.memory().num_tensors == stable
        np.testing.assert_allclose(w.numpy(), REG_W, atol=1e-2)
        np.testing.assert_allclose(b.numpy(), [REG_B], atol=1e-2)
    finally:
        opt.dispose()
        nf.dispose([x, y, w, b])


# ----------------------------------------------------------------------------- weights


@pytest.mark.parametrize("case", WEIGHTS, ids=[c["id"] for c in WEIGHTS])
def test_get_weights_matches_tfjs(backend, case):
    with problem() as (w, b, f):
        opt = _make(case)
        try:
            for _ in range(2):
                opt.minimize(f)
            weights = opt.get_weights()
            try:
                assert [x["name"] for x in weights] == [x["name"] for x in case["weights"]]
                assert weights[0]["tensor"].dtype == "int32"
                for mine, theirs in zip(weights, case["weights"], strict=True):
                    assert list(mine["tensor"].shape) == theirs["shape"], mine["name"]
                    _close(mine["tensor"].numpy(), _values(theirs), mine["name"])
            finally:
                nf.dispose([x["tensor"] for x in weights])  # BEYOND_TFJS["get_weights_owned"]
        finally:
            opt.dispose()


ROUND_TRIP = [(c["optimizer"], c["args"]) for c in WEIGHTS] + [("adamax", [0.1])]


@pytest.mark.parametrize("optimizer,args", ROUND_TRIP, ids=[f"{o}{a}" for o, a in ROUND_TRIP])
def test_set_weights_continues_training_where_tfjs_does(backend, optimizer, args):
    """Two steps, hand the state to a new optimizer, three more: TF.js's five-step values."""
    expected = _step_case(optimizer, args)
    with problem() as (w, b, f):
        first, second = getattr(train, optimizer)(*args), getattr(train, optimizer)(*args)
        try:
            for _ in range(2):
                first.minimize(f)
            weights = first.get_weights()
            second.set_weights(weights)
            nf.dispose([x["tensor"] for x in weights])
            first.dispose()
            assert second.iterations == 2
            for _ in range(3):
                second.minimize(f)
            assert second.iterations == 5
            _close(w.numpy(), _values(expected["w"])[-1], "w")
            _close(b.numpy(), _values(expected["b"])[-1].reshape(1), "b")
        finally:
            first.dispose()
            second.dispose()


def test_set_weights_replaces_and_frees_old_slots(backend):
    with problem() as (w, b, f):
        opt = train.adam(0.1)
        try:
            opt.minimize(f)
            weights = opt.get_weights()
            before = nf.memory().num_tensors
            opt.set_weights(weights)  # BEYOND_TFJS["set_weights_frees"]: 4 slots out, 4 in
            assert nf.memory().num_tensors == before
            nf.dispose([x["tensor"] for x in weights])
            assert [x.original_name for x in opt._slots[0]] == ["w/m", "b/m"]
        finally:
            opt.dispose()


def test_sgd_weights_are_only_the_iteration_count(backend):
    opt = train.sgd(0.1)
    weights = opt.get_weights()
    assert [x["name"] for x in weights] == ["iter"] and weights[0]["tensor"].numpy() == 0
    seven = nf.scalar(7, "int32")
    opt.set_weights([{"name": "iter", "tensor": seven}])
    nf.dispose([seven] + [x["tensor"] for x in weights])
    assert opt.iterations == 7
    extra = [{"name": "iter", "tensor": nf.scalar(1, "int32")}, {"name": "w/x", "tensor": nf.zeros([2])}]
    with pytest.raises(ValueError, match="SGD optimizer does not have settable weights"):
        opt.set_weights(extra)
    nf.dispose([x["tensor"] for x in extra])
    nf.dispose([x["tensor"] for x in opt.get_weights()])


# ----------------------------------------------------------------------------- config


@pytest.mark.parametrize("case", CONFIGS, ids=[c["id"] for c in CONFIGS])
def test_config_matches_tfjs_and_round_trips(backend, case):
    opt = _make(case)
    assert opt.get_class_name() == case["className"] == type(opt).class_name
    config = opt.get_config()
    assert list(config) == list(case["config"])
    for key, value in case["config"].items():
        assert config[key] == pytest.approx(value, rel=1e-12), key
    again = type(opt).from_config(json.loads(json.dumps(config)))
    assert type(again) is type(opt) and again.get_config() == config
    restored = train.deserialize(json.loads(json.dumps(train.serialize(opt))))
    assert type(restored) is type(opt) and restored.get_config() == config
    assert train.OPTIMIZER_CLASSES[case["className"]] is type(opt)


def test_class_hierarchy_and_names():
    assert issubclass(train.MomentumOptimizer, train.SGDOptimizer)  # as in TF.js
    names = {cls.class_name for cls in train.OPTIMIZER_CLASSES.values()}
    assert names >= {"SGD", "Momentum", "Adagrad", "Adadelta", "Adam", "Adamax", "RMSProp"}
    assert "learning_rate=0.1" in repr(train.sgd(0.1))


# ----------------------------------------------------------------------------- beyond TF.js


def test_centered_rmsprop_with_a_zero_gradient_stays_finite(backend):
    tfjs = FIXTURE["beyond"]["rmsprop_centered_zero_grad"]["tfjs_value"]
    assert tfjs[1] == "NaN"  # BEYOND_TFJS["rmsprop_centered_zero_grad"]
    z = nf.tidy(lambda: nf.variable(nf.tensor1d([1.0, 2.0])))
    mask = nf.tensor1d([1.0, 0.0])
    opt = train.rmsprop(0.05, 0.9, 0.0, None, True)
    try:
        opt.minimize(lambda: nf.sum(nf.square(nf.mul(z, mask))))
        np.testing.assert_allclose(z.numpy(), [tfjs[0], 2.0], rtol=RTOL)
    finally:
        opt.dispose()
        nf.dispose([z, mask])


def _centered_rmsprop_numpy(lr, decay, momentum, eps, eps_sign, steps=5):
    """Five float64 steps of centered RMSProp on the fixture problem; ``eps_sign`` -1 is TF.js's rule."""
    p = FIXTURE["problem"]
    x, y = np.array(p["x"]), np.array(p["y"])
    params = [np.array(p["w0"]), np.array(p["b0"])]
    state = [[np.zeros_like(v) for v in params] for _ in range(3)]  # ms, mom, mg
    out = []
    for _ in range(steps):
        r = x @ params[0] + params[1] - y
        grads = [2 * x.T @ r / len(x), np.array([2 * r.mean()])]
        for i, g in enumerate(grads):
            ms, mom, mg = (s[i] for s in state)
            ms = decay * ms + (1 - decay) * g * g
            mg = decay * mg + (1 - decay) * g
            mom = momentum * mom + lr * g / np.sqrt(ms - mg * mg + eps_sign * eps)
            params[i] = params[i] - mom
            state[0][i], state[1][i], state[2][i] = ms, mom, mg
        out.append(params[0].copy())
    return np.stack(out)


def test_centered_rmsprop_epsilon_sign(backend):
    """ndflow follows TensorFlow (sqrt(ms - mg^2 + eps)); TF.js's fixture follows sqrt(ms - mg^2 - eps)."""
    case = next(c for c in STEPS if c["id"] == "rmsprop__centered_momentum_epsilon")
    np.testing.assert_allclose(_centered_rmsprop_numpy(*case["args"][:4], -1), _values(case["w"]), rtol=1e-4)
    with problem() as (w, b, f):
        opt = _make(case)
        ws = []
        for _ in range(5):
            opt.minimize(f)
            ws.append(w.numpy())
        opt.dispose()
    np.testing.assert_allclose(np.stack(ws), _centered_rmsprop_numpy(*case["args"][:4], +1), rtol=1e-4, atol=1e-6)


def test_adamax_weights_exist_beyond_tfjs(backend):
    assert "not implemented" in FIXTURE["beyond"]["adamax_get_weights"]["tfjs_error"]
    with problem() as (w, b, f):
        opt = train.adamax(0.1)
        try:
            opt.minimize(f)
            weights = opt.get_weights()
            assert [x["name"] for x in weights] == ["iter", "w/m", "b/m", "w/v", "b/v"]
            nf.dispose([x["tensor"] for x in weights])
        finally:
            opt.dispose()


def test_set_momentum_changes_the_update(backend):
    with problem() as (w, b, f):
        opt = train.momentum(0.1, 0.9)
        try:
            opt.set_momentum(0.0)  # BEYOND_TFJS["set_momentum"]: now plain SGD
            for _ in range(3):
                opt.minimize(f)
            _close(w.numpy(), _values(STEPS[0]["w"])[2], "w")
        finally:
            opt.dispose()


def test_sgd_set_learning_rate(backend):
    with problem() as (w, b, f):
        opt = train.sgd(5.0)
        opt.set_learning_rate(0.1)
        opt.minimize(f)
        _close(w.numpy(), _values(STEPS[0]["w"])[0], "w")


# ----------------------------------------------------------------------------- errors


def test_minimize_of_a_non_scalar_names_the_optimizer(backend):
    with problem() as (w, b, f):
        opt = train.adam(0.1)
        with pytest.raises(ValueError, match=r"AdamOptimizer\.minimize: f must return a scalar, got shape \[3, 1\]"):
            opt.minimize(lambda: nf.mul(w, 2.0))
        assert opt.iterations == 0
        opt.dispose()


def test_minimize_with_no_trainable_variables(backend):
    frozen = nf.tidy(lambda: nf.variable(nf.ones([2]), trainable=False))
    opt = train.sgd(0.1)
    try:
        with pytest.raises(ValueError, match=r"SGDOptimizer\.minimize: there are no trainable variables"):
            opt.minimize(lambda: nf.sum(frozen), var_list=[frozen])
        with pytest.raises(ValueError, match=r"SGDOptimizer\.compute_gradients: there are no trainable"):
            opt.compute_gradients(lambda: nf.sum(frozen), var_list=[frozen])
    finally:
        frozen.dispose()


def test_minimize_of_f_not_using_the_variables(backend):
    with problem() as (w, b, f):
        c = nf.scalar(3.0)
        with pytest.raises(ValueError, match=r"RMSPropOptimizer\.minimize: no variable is connected"):
            train.rmsprop(0.1).minimize(lambda: nf.square(c), var_list=[w, b])
        c.dispose()


def test_disposed_variables_are_named(backend):
    with problem() as (w, b, f):
        gone = nf.tidy(lambda: nf.variable(nf.ones([1]), name="gone"))
        gone.dispose()
        opt = train.momentum(0.1, 0.9)
        with pytest.raises(DisposedTensorError, match=r"MomentumOptimizer\.minimize: variable 'gone' in var_list"):
            opt.minimize(f, var_list=[w, gone])
        with pytest.raises(DisposedTensorError, match=r"MomentumOptimizer\.minimize: f used a disposed"):
            opt.minimize(lambda: nf.add(f(), nf.sum(gone)))
        grad = nf.ones([1])
        with pytest.raises(ValueError, match=r"MomentumOptimizer\.apply_gradients: there is no variable named 'gone'"):
            opt.apply_gradients({"gone": grad})
        grad.dispose()
        assert opt.iterations == 0 and opt._slots == [[]]


def test_apply_gradients_checks_its_arguments(backend):
    with problem() as (w, b, f):
        opt = train.adam(0.1)
        g = nf.ones([2])
        try:
            with pytest.raises(
                ValueError, match=r"AdamOptimizer\.apply_gradients: the gradient of 'w' has shape \[2\]"
            ):
                opt.apply_gradients({"w": g})
            with pytest.raises(TypeError, match=r"gradient of 'w' must be a Tensor, got list"):
                opt.apply_gradients({"w": [1.0, 2.0, 3.0]})
            with pytest.raises(TypeError, match=r"entry 0 must be a dict with 'name' and 'tensor'"):
                opt.apply_gradients([("w", g)])
            with pytest.raises(TypeError, match=r"expected a dict of name -> gradient"):
                opt.apply_gradients(g)
            gw, gb = nf.ones([3, 1]), nf.ones([1])
            opt.apply_gradients({"w": gw, "b": gb})
            # BEYOND_TFJS["slot_shape_check"]: slots are kept by position, as TF.js does
            with pytest.raises(ValueError, match=r"slot 0 \('w/m', shape \[3, 1\]\) does not fit variable 'b'"):
                opt.apply_gradients({"b": gb, "w": gw})
            nf.dispose([gw, gb])
            assert opt.iterations == 1
        finally:
            g.dispose()
            opt.dispose()


def test_set_weights_checks_its_arguments(backend):
    opt = train.adam(0.1)
    it = nf.scalar(1, "int32")
    m = nf.zeros([2])
    try:
        with pytest.raises(ValueError, match=r"AdamOptimizer\.set_weights: expected 2 slot weights per variable"):
            opt.set_weights([{"name": "iter", "tensor": it}, {"name": "w/m", "tensor": m}])
        with pytest.raises(ValueError, match="the list of weights is empty"):
            opt.set_weights([])
        with pytest.raises(TypeError, match="entry 0 must be a dict"):
            opt.set_weights([it])
        with pytest.raises(ValueError, match="the first weight must be the iteration count"):
            opt.set_weights([{"name": "iter", "tensor": m}])
    finally:
        nf.dispose([it, m])


def test_constructor_and_config_errors():
    with pytest.raises(TypeError, match="SGDOptimizer: learning_rate must be a number, got str"):
        train.sgd("0.1")
    with pytest.raises(ValueError, match="RMSPropOptimizer: learning_rate must be defined"):
        train.rmsprop(None)
    with pytest.raises(TypeError, match="AdamOptimizer: beta1 must be a number, got NoneType"):
        train.adam(0.1, None)
    with pytest.raises(TypeError, match="minimize: f must be a function"):
        train.sgd(0.1).minimize(3.0)
    with pytest.raises(TypeError, match="unexpected keyword argument 'nope'"):
        train.SGDOptimizer.from_config({"learningRate": 0.1, "nope": 1})
    with pytest.raises(ValueError, match="unknown optimizer class 'Nadam'"):
        train.deserialize({"className": "Nadam", "config": {}})
