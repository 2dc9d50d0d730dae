"""nf.util's Python side: in-place shuffles, typed arrays as numpy, fetch, repeated_try, bad input."""

from __future__ import annotations

import asyncio
import http.server
import threading

import numpy as np
import pytest

import ndflow as nf


def test_shuffle_in_place_list_and_array() -> None:
    items = list(range(20))
    nf.util.shuffle(items)
    assert sorted(items) == list(range(20))
    arr = np.arange(20, dtype=np.float32)
    nf.util.shuffle(arr)
    assert sorted(arr.tolist()) == list(range(20))


def test_shuffle_combo_keeps_pairs() -> None:
    a, b = list(range(30)), [f"v{i}" for i in range(30)]
    nf.util.shuffle_combo(a, b)
    assert all(y == f"v{x}" for x, y in zip(a, b, strict=True))
    assert sorted(a) == list(range(30))
    with pytest.raises(ValueError, match="shuffle_combo: .* got 2 and 3"):
        nf.util.shuffle_combo([1, 2], [1, 2, 3])


def test_small_helpers() -> None:
    x = [1, 2, 3]
    nf.util.swap(x, 0, 2)
    assert x == [3, 2, 1]
    assert 2 <= nf.util.rand_uniform(2, 3) <= 3
    t0 = nf.util.now()
    assert isinstance(t0, float) and nf.util.now() >= t0
    assert nf.util.is_typed_array(np.zeros(2, np.float32)) and nf.util.is_typed_array(np.zeros(2, np.uint8))
    assert not nf.util.is_typed_array([1.0]) and not nf.util.is_typed_array(np.zeros(2, np.float64))
    assert nf.util.is_function(len) and not nf.util.is_function(3)
    assert nf.util.infer_dtype(np.array([1, 2])) == "int32" and nf.util.infer_dtype(np.array([True])) == "bool"
    assert nf.util.infer_dtype(b"ab") == "string"
    assert nf.util.flatten([np.array([[1, 2], [3, 4]]), [5]]) == [1, 2, 3, 4, 5]
    kept = np.zeros(2, np.float32)
    assert nf.util.flatten([kept, [1]], skip_typed_array=True)[0] is kept
    assert nf.util.flatten({"0": 1, "2": 3, "1": [2]}) == [1, 2, 3]
    assert nf.util.decode_string(np.array([104, 105], np.uint8)) == "hi"
    assert nf.util.create_scalar_value("é", "string") == "é".encode()
    assert nf.util.create_scalar_value(2.5, "int32").tolist() == [2]
    assert nf.util.convert_backend_values_and_array_buffer(np.array([1, 2], np.int32).tobytes(), "bool").tolist() == [
        1,
        2,
    ]
    assert nf.util.to_nested_array([2], [1, 2, 3, 4], True) == [1, 2, 3, 4]
    assert nf.util.to_nested_array([2, 1], [1, 2, 3, 4], True) == [[1, 2], [3, 4]]
    assert nf.util.get_array_from_dtype("string", 2) == [None, None]


def test_bad_input_names_the_function() -> None:
    with pytest.raises(TypeError, match="encode_string: argument 's'"):
        nf.util.encode_string(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="decode_string"):
        nf.util.decode_string("text")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bytes_per_element: unknown dtype 'string'"):
        nf.util.bytes_per_element("string")
    with pytest.raises(TypeError, match="flatten: cannot flatten a object"):
        nf.util.flatten([object()])
    with pytest.raises(ValueError, match="hex_to_long"):
        nf.util.hex_to_long("zz")


def test_is_promise_and_repeated_try() -> None:
    async def main() -> int:
        counter = {"n": 0}

        def check() -> bool:
            counter["n"] += 1
            return counter["n"] >= 3

        pending = nf.util.repeated_try(check, lambda n: 1)
        assert nf.util.is_promise(pending)
        await pending
        with pytest.raises(TimeoutError, match="repeated_try: .* 2 tries"):
            await nf.util.repeated_try(lambda: False, max_counter=2)
        return counter["n"]

    assert asyncio.run(main()) == 3
    assert not nf.util.is_promise(3)


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        if self.path == "/missing":
            self.send_response(404)
            self.end_headers()
            self.wfile.write(b"nope")
            return
        body = b'{"a": [1, 2]}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def test_fetch_blocking_and_awaitable() -> None:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{server.server_port}/model.json"
        response = nf.util.fetch(url)
        assert response.ok and response.status == 200 and response.json() == {"a": [1, 2]}
        assert response.array_buffer() == b'{"a": [1, 2]}' and response.text().startswith("{")

        async def main() -> object:
            return (await nf.util.fetch(url)).json()

        assert asyncio.run(main()) == {"a": [1, 2]}
        missing = nf.util.fetch(f"http://127.0.0.1:{server.server_port}/missing")
        assert not missing.ok and missing.status == 404 and missing.text() == "nope"
    finally:
        server.shutdown()
        server.server_close()
    with pytest.raises(ValueError, match="fetch: unsupported request_inits keys \\['cache'\\]"):
        nf.util.fetch("http://127.0.0.1:1/", {"cache": "no-store"})


def test_fetch_file_url(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "x.bin"
    path.write_bytes(b"\x00\x01")
    assert nf.util.fetch(path.as_uri()).array_buffer() == b"\x00\x01"
