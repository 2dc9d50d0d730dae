"""The graph API and ``Session``: shapes, eval with every kind of feed, training, and cleanup."""

from __future__ import annotations

import numpy as np
import pytest

import ndflow as nf
import ndflow.legacy as dl


@pytest.fixture
def math():
    previous = nf.get_backend()
    yield dl.NDArrayMathCPU()
    nf.set_backend(previous)


def _intro_graph(seed=0):
    g = dl.Graph()
    x = g.placeholder("input", [3])
    y = g.placeholder("label", [1])
    w = g.variable("multiplier", dl.Array2D.randNormal([1, 3], seed=seed))
    out = g.matmul(w, x)
    cost = g.meanSquaredCost(y, out)
    return g, x, y, w, out, cost


def _examples():
    inputs = [[1.0, 2.0, 3.0], [10.0, 20.0, 30.0], [100.0, 200.0, 300.0]]
    labels = [[4.0], [40.0], [400.0]]
    return inputs, labels


def test_symbolic_shapes():
    g = dl.Graph()
    m, v = g.placeholder("m", [2, 3]), g.placeholder("v", [3])
    r = g.placeholder("r", [2])
    assert g.matmul(m, v).shape == [2]
    assert g.matmul(r, m).shape == [3]
    assert g.matmul(v, v).shape == [1]
    assert g.add(m, v).shape == [2, 3] and g.add(g.constant(1), v).shape == [3]
    assert g.reduceSum(m).shape == [] and g.meanSquaredCost(v, v).shape == []
    assert g.concat2d(m, m, 1).shape == [2, 6] and g.concat1d(v, v).shape == [6]
    assert g.reshape(m, [3, 2]).shape == [3, 2] and g.argmax(v).shape == [1]
    img = g.placeholder("img", [8, 8, 3])
    assert g.maxPool(img, 2, 2, 0).shape == [4, 4, 3]
    wc, bc = g.placeholder("w", [3, 3, 3, 5]), g.placeholder("b", [5])
    assert g.conv2d(img, wc, bc, 3, 5).shape == [8, 8, 5]  # deeplearn.js's default pad keeps the size
    assert len(g.getNodes()) >= 10 and isinstance(g.getNodes()[0], dl.PlaceholderNode)


def test_validation_errors():
    g = dl.Graph()
    m, v = g.placeholder("m", [2, 3]), g.placeholder("v", [2])
    with pytest.raises(ValueError, match="Error adding MatMul op: inner dimensions"):
        g.matmul(m, v)
    with pytest.raises(ValueError, match="Error adding Subtract op"):
        g.subtract(m, v)
    with pytest.raises(ValueError, match="Error adding Reshape op"):
        g.reshape(m, [5])
    with pytest.raises(ValueError, match="Mean Squared Cost"):
        g.meanSquaredCost(m, v)
    with pytest.raises(ValueError, match="Softmax op: the input must be a vector"):
        g.softmax(m)
    with pytest.raises(TypeError, match="must be an NDArray"):
        g.variable("w", [1, 2])


def test_eval_with_arrays_dicts_numpy_and_providers(math):
    g, x, y, w, out, cost = _intro_graph()
    session = dl.Session(g, math)
    weights = w.node.data.getValues().copy()
    test_input = dl.Array1D.new([0.1, 0.2, 0.3])
    builder = dl.InCPUMemoryShuffledInputProviderBuilder([[[1.0, 1.0, 1.0]]])
    (provider,) = builder.getInputProviders()
    before = nf.memory().num_tensors
    try:
        results = [
            session.eval(out, [dl.FeedEntry(x, test_input)]),
            session.eval(out, [{"tensor": x, "data": test_input}]),
            session.eval(out, [{"tensor": x, "data": np.array([0.1, 0.2, 0.3])}]),
            session.eval(out, [{"tensor": x, "data": provider}]),
        ]
        assert [type(r) for r in results] == [dl.Array1D] * 4 and results[0].shape == (1,)
        expected = float(weights @ [0.1, 0.2, 0.3])
        assert [r.get(0) for r in results[:3]] == pytest.approx([expected] * 3, rel=1e-5)
        assert results[3].get(0) == pytest.approx(weights.sum(), rel=1e-5)
        # 4 results, and the variable the session made of the graph's data (which it replaced)
        assert nf.memory().num_tensors == before + 4
        label = dl.Array1D.new([0.0])
        both = session.evalAll([out, cost], [dl.FeedEntry(x, test_input), dl.FeedEntry(y, label)])
        label.dispose()
        results += both
        # against the float32 output itself: the output is a 3-term dot product whose cancellation can cost it 1e-5
        # relative to a float64 reference, and squaring doubles that
        assert both[1].get() == pytest.approx(0.5 * results[0].get(0) ** 2, rel=1e-5)
    finally:
        nf.dispose([results, test_input])
        session.dispose()
    assert nf.memory().num_tensors == before - 2  # test_input, and the variable gone with the session


