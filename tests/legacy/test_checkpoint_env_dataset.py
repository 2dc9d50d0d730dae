"""deeplearn.js 0.x additions: CheckpointLoader, InMemoryDataset, ENV, math.copy2D, math.elementWiseMulBroadcast."""

from __future__ import annotations

import asyncio
import http.server
import json
import threading
from functools import partial

import numpy as np
import pytest

import ndflow as nf
import ndflow.legacy as dl


@pytest.fixture
def math():
    previous = nf.get_backend()
    yield dl.NDArrayMathCPU()
    nf.set_backend(previous)


def _write_checkpoint(folder, variables: dict[str, np.ndarray]) -> None:
    manifest = {}
    for i, (name, values) in enumerate(variables.items()):
        filename = f"var{i}"
        (folder / filename).write_bytes(values.astype("<f4").tobytes())
        manifest[name] = {"filename": filename, "shape": list(values.shape)}
    (folder / "manifest.json").write_text(json.dumps(manifest))


VARIABLES = {
    "conv1/weights": np.arange(24, dtype=np.float32).reshape(2, 3, 4) / 7,
    "conv1/bias": np.array([0.5, -1.25, 3e-8], np.float32),
    "scalar": np.array(2.5, np.float32),
}


def test_checkpoint_loader_local_folder(tmp_path) -> None:
    _write_checkpoint(tmp_path, VARIABLES)
    loader = dl.CheckpointLoader(str(tmp_path))  # no trailing slash: added, as deeplearn.js did
    assert loader.urlPath.endswith("/")

    async def main() -> None:
        manifest = await loader.getCheckpointManifest()
        assert manifest["conv1/bias"] == {"filename": "var1", "shape": [3]}
        variables = await loader.getAllVariables()
        assert list(variables) == list(VARIABLES)
        for name, want in VARIABLES.items():
            got = variables[name]
            assert isinstance(got, dl.NDArray) and got.dtype == "float32" and got.shape == want.shape
            np.testing.assert_array_equal(got.getValues(), want.reshape(-1))
        assert isinstance(variables["conv1/weights"], dl.Array3D)
        assert await loader.getAllVariables() is variables  # cached
        one = await loader.getVariable("conv1/bias")
        assert one is not variables["conv1/bias"]
        nf.dispose([one, *variables.values()])
        with pytest.raises(KeyError, match="non-existent variable 'nope'"):
            await loader.getVariable("nope")

    asyncio.run(main())


def test_checkpoint_loader_errors(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="manifest.json not found at"):
        asyncio.run(dl.CheckpointLoader(tmp_path / "missing").getCheckpointManifest())
    (tmp_path / "manifest.json").write_text(json.dumps({"w": {"filename": "w.bin", "shape": [2, 2]}}))
    (tmp_path / "w.bin").write_bytes(b"\x00" * 12)
    loader = dl.CheckpointLoader(tmp_path)
    with pytest.raises(ValueError, match=r"variable 'w' \(w.bin\) has 12 bytes, expected 16"):
        asyncio.run(loader.getAllVariables())
    (tmp_path / "manifest.json").write_text(json.dumps({"w": {"shape": [2]}}))
    with pytest.raises(ValueError, match="must map each variable name"):
        asyncio.run(dl.CheckpointLoader(tmp_path).getCheckpointManifest())


def test_checkpoint_loader_over_http(tmp_path) -> None:
    _write_checkpoint(tmp_path, VARIABLES)
    handler = partial(_QuietHandler, directory=str(tmp_path))
    server = http.server.HTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        loader = dl.CheckpointLoader(f"http://127.0.0.1:{server.server_port}")
        variables = asyncio.run(loader.getAllVariables())
        np.testing.assert_array_equal(variables["conv1/bias"].getValues(), VARIABLES["conv1/bias"])
        nf.dispose(list(variables.values()))
        with pytest.raises(FileNotFoundError, match="HTTP 404"):
            asyncio.run(dl.CheckpointLoader(f"http://127.0.0.1:{server.server_port}/none/").getCheckpointManifest())
    finally:
        server.shutdown()
        server.server_close()


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


class _Points(dl.InMemoryDataset):
    async def fetchData(self) -> None:
        xs = [[0.0, 10.0], [5.0, 10.0], [10.0, 10.0]]
        self.dataset = [[dl.Array1D.new(x) for x in xs], [dl.Scalar.new(float(i)) for i in range(3)]]


