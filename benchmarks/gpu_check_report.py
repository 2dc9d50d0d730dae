"""Step 4 (the goals) and the Markdown report of ``benchmarks/gpu_check.py``."""

from __future__ import annotations

from typing import Any

from gpu_check_common import GPU_LABELS, fmt

MATMUL_GOALS = {"torch-cuda": 70.0, "webgpu": 30.0}


def _result(report: dict, step: str) -> dict:
    entry = report["steps"].get(step) or {}
    return entry.get("result") or {}


def _goal(goal: str, status: str, evidence: str) -> dict[str, str]:
    return {"goal": goal, "status": status, "evidence": evidence}


def goals(report: dict[str, Any]) -> list[dict[str, str]]:
    """The issue's goals: met / not met / not measured, each with the figures behind it."""
    timing, conf = _result(report, "timings"), _result(report, "conformance")
    out = []
    for label, target in MATMUL_GOALS.items():
        name = f"{label} matmul >= {target:.0f}% of fp32 peak" + (" (TF32 off)" if label == "torch-cuda" else "")
        best = None
        for row in timing.get("matmul", []) if isinstance(timing.get("matmul"), list) else []:
            r = row.get("by_backend", {}).get(label)
            if r and r.get("pct_peak") is not None and (best is None or r["pct_peak"] > best[1]):
                best = (row["n"], r["pct_peak"])
        if best is None:
            out.append(_goal(name, "not measured", report["absent"].get(label) or "no matmul figure or no fp32 peak"))
        else:
            tf32 = f", TORCH_TF32={timing.get('torch_tf32')}" if label == "torch-cuda" else ""
            out.append(_goal(name, "met" if best[1] >= target else "not met", f"{best[1]:.1f}% at n={best[0]}{tf32}"))
    rows = conf.get("by_backend", {})
    gpu_rows = {label: rows[label] for label in GPU_LABELS if label in rows}
    if not gpu_rows:
        out.append(_goal("every conformance case passes on torch-cuda and webgpu", "not measured", "no GPU backend"))
    else:
        bad = [
            f"{k}: {r['failed']} failed, {r['not_run']} not run"
            for k, r in gpu_rows.items()
            if r["failed"] or r["not_run"] or r.get("error")
        ]
        missing = [k for k in GPU_LABELS if k not in gpu_rows]
        status = "not met" if bad else ("not measured" if missing else "met")
        evidence = "; ".join(bad) or ", ".join(f"{k}: {r['passed']}/{conf['cases']}" for k, r in gpu_rows.items())
        out.append(
            _goal(
                "every conformance case passes on torch-cuda and webgpu",
                status,
                evidence + (f" (not measured: {', '.join(missing)})" if missing else ""),
            )
        )
    models = timing.get("models") if isinstance(timing.get("models"), list) else []
    batch1 = [r for r in models if r.get("batch") == 1 and "by_backend" in r]
    for label in GPU_LABELS:
        name = f"small models at batch 1 faster on {label} than ndflow cpu"
        ratios = [(r["model"], r["by_backend"][label].get("vs_cpu")) for r in batch1 if label in r["by_backend"]]
        if not ratios:
            out.append(_goal(name, "not measured", report["absent"].get(label) or "no model timed"))
            continue
        slow = [m for m, v in ratios if not v or v <= 1.0]
        evidence = ", ".join(f"{m} {fmt(v)}x" for m, v in ratios)
        out.append(_goal(name, "not met" if slow else "met", evidence))
    return out


def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(fmt(c) for c in row) + " |" for row in rows]
    return lines + [""]


def _cols(report: dict) -> list[str]:
    return ["cpu", *GPU_LABELS]


def _cell(report: dict, by: dict, label: str, key: str = "median_ms") -> str:
    if label not in report["backends"]:
        return "no GPU" if label == "torch-cuda" or report["dry_run"] else "no adapter"
    r = by.get(label)
    if r is None:
        return "-"
    text = fmt(r.get(key))
    if label != "cpu" and r.get("vs_cpu") is not None:
        text += f" ({fmt(r['vs_cpu'], 2)}x)"
    return text


