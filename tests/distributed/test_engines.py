"""Batch inference on local Ray and Dask clusters: the predictor in Ray Data's map_batches and Dask's map_blocks /
map_partitions, ``predict_files`` on both engines, and a worker killed mid-job (the engine retries its task)."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest
from helpers import dense_model, reference

from ndflow.distributed.batch_predictor import Predictor, clear_cache, predictor

pytestmark = pytest.mark.distributed


@pytest.fixture(autouse=True)
def fresh_cache():
    yield
    clear_cache()


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("engines")
    model = dense_model(folder / "model")
    x = np.random.default_rng(5).normal(size=(24, 3)).astype(np.float32)
    for i, row in enumerate(x):
        np.save(folder / f"in{i:02d}.npy", row)
    return folder, model, x


class _DiesOnce(Predictor):
    """A predictor whose process exits on its first batch if the marker file is absent (then writes it)."""

    def __call__(self, batch):
        marker = self.config["load_options"]["marker"]
        if not os.path.exists(marker):
            open(marker, "w").close()
            os._exit(1)
        return super().__call__(batch)


def _parquet(folder) -> tuple[np.ndarray, list[str]]:
    pq = pytest.importorskip("pyarrow.parquet")
    table = pq.read_table(folder).sort_by("path")
    return np.stack(table.column(table.column_names[-1]).to_pylist()), table.column("path").to_pylist()


# -- Ray ------------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def ray_cluster():
    ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'ndflow[ray]')")
    pytest.importorskip("ray.data")
    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": os.pathsep.join(sys.path)}})  # fmt: skip
    yield ray
    ray.shutdown()


def test_ray_map_batches(ray_cluster, files):
    import ndflow.distributed as nfd

    _, model, x = files
    ds = ray_cluster.data.from_items([{"x": row, "i": i} for i, row in enumerate(x)])
    out = nfd.map_batches(ds, str(model), workers=2, batch_size=5, input_columns="x", output_columns=["y"])
    rows = sorted(out.take_all(), key=lambda r: r["i"])
    np.testing.assert_allclose(np.stack([r["y"] for r in rows]), reference(model, x), rtol=1e-6)


def test_ray_predict_files(ray_cluster, files, tmp_path):
    from ndflow.distributed.engines import predict_files

    folder, model, x = files
    n = predict_files(model, str(folder / "in*.npy"), tmp_path / "out", engine="ray", workers=2, batch_size=4)
    got, paths = _parquet(tmp_path / "out")
    assert n == 24 and len(paths) == 24
    np.testing.assert_allclose(got, reference(model, x), rtol=1e-6)


def test_ray_retries_a_killed_worker(ray_cluster, files, tmp_path):
    _, model, x = files
    marker = str(tmp_path / "died")
    ds = ray_cluster.data.from_items([{"x": row, "i": i} for i, row in enumerate(x)], override_num_blocks=4)
    out = ds.map_batches(_DiesOnce, fn_constructor_kwargs={"model": str(model), "input_columns": "x",
                         "output_columns": ["y"], "load_options": {"marker": marker}}, batch_size=6,
                         batch_format="numpy", compute=ray_cluster.data.ActorPoolStrategy(size=2))  # fmt: skip
    rows = sorted(out.take_all(), key=lambda r: r["i"])
    assert os.path.exists(marker) and len(rows) == 24
    np.testing.assert_allclose(np.stack([r["y"] for r in rows]), reference(model, x), rtol=1e-6)


# -- Dask -----------------------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def dask_client():
    pytest.importorskip("dask.array", reason="Dask is not installed (pip install 'ndflow[dask]')")
    distributed = pytest.importorskip("distributed")
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


def test_dask_map_blocks_and_partitions(dask_client, files):
    import dask.array as da
    import dask.bag as db
    import dask.dataframe as dd
    import pandas as pd

    import ndflow.distributed as nfd

    _, model, x = files
    want = reference(model, x)
    got = nfd.map_blocks(da.from_array(x, chunks=(5, 3)), str(model)).compute()
    np.testing.assert_allclose(got, want, rtol=1e-6)
    p = predictor(str(model), input_columns="x", output_columns=["y"])
    bag = db.from_sequence([{"x": row, "i": i} for i, row in enumerate(x)], npartitions=3)
    records = sorted(nfd.map_partitions(bag, p).compute(), key=lambda r: r["i"])
    np.testing.assert_allclose(np.stack([r["y"] for r in records]), want, rtol=1e-6)
    import dask

    with dask.config.set({"dataframe.convert-string": False}):  # else Dask turns the column of arrays into text
        frame = dd.from_pandas(pd.DataFrame({"x": list(x), "i": range(24)}), npartitions=3)
        df = nfd.map_partitions(frame, p).compute().sort_values("i")
    np.testing.assert_allclose(np.stack(df["y"].to_list()), want, rtol=1e-6)


def test_dask_predict_files(dask_client, files, tmp_path):
    from ndflow.distributed.engines import predict_files

    folder, model, x = files
    address = dask_client.scheduler.address
    n = predict_files(model, str(folder / "in*.npy"), tmp_path / "out", engine="dask", batch_size=2,
                      address=address)  # fmt: skip
    got, _ = _parquet(tmp_path / "out")
    assert n == 24
    np.testing.assert_allclose(got, reference(model, x), rtol=1e-6)


def test_dask_retries_a_killed_worker(dask_client, files, tmp_path):
    import dask

    from ndflow.distributed.dataset_files import chunks, predict_part

    folder, model, x = files
    marker = str(tmp_path / "died")
    p = _DiesOnce(str(model), eager=False, load_options={"marker": marker})
    paths = sorted(str(f) for f in folder.glob("in*.npy"))
    tasks = [
        dask.delayed(predict_part)(p, part, str(tmp_path / "out"), i, 4) for i, part in enumerate(chunks(paths, 8))
    ]
    with dask.config.set({"distributed.scheduler.allowed-failures": 3}):
        assert sum(dask_client.compute(tasks, sync=True)) == 24
    got, _ = _parquet(tmp_path / "out")
    assert os.path.exists(marker)
    np.testing.assert_allclose(got, reference(model, x), rtol=1e-6)
