"""Reading file globs, writing Parquet, ``predict_files`` on the local engine and ``ndflow predict-dataset``."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import dense_model, reference

from ndflow.cli import main
from ndflow.distributed._extras import require
from ndflow.distributed.batch_predictor import clear_cache
from ndflow.distributed.dataset_files import chunks, expand_inputs, load_inputs


@pytest.fixture(autouse=True)
def fresh_cache():
    yield
    clear_cache()


def test_expand_inputs(tmp_path):
    for name in ("b.npy", "a.npy", "sub/c.npy"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        np.save(tmp_path / name, np.zeros(3, np.float32))
    assert [p.split("/")[-1] for p in expand_inputs(str(tmp_path / "*.npy"))] == ["a.npy", "b.npy"]
    assert len(expand_inputs(str(tmp_path / "**" / "*.npy"))) == 3
    assert len(expand_inputs(str(tmp_path))) == 2
    with pytest.raises(ValueError, match="matches no file"):
        expand_inputs(str(tmp_path / "*.png"))


def test_load_inputs_checks_shapes_and_scales(tmp_path):
    np.save(tmp_path / "a.npy", np.ones((2, 3), np.float32))
    assert load_inputs([str(tmp_path / "a.npy")], [None, 2, 3]).shape == (1, 2, 3)
    with pytest.raises(ValueError, match="does not fit the input's"):
        load_inputs([str(tmp_path / "a.npy")], [None, 3, 3])
    pytest.importorskip("PIL")
    from PIL import Image

    Image.fromarray(np.full((4, 4, 3), 255, np.uint8)).save(tmp_path / "w.png")
    assert load_inputs([str(tmp_path / "w.png")], [None, 2, 2, 1], scale="-1-1").tolist() == [[[[1.0]] * 2] * 2]
    assert load_inputs([str(tmp_path / "w.png")], [None, 4, 4, 3], "int32").max() == 255
    (tmp_path / "bad.png").write_bytes(b"not an image")
    with pytest.raises(ValueError, match="bad.png: not an image"):
        load_inputs([str(tmp_path / "bad.png")], [None, 4, 4, 3])


def test_chunks_and_missing_extra_message():
    assert [list(c) for c in chunks([1, 2, 3], 2)] == [[1, 2], [3]]
    with pytest.raises(ValueError, match="chunk size"):
        chunks([1], 0)
    with pytest.raises(ImportError, match=r"pip install 'ndflow\[dask\]'"):
        require("dask.not_a_module_here", "a test")


def test_predict_files_local_writes_parquet(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    from ndflow.distributed.engines import predict_files

    model = dense_model(tmp_path / "m")
    x = np.random.default_rng(4).normal(size=(7, 3)).astype(np.float32)
    for i, row in enumerate(x):
        np.save(tmp_path / f"in{i}.npy", row)
    rows = predict_files(model, str(tmp_path / "in*.npy"), tmp_path / "out", batch_size=2)
    table = pq.read_table(tmp_path / "out").sort_by("path")
    assert rows == 7 and table.num_rows == 7
    got = np.stack(table.column(table.column_names[-1]).to_pylist())
    np.testing.assert_allclose(got, reference(model, x), rtol=1e-6)
    with pytest.raises(ValueError, match="engine must be one of"):
        predict_files(model, str(tmp_path / "in*.npy"), tmp_path / "out", engine="spark")


def test_cli_predict_dataset(tmp_path, capsys):
    model = dense_model(tmp_path / "m")
    np.save(tmp_path / "a.npy", np.zeros(3, np.float32))
    assert main(["predict-dataset", str(model), str(tmp_path / "*.png"), str(tmp_path / "o")]) == 2
    assert "INPUT_GLOB" in capsys.readouterr().err
    assert main(["predict-dataset", str(model), str(tmp_path / "a.npy"), str(tmp_path / "o"), "--engine", "x"]) == 2
    try:
        require("pyarrow", "x")
    except ImportError:
        assert main(["predict-dataset", str(model), str(tmp_path / "a.npy"), str(tmp_path / "o")]) == 1
        assert "ndflow[" in capsys.readouterr().err
        return
    assert main(["predict-dataset", str(model), str(tmp_path / "a.npy"), str(tmp_path / "o")]) == 0
    assert "1 rows from 1 files" in capsys.readouterr().out