def _step_header(report: dict, name: str, title: str) -> list[str]:
    entry = report["steps"].get(name) or {}
    lines = [f"## {title}", ""]
    status = entry.get("status", "not run")
    if status != "ok":
        lines.append(f"Status: **{status}**. {entry.get('note', '')}")
        if entry.get("error"):
            err = entry["error"]
            lines += [f"{err['type']}: {err['message']}", "", "```", err["traceback"].rstrip(), "```"]
        lines.append("")
    return lines


def _machine(report: dict) -> list[str]:
    m = _result(report, "machine")
    lines = _step_header(report, "machine", "Machine")
    if not m:
        return lines
    smi = m.get("nvidia_smi")
    gpu = (
        (
            f"{smi['name']}, driver {smi['driver']}, max SM clock {smi['max_sm_clock_mhz']:.0f} MHz, "
            f"{smi['memory_total_mib']:.0f} MiB"
        )
        if isinstance(smi, dict)
        else f"nvidia-smi: {smi or 'absent'}"
    )
    lines += [
        f"- CPU: {m.get('cpu')}, {m.get('cpu_count')} cores; Python {m.get('python')}; {m.get('platform')}",
        f"- GPU: {gpu}",
        f"- CUDA (torch {m.get('torch')}): {m.get('cuda')}",
        f"- fp32 peak: {m.get('fp32_peak_formula') or 'not computed (no CUDA device or no nvidia-smi)'}",
        f"- wgpu {m.get('wgpu')}; webgpu: {_webgpu(m.get('webgpu'))}",
        f"- ndflow {m.get('ndflow')}, numpy {m.get('numpy')}; C dispatch: {m.get('c_dispatch')}, "
        f"C native split: {m.get('c_native_split')}{'; ' + m['c_modules_error'] if 'c_modules_error' in m else ''}",
        f"- env: {', '.join(f'{k}={v}' for k, v in m.get('env', {}).items())}",
        "",
    ]
    return lines


def _webgpu(info: Any) -> str:
    if not isinstance(info, dict):
        return str(info)
    return f"{info['adapter']} (shader-f16: {info['shader_f16']}); backend: {info['description']}"


def _conformance(report: dict) -> list[str]:
    c = _result(report, "conformance")
    lines = _step_header(report, "conformance", "Conformance (TF.js fixtures)")
    if not c:
        return lines
    lines.append(f"{c['cases']} cases (op fixtures, gradient fixtures, graph-model fixtures), TF.js tolerances.")
    lines.append("")
    for module, why in c.get("family_errors", {}).items():
        lines += [f"- cases of {module} not read: {why}", ""]
    rows = []
    for label in _cols(report):
        r = c["by_backend"].get(label)
        if r is None:
            rows.append([label, _cell(report, {}, label), "", "", ""])
        else:
            rows.append([label, r["passed"], r["failed"], r["not_run"], r.get("seconds", r.get("error"))])
    lines += _table(["backend", "passed", "failed", "not run", "seconds"], rows)
    fails = [
        [label, f["id"], f["max_error"], f["error"][:160].replace("|", "/")]
        for label, r in c["by_backend"].items()
        for f in r["failures"][:40]
    ]
    if fails:
        lines += ["Failures (first 40 per backend):", ""] + _table(["backend", "case", "max error", "error"], fails)
    return lines


