"""Where a JavaScript node's time limit goes: a script that never ends, under a 2 s limit.

For each run: the wall time until the node's Failure, the process CPU it took, and the longest the
event loop went without running (a ticker coroutine every 10 ms); each figure over the runs:
median [lowest-highest run]. Then two such scripts at once (the
limit is process CPU time, C `clock()` in the binding, so parallel scripts use it up faster).

    python bench/js_limits.py [--runs 5] [--limit 2] [--json out.json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

sys.path.insert(0, str(Path(__file__).resolve().parent))

import stats

from chainreact.chains import RuleEngine, RuleMsg

SPIN = "return {toJSON() { while (true) {} }};"  # the case: user code in the result's conversion


def chain(chain_id: str) -> dict[str, Any]:
    return {"ruleChain": {"id": chain_id}, "metadata": {"nodes": [
        {"id": "t", "type": "jsTransform", "configuration": {"jsScript": SPIN}}]}}


async def measure(engine: RuleEngine, parallel: int) -> dict[str, float]:
    gaps: list[float] = []

    async def ticker() -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.01)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now

    task = asyncio.create_task(ticker())
    t0, c0 = time.perf_counter(), time.process_time()
    ends = await asyncio.gather(*(engine.run(f"c{i}", RuleMsg(type="T", data="{}")) for i in range(parallel)))
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    task.cancel()
    assert all(e[0].relation == "Failure" and "time limit" in (e[0].error or "") for e in ends), ends
    return {"wall_s": wall, "cpu_s": cpu, "loop_max_gap_ms": max(gaps) * 1000 if gaps else 0.0}


async def main(runs: int, limit: float) -> dict[str, Any]:
    engine = RuleEngine()
    engine.js_time_limit = limit
    for i in range(2):
        engine.load(chain(f"c{i}"))
    out: dict[str, Any] = {"limit_s": limit, "loadavg": os.getloadavg()[0]}
    for parallel in (1, 2):
        rows = [await measure(engine, parallel) for _ in range(runs)]
        out[str(parallel)] = {k: stats.spread(r[k] for r in rows) for k in rows[0]}
    return out


def report(r: dict[str, Any]) -> str:
    lines = [f"limit {r['limit_s']:g} s, load average {r['loadavg']:.1f}",
             "| scripts at once | wall to Failure | process CPU | event loop's longest gap |",
             "|---|---|---|---|"]
    for p in ("1", "2"):
        x = r[p]
        lines.append(f"| {p} | {stats.fmt(x['wall_s'], 2, ' s')} | {stats.fmt(x['cpu_s'], 2, ' s')} | "
                     f"{stats.fmt(x['loop_max_gap_ms'], 0, ' ms')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--limit", type=float, default=2.0)
    ap.add_argument("--json")
    a = ap.parse_args()
    res = asyncio.run(main(a.runs, a.limit))
    print(report(res))
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1))