def test_in_memory_dataset_normalization() -> None:
    data = _Points([[2], []])
    assert data.getDataShape(0) == [2] and data.getData() is None
    with pytest.raises(RuntimeError, match="fetchData first"):
        data.getStats()
    asyncio.run(data.fetchData())
    stats = data.getStats()
    assert stats[0]["exampleCount"] == 3 and stats[0]["shape"] == [2]
    assert 0 <= stats[0]["inputMin"] and stats[0]["inputMax"] <= 10
    data.normalizeWithinBounds(0, -1, 1)
    got = [e.getValues().tolist() for e in data.getData()[0]]
    assert got == [[-1.0, -1.0], [0.0, -1.0], [1.0, -1.0]]  # a constant dimension goes to the lower bound
    data.normalizeWithinBounds(0, 0, 2)  # from the previous range
    assert [e.getValues().tolist() for e in data.getData()[0]] == [[0.0, 0.0], [1.0, 0.0], [2.0, 0.0]]
    normalized = [dl.Array1D.new([1.0, 0.0])]
    back = data.unnormalizeExamples(normalized, 0)
    assert back[0].getValues().tolist() == [5.0, 10.0]
    nf.dispose([back, normalized])
    data.removeNormalization(0)
    assert [e.getValues().tolist() for e in data.getData()[0]] == [[0.0, 10.0], [5.0, 10.0], [10.0, 10.0]]
    plain = [dl.Scalar.new(1.0)]
    assert data.unnormalizeExamples(plain, 1) is plain
    nf.dispose(plain)
    with pytest.raises(IndexError, match="dataIndex 5 out of bounds"):
        data.normalizeWithinBounds(5, 0, 1)
    data.dispose()
    assert data.getData() == []
    with pytest.raises(NotImplementedError, match="fetchData"):
        asyncio.run(dl.InMemoryDataset([[1]]).fetchData())


def test_env() -> None:
    env = dl.Environment()
    assert env.get("WEBGL_VERSION") == 0 and env.get("WEBGL_FLOAT_TEXTURE_ENABLED") is False
    assert env.get("DEBUG") is False  # an ndflow flag
    with pytest.raises(ValueError, match="ENV.get: unknown feature 'NOPE'"):
        env.get("NOPE")
    env.setFeatures({"WEBGL_VERSION": 2})
    assert env.get("WEBGL_VERSION") == 2
    env.reset()
    assert env.get("WEBGL_VERSION") == 0
    assert isinstance(dl.ENV.math, dl.NDArrayMath) and dl.ENV.math is dl.ENV.math
    mine = dl.NDArrayMathCPU()
    env.setMath(mine)
    assert env.math is mine
    with pytest.raises(TypeError, match="ENV.setMath: expected an NDArrayMath"):
        env.setMath("cpu")  # type: ignore[arg-type]
    assert env.getBackend("cpu") is nf.find_backend("cpu")
    a = dl.ENV.math.scope(lambda: dl.ENV.math.add(dl.Scalar.new(1), dl.Scalar.new(2)))
    assert a.get() == 3
    a.dispose()


def _copy2d_reference(src, sb, ss, dst, db, ds):  # deeplearn.js 0.x's cpu copy2DInternal, element by element
    out = dst.copy()
    for i in range(ss[0] * ss[1]):
        s_row, s_col = sb[0] + i // ss[1], sb[1] + i % ss[1]
        d_row, d_col = db[0] + i // ds[1], db[1] + i % ds[1]
        out[d_row, d_col] = src[s_row, s_col]
    return out


@pytest.mark.parametrize(
    ("sb", "ss", "db", "ds"),
    [([0, 0], [2, 3], [0, 0], [2, 3]), ([1, 1], [2, 2], [0, 1], [1, 4]), ([0, 2], [3, 1], [2, 0], [1, 3])],
)
def test_copy2d(math, sb, ss, db, ds) -> None:
    src = np.arange(12, dtype=np.float32).reshape(3, 4)
    dst = -np.ones((3, 5), np.float32)
    source, dest = dl.Array2D.new([3, 4], src), dl.Array2D.new([3, 5], dst)
    alias = dest
    assert math.copy2D(source, sb, ss, dest, db, ds) is None
    np.testing.assert_array_equal(alias.getValues().reshape(3, 5), _copy2d_reference(src, sb, ss, dst, db, ds))
    nf.dispose([source, dest])


def test_copy2d_errors(math) -> None:
    source, dest = dl.Array2D.new([2, 2], [1, 2, 3, 4]), dl.Array2D.new([2, 2], [0, 0, 0, 0])
    with pytest.raises(ValueError, match="would overflow source NDArray of shape \\[2, 2\\]"):
        math.copy2D(source, [1, 1], [2, 2], dest, [0, 0], [2, 2])
    with pytest.raises(ValueError, match="would overflow dest NDArray"):
        math.copy2D(source, [0, 0], [2, 2], dest, [1, 0], [2, 2])
    with pytest.raises(ValueError, match="copy2D shapes have different areas"):
        math.copy2D(source, [0, 0], [2, 2], dest, [0, 0], [1, 2])
    vector = dl.Array1D.new([1, 2])
    with pytest.raises(ValueError, match="Error in copy2D: source argument must be rank 2, but got rank 1"):
        math.copy2D(vector, [0, 0], [1, 1], dest, [0, 0], [1, 1])
    assert dest.getValues().tolist() == [0, 0, 0, 0]
    nf.dispose([source, dest, vector])


def test_element_wise_mul_broadcast(math) -> None:
    a, b = dl.Array2D.new([2, 3], [1, 2, 3, 4, 5, 6]), dl.Array2D.new([1, 3], [1, 10, 100])
    out = math.elementWiseMulBroadcast(a, b)
    assert isinstance(out, dl.Array2D)
    assert out.getValues().tolist() == [1, 20, 300, 4, 50, 600]
    vector = dl.Array1D.new([1, 2, 3])
    with pytest.raises(ValueError, match="second argument must be rank 2, but got rank 1"):
        math.elementWiseMulBroadcast(a, vector)
    nf.dispose([a, b, out, vector])