def _timings(report: dict) -> list[str]:
    t = _result(report, "timings")
    lines = _step_header(report, "timings", "Timings (median ms, interleaved; ratio vs cpu in brackets)")
    if not t:
        return lines
    cols = _cols(report)
    if "torch_tf32" in t:
        lines += [
            f"TORCH_TF32: {t['torch_tf32']}; TORCH_CUDA_GRAPHS flag present: {t.get('torch_cuda_graphs_flag')}",
            "",
        ]
    mm = t.get("matmul")
    lines.append("### matmul (float32 n x n)")
    lines.append("")
    if isinstance(mm, list):
        rows = []
        for row in mm:
            if "skipped" in row:
                rows.append([row["n"], row["skipped"]] + [""] * (2 * len(cols) - 1))
                continue
            by = row["by_backend"]
            rows.append(
                [row["n"]]
                + [_cell(report, by, c) for c in cols]
                + [
                    _cell(report, by, c, "gflops").split(" (")[0] + " / " + fmt(by.get(c, {}).get("pct_peak"))
                    if c in by
                    else "-"
                    for c in cols
                ]
            )
        lines += _table(["n"] + [f"{c} ms" for c in cols] + [f"{c} GFLOP/s / % peak" for c in cols], rows)
    else:
        lines += [str(mm), ""]
    conv = t.get("conv2d") or {}
    lines += ["### conv2d", ""]
    if "by_backend" in conv:
        lines += _table(
            ["shape"] + [f"{c} ms" for c in cols],
            [[conv["shape"]] + [_cell(report, conv["by_backend"], c) for c in cols]],
        )
    else:
        lines += [str(conv), ""]
    lines += _models(report, t, cols)
    lat = t.get("read_latency")
    lines += ["### read latency (1M float32 result): data_sync ms / await data() ms", ""]
    if isinstance(lat, dict) and "error" not in lat:
        lines += _table(
            ["backend", "data_sync", "await data()"],
            [[k, v["data_sync_ms"], v["await_data_ms"]] for k, v in lat.items()],
        )
    else:
        lines += [str(lat), ""]
    if "webgpu_compile" in t:
        lines += [
            f"webgpu: {t['webgpu_compile']['programs']} programs compiled in this step, "
            f"{t['webgpu_compile']['compile_ms']:.0f} ms compiling.",
            "",
        ]
    mem = t.get("memory", {})
    lines += ["### nf.memory() before / after the timings", ""]
    lines += _table(
        ["backend", "tensors before", "tensors after", "bytes before", "bytes after", "leak"],
        [
            [
                k,
                v["before"]["num_tensors"],
                v["after"]["num_tensors"],
                v["before"]["num_bytes"],
                v["after"]["num_bytes"],
                "yes" if v["leak"] else "no",
            ]
            for k, v in mem.items()
        ],
    )
    return lines


def _models(report: dict, t: dict, cols: list[str]) -> list[str]:
    lines = ["### small models (input read back each run)", ""]
    rows_in = t.get("models")
    if not isinstance(rows_in, list):
        return lines + [str(rows_in), ""]
    rows, first, graphs = [], [], []
    for r in rows_in:
        if "by_backend" not in r:
            rows.append(
                [r.get("model", "-"), r.get("batch", "-")]
                + [r.get("skipped") or r.get("error")]
                + [""] * (len(cols) - 1)
            )
            continue
        rows.append([r["model"], r["batch"]] + [_cell(report, r["by_backend"], c) for c in cols])
        first.append(
            [r["model"], r["batch"]]
            + [
                f"{fmt(r['by_backend'][c]['first_ms'])} / {fmt(r['by_backend'][c]['median_ms'])}"
                if c in r["by_backend"]
                else _cell(report, {}, c)
                for c in cols
            ]
        )
        if "cuda_graphs" in r:
            g = r["cuda_graphs"]
            graphs.append([r["model"], r["batch"], g["off"]["median_ms"], g["on"]["median_ms"], g["max_abs_diff"]])
    lines += _table(["model", "batch"] + [f"{c} ms" for c in cols], rows)
    lines += ["First call (kernel compile, caches) / warm median, ms:", ""]
    lines += _table(["model", "batch"] + cols, first)
    if graphs:
        lines += ["CUDA graphs (torch-cuda):", ""]
        lines += _table(["model", "batch", "off ms", "on ms", "max abs diff"], graphs)
    return lines


def markdown(report: dict[str, Any]) -> str:
    """The report: the machine, the goals table, then each step's tables."""
    kind = "dry run (no GPU)" if report["dry_run"] else "GPU run"
    lines = [
        f"# ndflow GPU check: {kind}",
        "",
        f"Backends: {', '.join(report['backends'])}; wall time {report.get('wall_s')} s; arguments: {report['args']}.",
        "",
    ]
    for label, why in report["absent"].items():
        lines.append(f"- {label}: {why}")
    lines.append("")
    lines += _machine(report)
    lines += ["## Goals", ""]
    g = report["steps"].get("goals") or {}
    rows = [[x["goal"], x["status"], x["evidence"]] for x in g.get("result") or []]
    lines += _table(["goal", "status", "evidence"], rows) if rows else [f"goals: {g.get('status')}", ""]
    lines += _conformance(report)
    lines += _timings(report)
    return "\n".join(lines).rstrip() + "\n"
