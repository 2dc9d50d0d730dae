"""DataParallel without a second process: the sharding and shuffling logic, the averaging arithmetic (a stand-in
for the all-reduce), checkpoints and resume, a one-process gloo group, and the arguments' errors."""

from __future__ import annotations

import json
import socket

import numpy as np
import pytest

import ndflow as nf
from ndflow.distributed.checkpoints import latest_checkpoint
from ndflow.distributed.data_parallel import DataParallel


def _model(seed: int = 5):
    model = nf.sequential(
        layers=[
            nf.layers.dense(units=5, activation="relu", input_shape=[4]),
            nf.layers.dense(units=3, activation="softmax"),
        ]
    )
    model.compile(optimizer=nf.train.adam(0.02), loss="categoricalCrossentropy", metrics=["accuracy"])
    rng = np.random.default_rng(seed)
    current = model.get_weights()
    model.set_weights([rng.normal(0, 0.4, t.shape).astype(np.float32) for t in current])
    nf.dispose(current)
    return model


def _dispose(*models) -> None:
    for m in models:
        m.optimizer.dispose()  # an optimizer object given to compile is the caller's
        m.dispose()


def _data():
    rng = np.random.default_rng(9)
    return rng.normal(size=(40, 4)).astype(np.float32), np.eye(3, dtype=np.float32)[rng.integers(0, 3, 40)]


def _weights(model) -> list[np.ndarray]:
    ws = model.get_weights()
    out = [np.asarray(w.numpy()) for w in ws]
    nf.dispose(ws)
    return out


def test_local_indices_split_each_global_batch():
    idx = np.arange(10)
    parts = [DataParallel(rank=r, world_size=3).local_indices(idx) for r in range(3)]
    assert [p.tolist() for p in parts] == [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    tiny = [DataParallel(rank=r, world_size=3).local_indices(np.arange(2)) for r in range(3)]
    assert [len(p) for p in tiny] == [1, 1, 0]


def test_every_rank_draws_the_same_permutation_per_epoch():
    a, b = DataParallel(rank=0, world_size=2, seed=4), DataParallel(rank=1, world_size=2, seed=4)
    assert a.epoch_rng(3).permutation(50).tolist() == b.epoch_rng(3).permutation(50).tolist()
    assert a.epoch_rng(3).permutation(50).tolist() != a.epoch_rng(4).permutation(50).tolist()


def test_shard_datasets_and_lists():
    dp = DataParallel(rank=1, world_size=3)
    assert dp.shard(list(range(8))) == [1, 4, 7]
    ds = dp.shard(nf.data.array(list(range(8))))
    assert ds.to_array() == [1, 4, 7] and ds.size == 3
    with pytest.raises(TypeError, match="nf.data.Dataset"):
        dp.shard(iter(range(3)))


class _TwoRanks(DataParallel):
    """Rank 0 of two, whose all-reduce adds ``other`` (what rank 1 would contribute)."""

    def __init__(self, other):
        super().__init__(rank=0, world_size=2)
        self._dist = object()
        self.other = other
        self.sent = None

    def _all_reduce(self, buffer, op="sum"):
        self.sent = buffer
        return buffer + self.other(buffer)


def test_reduce_is_the_batch_size_weighted_mean():
    v = nf.variable([[0.0, 0.0], [0.0, 0.0]], name="dp_w")
    g = {v.name: nf.tensor([[1.0, 2.0], [3.0, 4.0]])}
    loss, metric = nf.scalar(2.0), nf.scalar(0.5)
    # rank 1 had 3 samples, gradient all 8, loss 4, metric 1
    dp = _TwoRanks(lambda buf: np.concatenate([np.full(4, 8.0 * 3), [1.0], [4.0 * 3, 1.0 * 3, 3.0]]))
    new_loss, new_grads, new_metrics = dp.reduce(loss, g, [metric], 1, [v])
    np.testing.assert_allclose(new_grads[v.name].numpy(), (np.array([[1, 2], [3, 4]]) + 24) / 4)
    assert new_loss.numpy() == pytest.approx((2 + 12) / 4) and new_metrics[0].numpy() == pytest.approx(3.5 / 4)
    assert loss.is_disposed and g[v.name].is_disposed
    # a rank without samples contributes zeros; a gradient absent on every rank stays absent
    empty = _TwoRanks(lambda buf: np.zeros_like(buf))
    zero_loss, none_grads, zero_metrics = empty.reduce(None, None, [None], 0, [v])
    assert empty.sent.sum() == 0 and none_grads == {}
    nf.dispose([new_loss, *new_grads.values(), *new_metrics, v, zero_loss, *zero_metrics])


def test_one_process_fit_equals_plain_fit_without_torch():
    x, y = _data()
    plain, parallel = _model(), _model()
    plain.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0)
    dp = DataParallel()
    parallel.fit(x, y, batch_size=8, epochs=2, shuffle=False, verbose=0, distribution=dp)
    assert dp.connect() is None or dp.world_size == 1
    for a, b in zip(_weights(plain), _weights(parallel), strict=True):
        np.testing.assert_array_equal(a, b)
    _dispose(plain, parallel)


