"""Scale: thousands of agent runs in flight in one process, against a 100 ms scripted model.

    python bench/scale.py [--quick] [--only chainreact,bare_httpx,agno] [--sizes 500,10000] [--rounds 3]
                          [--sse 2000] [--no-docs] [--out DIR]
    (also `bench/run --workloads scale`, part of `make bench`)

Each framework runs the suite's agent (3 tool steps, 4 model requests per run) N times at once in one
process (`bench/frameworks/run_<name>.py --workload scale`), with the process's settings as a user would
leave them (Python's GC thresholds, the framework's default HTTP pool), against bench/server.py in its own
process answering every request after 100 ms. Per cell, in fresh processes: every run's outcome (failed
runs counted by kind), wall time, client CPU per model request, event-loop lag (a task sleeping 50 ms
again and again: how late it wakes; p50/p99/max), time in the cyclic GC, peak RSS. Rounds interleave the
sizes and the frameworks (round 1: 500 a b c, 10,000 a b c; round 2: ...); medians and the spread of the
rounds are published, and chainreact's CPU per request at the largest size against the smallest (per round,
then the median: the target is at most 1.5x).

With chainreact, each round also has a cell of `--sse` (2,000; 100 with --quick; 0: none) streamed chat
completions at once against `chainreact serve` on the same agent and model (bench/server_load.py served,
one client process): time to first text p50/p99 from before each client connects, server CPU per run.

chainreact must complete every run (else the bench fails and docs/performance.md is left as it was); a
peer's failed runs are a result, reported with their kinds. A cell that exceeds its time budget is
reported as such.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats
from procs import BENCH, Server, run_runner, verify

FRAMEWORKS = {"bare_httpx": "bare httpx", "bare_openai": "bare openai SDK", "chainreact": "chainreact",
              "pydantic_ai": "pydantic-ai", "openai_agents": "openai-agents", "langgraph": "langgraph",
              "agno": "agno"}
# sse: streamed chat completions at once against `chainreact serve` (0: no such cell)
FULL = {"sizes": [500, 10_000], "rounds": 3, "budget_s": 900.0, "sse": 2000}
QUICK = {"sizes": [50, 400], "rounds": 1, "budget_s": 300.0, "sse": 100}
LATENCY = 0.1
TARGET_CPU_RATIO = 1.5  # chainreact: CPU per request at the largest size <= 1.5x the smallest
TARGET_LAG_P99_MS = 2000.0
KEYS = ("wall_s", "cpu_per_request_ms", "lag_p50_ms", "lag_p99_ms", "lag_max_ms", "cpu_lag_p99_ms",
        "cpu_lag_max_ms", "gc_s", "gc_longest_ms", "gc_full_walked_per_request", "peak_rss_mb", "failed")


def cell(fw: str, size: int, budget: float) -> dict[str, Any]:
    """One framework at one size in fresh processes (model server and runner)."""
    t0 = time.perf_counter()
    with Server.start(latency=LATENCY) as srv:
        # The runs get `budget` s; the process some more to start, warm up and cancel what is left.
        args = ["--runs", str(size), "--warmup", "1", "--deadline", str(budget)]
        r = run_runner(fw, srv.url, "scale", args, timeout=budget + 180)
        counts = srv.stop()
    r["server_counts"] = counts
    r["elapsed_s"] = time.perf_counter() - t0
    if r.get("status") == "ok" and r.get("unfinished"):
        r.update(status="unfinished", reason=unfinished(r, budget))
    elif r.get("status") == "ok" and r.get("failed"):
        r["status"] = "failed runs"  # a result for a peer; for chainreact a failure of the bench
    elif r.get("status") == "ok":
        problems = verify(r, counts)
        if problems:
            r.update(status="failed", reason="; ".join(problems))
    return r


def done(r: dict[str, Any]) -> int:
    """Runs of the measured batch that completed as scripted (the warm-up's left out)."""
    return int(r["completed"]) - (int(r["runs"]) - int(r["in_flight"]))


def unfinished(r: dict[str, Any], budget: float) -> str:
    """What a cell that ran out of its budget did (a peer too slow for it still has a result)."""
    return (f"did not finish in {budget:.0f} s: {done(r):,} of {r['in_flight']:,} done, "
            f"{r['failed']:,} failed, {r['unfinished']:,} still running")


def sse_cell(clients: int, budget: float) -> dict[str, Any]:
    """`clients` streamed chat completions at once against `chainreact serve` (the suite's agent, the
    model answering after 100 ms), from one client process (bench/server_load.py served): time to first
    text p50/p99 from before each client connects, the server's CPU per run, every failed run."""
    import tempfile

    import server_bench

    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="chainreact-scale-sse-") as tmp, \
            Server.start(latency=LATENCY) as model:
        folder = server_bench.write_agent(Path(tmp) / "agent")
        try:
            proc, base = server_bench.start_server("chainreact", model.url, folder)
        except RuntimeError as e:
            return {"status": "error", "reason": str(e)}
        try:
            r = server_bench.worker(["served", "--base", base, "--pid", str(proc.pid), "--concurrency",
                                     str(clients), "--warmup", "2"], timeout=budget)
        finally:
            err = server_bench.stop_server(proc)
        counts = model.stop()
    r["server_counts"] = counts
    r["elapsed_s"] = time.perf_counter() - t0
    if r.get("status") == "ok" and "Traceback" in err:
        r.update(status="failed", reason=f"the server logged a traceback: {err[-1500:]}")
    elif r.get("status") == "ok" and r.get("failed"):
        r["status"] = "failed runs"
    elif r.get("status") == "ok":
        problems = verify(r, counts)
        if problems:
            r.update(status="failed", reason="; ".join(problems))
    return r