def test_eval_hands_out_new_arrays(math):
    g, x, y, w, out, cost = _intro_graph()
    session = dl.Session(g, math)
    fed = dl.Array1D.new([1, 2, 3])
    try:
        value = session.eval(w)
        value.dispose()  # a copy: the variable survives
        again = session.eval(w)
        assert again.shape == (1, 3)
        echoed = session.eval(x, [dl.FeedEntry(x, fed)])
        assert echoed is not fed and echoed.getValues().tolist() == [1, 2, 3]
        nf.dispose([again, echoed])
    finally:
        fed.dispose()
        session.dispose()


def test_eval_errors(math):
    g, x, y, w, out, cost = _intro_graph()
    session = dl.Session(g, math)
    wrong = dl.Array1D.new([1, 2])
    try:
        with pytest.raises(ValueError, match='Placeholder node "input" \\[3\\] not present'):
            session.eval(out)
        with pytest.raises(ValueError, match="feeding NDArray of shape \\[2\\] does not match"):
            session.eval(out, [dl.FeedEntry(x, wrong)])
        with pytest.raises(TypeError, match="'tensor' and 'data'"):
            session.eval(out, [{"tensor": x}])
        with pytest.raises(ValueError, match="not a tensor of this session's graph"):
            session.eval(dl.Graph().placeholder("p", [1]))
        with pytest.raises(TypeError, match="input providers, not arrays"):
            session.train(cost, [dl.FeedEntry(x, wrong)], 1, dl.SGDOptimizer(0.1))
        with pytest.raises(ValueError, match="must be a scalar"):
            session.train(out, [], 1, dl.SGDOptimizer(0.1))
    finally:
        wrong.dispose()
        session.dispose()
        g.dispose()


def test_training_lowers_the_cost_and_leaks_nothing(math):
    g, x, y, w, out, cost = _intro_graph(seed=1)
    inputs, labels = _examples()
    builder = dl.InCPUMemoryShuffledInputProviderBuilder([inputs, labels], seed=0)
    xp, yp = builder.getInputProviders()
    feeds = [{"tensor": x, "data": xp}, dl.FeedEntry(y, yp)]
    session, optimizer = dl.Session(g, math), dl.SGDOptimizer(0.00001)
    costs = []
    math.scope(lambda: costs.append(session.train(cost, feeds, 3, optimizer, dl.CostReduction.MEAN).get()))
    steady = nf.memory().num_tensors
    for _ in range(9):
        math.scope(lambda: costs.append(session.train(cost, feeds, 3, optimizer, dl.CostReduction.MEAN).get()))
    assert nf.memory().num_tensors == steady
    assert costs[-1] < 1e-2 * costs[0]
    prediction = math.scope(lambda: session.eval(out, [dl.FeedEntry(x, dl.Array1D.new([0.1, 0.2, 0.3]))]).get(0))
    assert prediction == pytest.approx(0.4, abs=0.05)
    assert builder.getEpoch() == 10
    session.dispose()
    assert not nf.engine().variables and w.node.data.is_disposed
    with pytest.raises(RuntimeError, match="variable 'multiplier' is disposed"):
        session.eval(out, [dl.FeedEntry(x, np.zeros(3))])


def test_sgd_step_is_deeplearns_batch_update(math):
    """deeplearn.js: w += -lr / batchSize * sum of per-example gradients; the cost is reduced as asked."""
    g, x, y, w, out, cost = _intro_graph(seed=3)
    w0 = w.node.data.numpy().reshape(-1).astype(np.float64)
    inputs, labels = _examples()
    builder = dl.InCPUMemoryShuffledInputProviderBuilder([inputs, labels])
    xp, yp = builder.getInputProviders()
    feeds = [dl.FeedEntry(x, xp), dl.FeedEntry(y, yp)]
    session, lr = dl.Session(g, math), 1e-5
    total = math.scope(lambda: session.train(cost, feeds, 3, dl.SGDOptimizer(lr), dl.CostReduction.SUM).get())
    X, Y = np.array(inputs), np.array(labels)[:, 0]
    residual = X @ w0 - Y  # d/dw of 0.5 * (y - w.x)^2 is (w.x - y) x
    expected_w = w0 - lr / 3 * (residual[:, None] * X).sum(0)
    assert total == pytest.approx((0.5 * residual**2).sum(), rel=1e-4)
    np.testing.assert_allclose(w.node.data.getValues(), expected_w, rtol=1e-4)
    none = math.scope(lambda: session.train(cost, feeds, 3, dl.SGDOptimizer(lr)).get())
    assert none == 0.0  # CostReduction.NONE returns a zero, as deeplearn.js did
    session.dispose()


def test_specified_variable_list_trains_only_those(math):
    g = dl.Graph()
    x = g.placeholder("x", [2])
    a = g.variable("a", dl.Array1D.new([1, 1]))
    b = g.variable("b", dl.Array1D.new([1, 1]))
    cost = g.reduceSum(g.square(g.add(g.multiply(a, x), b)))
    builder = dl.InGPUMemoryShuffledInputProviderBuilder([np.array([[1.0, 2.0]])])
    (xp,) = builder.getInputProviders()
    session = dl.Session(g, math)
    optimizer = dl.MomentumOptimizer(0.01, 0.9, [b.node])
    math.scope(lambda: session.train(cost, [dl.FeedEntry(x, xp)], 1, optimizer).dispose())
    assert a.node.data.getValues().tolist() == [1, 1]
    assert b.node.data.getValues().tolist() != [1, 1]
    assert len(nf.engine().variables) == 3  # a, b and b's momentum slot
    session.dispose()
    builder.dispose()
    assert not nf.engine().variables  # variables and the optimizer's slot are released