def test_checkpoints_and_resume(tmp_path):
    x, y = _data()
    straight = _model()
    straight.fit(x, y, batch_size=8, epochs=3, shuffle=True, verbose=0, distribution=DataParallel(seed=3))
    first = _model()
    first.fit(x, y, batch_size=8, epochs=2, verbose=0, distribution=DataParallel(checkpoint_dir=tmp_path, seed=3))
    info = latest_checkpoint(str(tmp_path))
    assert info["epoch"] == 2 and info["seed"] == 3 and info["path"].endswith("epoch-00002")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-00001", "epoch-00002", "latest.json"]
    assert json.loads((tmp_path / "latest.json").read_text())["path"] == "epoch-00002"
    again = _model(seed=99)  # other initial weights: the checkpoint replaces them, with Adam's state
    dp = DataParallel(checkpoint_dir=tmp_path)
    h = again.fit(x, y, batch_size=8, epochs=3, verbose=0, distribution=dp)
    assert dp.resumed_from.endswith("epoch-00002") and len(h.history["loss"]) == 1 and dp.seed == 3
    for a, b in zip(_weights(straight), _weights(again), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    assert latest_checkpoint(str(tmp_path))["epoch"] == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["epoch-00002", "epoch-00003", "latest.json"]
    _dispose(straight, first, again)


def test_fit_dataset_with_one_process_and_a_gloo_group():
    pytest.importorskip("torch.distributed")
    x, y = _data()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    plain, parallel = _model(), _model()
    plain.fit_dataset(nf.data.from_numpy(x, y).batch(8), epochs=2, verbose=0)
    dp = DataParallel(init_method=f"tcp://127.0.0.1:{port}", rank=0, world_size=1)
    try:
        parallel.fit_dataset(nf.data.from_numpy(x, y).batch(8), epochs=2, verbose=0, distribution=dp)
        assert dp.connect() is not None and dp.world_size == 1
    finally:
        dp.close()
    for a, b in zip(_weights(plain), _weights(parallel), strict=True):
        np.testing.assert_array_equal(a, b)
    _dispose(plain, parallel)


def test_arguments_are_checked(monkeypatch):
    with pytest.raises(ValueError, match="backend must be"):
        DataParallel("tcp")
    with pytest.raises(ValueError, match="rank must be < world_size"):
        DataParallel(rank=2, world_size=2)
    with pytest.raises(ValueError, match="world_size must be an integer >= 1"):
        DataParallel(world_size=0)
    with pytest.raises(ValueError, match="seed must be"):
        DataParallel(seed=-1)
    monkeypatch.setenv("WORLD_SIZE", "two")
    with pytest.raises(ValueError, match="WORLD_SIZE must be an integer"):
        DataParallel()
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")
    monkeypatch.delenv("MASTER_ADDR", raising=False)
    dp = DataParallel()
    assert (dp.rank, dp.world_size) == (1, 2)
    pytest.importorskip("torch.distributed")
    with pytest.raises(RuntimeError, match="MASTER_ADDR.*torchrun"):
        dp.connect()