SSE_KEYS = ("ttft_p50_ms", "ttft_p99_ms", "wall_s", "cpu_per_run_ms", "server_peak_rss_mb", "failed")


def sse_line(c: dict[str, Any]) -> str:
    if c.get("status") not in ("ok", "failed runs"):
        return f"{c.get('status')}: {c.get('reason')}"
    s = (f"TTFT p50 {c['ttft_p50_ms']:.0f} p99 {c['ttft_p99_ms']:.0f} ms, wall {c['wall_s']:.1f} s, "
         f"server {c['cpu_per_run_ms']:.2f} ms CPU/run, RSS {c['server_peak_rss_mb']:.0f} MB")
    if c.get("failed"):
        s += f", FAILED {c['failed']}: {next(iter(c.get('failures_by_kind') or {}), '')}"
    return s + f"  [{c['elapsed_s']:.0f} s]"


def summarise(cells: list[dict[str, Any]]) -> dict[str, Any]:
    done = [c for c in cells if c.get("status") in ("ok", "failed runs")]
    out: dict[str, Any] = {k: stats.spread(c.get(k) for c in done) for k in KEYS}
    out["rounds_ok"] = sum(c.get("status") == "ok" for c in cells)
    out["rounds"] = len(cells)
    kinds: dict[str, int] = {}
    for c in done:
        for k, n in (c.get("failures_by_kind") or {}).items():
            kinds[k] = kinds.get(k, 0) + n
    out["failures_by_kind"] = kinds
    out["statuses"] = sorted({str(c.get("status")) for c in cells})
    out["reasons"] = [c.get("reason") for c in cells if c.get("reason")][:3]
    return out


def measure(cfg: dict[str, Any], fws: list[str]) -> dict[str, Any]:
    started = time.perf_counter()
    sizes = [int(s) for s in cfg["sizes"]]
    res: dict[str, Any] = {
        "meta": {"date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), "settings": cfg,
                 "latency_s": LATENCY, "load_avg_start": list(os.getloadavg())},
        "frameworks": {fw: {str(s): {"cells": []} for s in sizes} for fw in fws}, "failures": [],
    }
    for rnd in range(int(cfg["rounds"])):
        for size in sizes:
            for fw in fws:
                print(f"[scale] round {rnd + 1} {FRAMEWORKS[fw]:<14} {size:>6} in flight", end=" ",
                      flush=True)
                c = cell(fw, size, float(cfg["budget_s"]))
                res["frameworks"][fw][str(size)]["cells"].append(c)
                print(line(c), flush=True)
                if fw == "chainreact" and c.get("status") != "ok":
                    res["failures"].append(f"chainreact at {size}: {c.get('status')}: "
                                           f"{c.get('reason') or c.get('failures_by_kind')}")
        if cfg.get("sse") and "chainreact" in fws:
            n = int(cfg["sse"])
            print(f"[scale] round {rnd + 1} chainreact serve {n:>6} SSE clients", end=" ", flush=True)
            c = sse_cell(n, float(cfg["budget_s"]))
            res.setdefault("sse", {"clients": n, "cells": []})["cells"].append(c)
            print(sse_line(c), flush=True)
            if c.get("status") != "ok":
                res["failures"].append(f"chainreact serve with {n} SSE clients: {c.get('status')}: "
                                       f"{c.get('reason') or c.get('failures_by_kind')}")
    if "sse" in res:
        done = [c for c in res["sse"]["cells"] if c.get("status") in ("ok", "failed runs")]
        res["sse"]["summary"] = {k: stats.spread(c.get(k) for c in done) for k in SSE_KEYS}
        res["sse"]["summary"]["rounds_ok"] = sum(c.get("status") == "ok" for c in res["sse"]["cells"])
    for per in res["frameworks"].values():
        for level in per.values():
            level["summary"] = summarise(level["cells"])
    for fw, per in res["frameworks"].items():
        lo, hi = per[str(sizes[0])]["cells"], per[str(sizes[-1])]["cells"]
        res["frameworks"][fw]["cpu_ratio"] = stats.ratios(
            (h.get("cpu_per_request_ms"), lo_.get("cpu_per_request_ms"))
            for h, lo_ in zip(hi, lo, strict=True) if h.get("status") == "ok" and lo_.get("status") == "ok")
    res["meta"]["duration_s"] = time.perf_counter() - started
    res["meta"]["load_avg_end"] = list(os.getloadavg())
    return res