def test_classifier_with_dense_layers_learns(math):
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 4)).astype(np.float32)
    Y = np.eye(3, dtype=np.float32)[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0)]
    g = dl.Graph()
    x, y = g.placeholder("x", [4]), g.placeholder("y", [3])
    hidden = g.layers.dense("hidden", x, 8, g.relu)
    logits = g.layers.dense("out", hidden, 3)
    cost = g.softmaxCrossEntropyCost(logits, y)
    correct = g.argmaxEquals(logits, y)
    builder = dl.InCPUMemoryShuffledInputProviderBuilder([X, Y], seed=1)
    xp, yp = builder.getInputProviders()
    session, optimizer = dl.Session(g, math), dl.AdamOptimizer(0.05, 0.9, 0.999)
    feeds = [dl.FeedEntry(x, xp), dl.FeedEntry(y, yp)]
    first = math.scope(lambda: session.train(cost, feeds, 10, optimizer, dl.CostReduction.MEAN).get())
    for _ in range(30):
        last = math.scope(lambda: session.train(cost, feeds, 10, optimizer, dl.CostReduction.MEAN).get())
    accuracy = np.mean(
        [math.scope(lambda i=i: session.eval(correct, [{"tensor": x, "data": X[i]}, {"tensor": y, "data": Y[i]}]).get())
         for i in range(len(X))]
    )  # fmt: skip
    assert last < first and accuracy > 0.8
    probs = math.scope(lambda: session.eval(g.softmax(logits), [dl.FeedEntry(x, X[0])]).getValues().tolist())
    assert sum(probs) == pytest.approx(1, abs=1e-5)
    session.dispose()


def test_constants_and_other_ops(math):
    g = dl.Graph()
    x = g.placeholder("x", [2])
    given = dl.Array1D.new([10, 20])
    nodes = [
        g.add(x, g.constant(1)),
        g.multiply(g.constant([2, 3]), x),
        g.divide(x, g.constant(given)),
        g.fusedLinearCombination(x, x, g.constant(2), g.constant(-1)),
        g.exp(g.log(x)),
        g.concat1d(x, x),
        g.argmax(x),
        g.sigmoid(g.tanh(g.elu(g.leakyRelu(x, 0.1)))),
        g.prelu(x, g.constant([0.5, 0.5])),
    ]
    session = dl.Session(g, math)
    try:
        values = math.scope(
            lambda: [v.getValues().tolist() for v in session.evalAll(nodes, [dl.FeedEntry(x, np.array([1.0, 4.0]))])]
        )
        np.testing.assert_allclose(values[:5], [[2, 5], [2, 12], [0.1, 0.2], [1, 4], [1, 4]], rtol=1e-5)
        assert values[5] == [1, 4, 1, 4] and values[6] == [1]
        assert given.getValues().tolist() == [10, 20]  # an NDArray constant stays the caller's
    finally:
        session.dispose()
        given.dispose()


def test_safe_mode_covers_the_session():
    previous = nf.get_backend()
    safe = dl.NDArrayMathCPU(safeMode=True)
    g, x, y, w, out, cost = _intro_graph()
    session = dl.Session(g, safe)
    try:
        with pytest.raises(RuntimeError, match="Session.eval: safe mode is ON"):
            session.eval(out, [dl.FeedEntry(x, np.zeros(3))])
        assert safe.scope(lambda: session.eval(out, [dl.FeedEntry(x, np.zeros(3))]).get(0)) == 0.0
    finally:
        session.dispose()
        nf.set_backend(previous)


def test_graph_dispose_frees_untrained_variables():
    before = nf.memory().num_tensors
    g, *_ = _intro_graph()
    assert nf.memory().num_tensors == before + 1
    g.dispose()
    assert nf.memory().num_tensors == before


def test_session_trains_on_every_backend(backend):
    """Without a math object the session runs on the active backend (here: each available one)."""
    g, x, y, w, out, cost = _intro_graph(seed=2)
    inputs, labels = _examples()
    builder = dl.InGPUMemoryShuffledInputProviderBuilder([inputs, labels], seed=0)  # tensors on `backend`
    xp, yp = builder.getInputProviders()
    session, optimizer = dl.Session(g), dl.SGDOptimizer(0.00001)
    feeds = [dl.FeedEntry(x, xp), dl.FeedEntry(y, yp)]
    costs = [nf.tidy(lambda: session.train(cost, feeds, 3, optimizer, dl.CostReduction.MEAN).get()) for _ in range(5)]
    assert costs[-1] < costs[0] and w.node.data.backend_name == backend
    session.dispose()
    builder.dispose()
