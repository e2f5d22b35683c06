"""CPU per model request under many concurrent runs against sequential runs (issue 9 item 22).

    .venv/bin/python bench/concurrency.py [--runs 500] [--seq-runs 200] [--rounds 3] [--loops asyncio,uvloop]

The chainreact runner's agent (bench/frameworks/run_chainreact.py: one `add` tool, 3 tool steps, 4 model
requests per run) against bench/server.py in other processes: a sequential batch (no server latency)
and a batch of `--runs` runs at once (100 ms server latency per request, as the suite's concurrent
workload). Each (loop, round) is a fresh process; the concurrent batch is measured twice in it: the first
wave (cold: it opens every connection, as the suite measures) and a second one (warm). CPU is the client
process's `time.process_time()`, divided by the model requests; the figure to quote is the ratio
concurrent / sequential,
median of the rounds' ratios [lowest-highest round]. `uvloop` is measured when installed.
Results: printed, and bench/results/concurrency.json.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(BENCH / "frameworks"))


async def _measure(seq_url: str, conc_url: str, runs: int, seq_runs: int) -> dict[str, Any]:
    import _harness as h
    import run_chainreact

    adapter = run_chainreact.adapter()
    agent = adapter.make_agent(seq_url, False)
    conc_agent = adapter.make_agent(conc_url, False)
    ok = 0

    async def one(a: Any) -> None:
        nonlocal ok
        if (await adapter.run(a, h.PROMPT, False)).startswith(h.EXPECTED_ANSWER):
            ok += 1

    for _ in range(3):
        await one(agent)
    out: dict[str, Any] = {}
    c0 = time.process_time()
    for _ in range(seq_runs):
        await one(agent)
    out["sequential_ms"] = (time.process_time() - c0) / (seq_runs * h.REQUESTS_PER_RUN) * 1e3
    await one(conc_agent)
    for wave in ("cold", "warm"):
        c0, w0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one(conc_agent) for _ in range(runs)))
        out[f"concurrent_{wave}_ms"] = (time.process_time() - c0) / (runs * h.REQUESTS_PER_RUN) * 1e3
        out[f"concurrent_{wave}_wall_s"] = time.perf_counter() - w0
    out["completed"] = ok
    out["expected"] = 3 + seq_runs + 1 + 2 * runs
    assert adapter.aclose is not None
    await adapter.aclose(agent)
    await adapter.aclose(conc_agent)
    return out


def child(args: argparse.Namespace) -> None:
    if args.loop == "uvloop":
        import uvloop

        uvloop.install()
    res = asyncio.run(_measure(args.seq_url, args.conc_url, args.runs, args.seq_runs))
    print("RESULT " + json.dumps(res), flush=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=500)
    p.add_argument("--seq-runs", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--loops", default="asyncio,uvloop")
    p.add_argument("--out", default=str(BENCH / "results"), help="folder for concurrency.json")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--loop", default="asyncio", help=argparse.SUPPRESS)
    p.add_argument("--seq-url", help=argparse.SUPPRESS)
    p.add_argument("--conc-url", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        child(args)
        return 0
    from procs import PYTHON, ROOT, Server, bench_env

    loops = [x for x in args.loops.split(",") if x]
    if "uvloop" in loops:
        try:
            import uvloop  # noqa: F401
        except ImportError:
            print("uvloop is not installed: measuring asyncio only", file=sys.stderr)
            loops.remove("uvloop")
    seq_srv, conc_srv = Server.start(latency=0.0), Server.start(latency=0.1)
    results: dict[str, list[dict[str, Any]]] = {k: [] for k in loops}
    failed = False
    try:
        for _ in range(args.rounds):
            for loop in loops:  # interleaved, so a busy spell of the machine hits every variant
                cmd = [PYTHON, __file__, "--child", "--loop", loop, "--seq-url", seq_srv.url,
                       "--conc-url", conc_srv.url, "--runs", str(args.runs), "--seq-runs", str(args.seq_runs)]
                out = subprocess.run(cmd, capture_output=True, text=True, env=bench_env(), cwd=ROOT)
                line = next((x for x in out.stdout.splitlines() if x.startswith("RESULT ")), None)
                if line is None:
                    print(out.stderr[-3000:], file=sys.stderr)
                    failed = True
                    continue
                r = json.loads(line[7:])
                failed |= r["completed"] != r["expected"]
                results[loop].append(r)
    finally:
        seq_srv.stop()
        conc_srv.stop()
    import stats

    summary: dict[str, Any] = {}
    print("median of the rounds [lowest-highest round]; a ratio is the median of each round's ratio")
    for loop, rs in results.items():
        if not rs:
            continue
        med = {k: stats.spread(r[k] for r in rs) for k in rs[0] if k not in ("completed", "expected")}
        cold = stats.ratios((r["concurrent_cold_ms"], r["sequential_ms"]) for r in rs)
        warm = stats.ratios((r["concurrent_warm_ms"], r["sequential_ms"]) for r in rs)
        summary[loop] = {**med, "ratio_cold": cold, "ratio_warm": warm, "rounds": rs}
        print(f"{loop}: sequential {stats.fmt(med['sequential_ms'], 3)} ms/req; {args.runs} at once, "
              f"first wave {stats.fmt(med['concurrent_cold_ms'], 3)} "
              f"({stats.fmt(cold, 2, 'x')} seq), "
              f"second wave {stats.fmt(med['concurrent_warm_ms'], 3)} ({stats.fmt(warm, 2, 'x')} seq); "
              "wall first wave "
              f"{stats.fmt(med['concurrent_cold_wall_s'], 2, ' s')}")
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "concurrency.json").write_text(json.dumps(summary, indent=1))
    if failed:
        print("some runs did not complete as scripted", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