def targets(res: dict[str, Any]) -> list[tuple[str, str, bool]]:
    """(target, measured, met) for chainreact."""
    per = res["frameworks"].get("chainreact")
    if not per:
        return []
    sizes = [int(s) for s in res["meta"]["settings"]["sizes"]]
    big = per[str(sizes[-1])]["summary"]
    ratio = per.get("cpu_ratio")
    lag = big["lag_p99_ms"]
    worst = (big["failed"] or {}).get("max") or 0
    return [
        (f"{sizes[-1]:,} runs in flight: every run completes", f"{worst:.0f} failed in the worst round",
         bool(big["rounds_ok"] == big["rounds"] and not worst)),
        (f"event-loop lag p99 at {sizes[-1]:,} in flight < {TARGET_LAG_P99_MS / 1000:g} s",
         stats.fmt(lag, 0, " ms"), bool(lag and lag["median"] < TARGET_LAG_P99_MS)),
        (f"CPU per request at {sizes[-1]:,} in flight <= {TARGET_CPU_RATIO}x the figure at {sizes[0]:,}",
         stats.fmt(ratio, 2, "x"), bool(ratio and ratio["median"] <= TARGET_CPU_RATIO)),
    ]


def line(c: dict[str, Any]) -> str:
    if c.get("status") not in ("ok", "failed runs"):
        return f"{c.get('status')}: {c.get('reason')}"
    s = (f"wall {c['wall_s']:.1f} s, {c['cpu_per_request_ms']:.2f} ms CPU/req, lag p99 {c['lag_p99_ms']:.0f} "
         f"max {c['lag_max_ms']:.0f} ms (CPU {c['cpu_lag_p99_ms']:.0f} / {c['cpu_lag_max_ms']:.0f}), "
         f"gc {c['gc_s']:.2f} s CPU {c['gc_collections']} "
         f"{c['gc_full_walked_per_request']:.0f} walked/req, RSS {c['peak_rss_mb']:.0f} MB")
    if c.get("failed"):
        s += f", FAILED {c['failed']}: {next(iter(c.get('failures_by_kind') or {}), '')}"
    return s + f"  [{c['elapsed_s']:.0f} s]"


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/scale.py", description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes, one round: checks the bench works")
    p.add_argument("--only", default="chainreact,bare_httpx", help=f"comma list of: {', '.join(FRAMEWORKS)}")
    p.add_argument("--sizes", help="comma list of runs in flight (overrides the preset's 500,10000)")
    p.add_argument("--rounds", type=int, help="rounds (overrides the preset)")
    p.add_argument("--sse", type=int, help="SSE clients at once against chainreact serve (0: skip that cell)")
    p.add_argument("--budget", type=float, help="seconds a cell may take (overrides the preset)")
    p.add_argument("--no-docs", action="store_true", help="don't write docs/performance.md")
    p.add_argument("--out", type=Path, default=BENCH / "results", help="directory for scale-latest.json")
    args = p.parse_args(argv)
    fws = [s.strip() for s in args.only.split(",") if s.strip()]
    if not fws or any(f not in FRAMEWORKS for f in fws):
        print(f"scale: --only takes {', '.join(FRAMEWORKS)}", file=sys.stderr)
        return 2
    cfg = dict(QUICK if args.quick else FULL)
    if args.sizes:
        cfg["sizes"] = [int(x) for x in args.sizes.split(",")]
    if args.rounds:
        cfg["rounds"] = args.rounds
    if args.budget:
        cfg["budget_s"] = args.budget
    if args.sse is not None:
        cfg["sse"] = args.sse
    res = measure(cfg, fws)
    for target, measured, met in targets(res):
        print(f"[scale] {target}: {measured} ({'met' if met else 'MISSED'})")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "scale-latest.json"
    path.with_suffix(".tmp").write_text(json.dumps(res, indent=1))
    path.with_suffix(".tmp").replace(path)
    print(f"[scale] results: {path} ({res['meta']['duration_s']:.0f} s)")
    if res["failures"]:
        print("[scale] FAILED (docs/performance.md left unchanged):", *res["failures"], sep="\n  - ",
              file=sys.stderr)
        return 1
    if not args.no_docs:
        import scale_report

        print(f"[scale] wrote {scale_report.write(res)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
