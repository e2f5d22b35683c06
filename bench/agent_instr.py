"""The agent loop's CPU in instructions: the suite's agent in-process against the bare httpx loop.

    python bench/agent_instr.py [--only chainreact,bare_httpx] [--workloads sync,stream] [--runs 20]
    python bench/agent_instr.py --profile chainreact --workloads sync --runs 300   (cProfile, no valgrind)

The CPU-time figures of bench/suite.py move with the machine's load; instruction counts do not. For each
framework runner (bench/frameworks/run_<name>.py, the same adapter the suite runs) and workload, a fresh
worker under `valgrind --tool=callgrind` (instrumentation switched on only for the measured runs, see
bench/server_instr.py) does `--warmup` runs, then `--runs` runs against the scripted model server
(bench/server.py, 3 tool steps then the answer). Reported: instructions per run and per model request,
and each framework's ratio to the bare httpx loop. Every answer is checked. Needs valgrind.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import importlib
import json
import os
import pstats
import shutil
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent / "frameworks"))
import _harness as h
from procs import MARKER, PYTHON, Server
from server_instr import VALGRIND, counted_worker


def _adapter(framework: str) -> h.Adapter:
    mod = importlib.import_module(f"run_{framework}")
    adapter: h.Adapter = mod.adapter()
    return adapter


def worker(framework: str, url: str, workload: str, runs: int, warmup: int) -> None:
    adapter = _adapter(framework)
    streaming = workload == "stream"
    checker = h.Checker()

    async def go() -> None:
        agent = adapter.make_agent(url, streaming)
        for _ in range(warmup):
            checker.check(await adapter.run(agent, h.PROMPT, streaming))
        print("ready", flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
        for _ in range(runs):
            checker.check(await adapter.run(agent, h.PROMPT, streaming))
        print(MARKER + json.dumps({"ok": checker.ok}), flush=True)
        await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)  # counted: may close
        if adapter.aclose is not None:
            await adapter.aclose(agent)

    asyncio.run(go())


def counted(framework: str, url: str, workload: str, runs: int, warmup: int) -> int:
    cmd = [*VALGRIND, PYTHON, __file__, "worker", framework, url, workload, str(runs), str(warmup)]
    instructions, ok = counted_worker(cmd, f"{framework} worker")
    if ok != runs + warmup:
        raise RuntimeError(f"{framework} {workload}: {ok}/{runs + warmup} answers right")
    return instructions


def measure(frameworks: list[str], workloads: list[str], runs: int, warmup: int) -> dict[str, Any]:
    out: dict[str, Any] = {"runs": runs, "results": {}}
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        out["error"] = "valgrind is not installed"
        return out
    for wl in workloads:
        per: dict[str, float] = {}
        for fw in frameworks:
            with Server.start(steps=h.STEPS) as model:
                per[fw] = counted(fw, model.url, wl, runs, warmup) / runs
                model.stop()
            print(f"[agent-instr] {wl:<6} {fw:<18} {per[fw] / 1e6:7.3f} M instr/run "
                  f"{per[fw] / h.REQUESTS_PER_RUN / 1e6:7.3f} M/request", flush=True)
        base = per.get("bare_httpx")
        out["results"][wl] = {fw: {"per_run": v, "per_request": v / h.REQUESTS_PER_RUN,
                                   "x_bare_httpx": v / base if base else None} for fw, v in per.items()}
        if base:
            for fw, v in per.items():
                print(f"[agent-instr] {wl:<6} {fw:<18} {v / base:.3f}x bare httpx", flush=True)
    return out


def profile(framework: str, workload: str, runs: int, warmup: int, top: int) -> None:
    """cProfile over `runs` runs in this process (hot spots by function, not instruction counts)."""
    adapter = _adapter(framework)
    streaming = workload == "stream"
    checker = h.Checker()

    async def go(prof: cProfile.Profile) -> None:
        agent = adapter.make_agent(model.url, streaming)
        for _ in range(warmup):
            checker.check(await adapter.run(agent, h.PROMPT, streaming))
        prof.enable()
        for _ in range(runs):
            checker.check(await adapter.run(agent, h.PROMPT, streaming))
        prof.disable()
        if adapter.aclose is not None:
            await adapter.aclose(agent)

    prof = cProfile.Profile()
    with Server.start(steps=h.STEPS) as model:
        asyncio.run(go(prof))
        model.stop()
    if checker.ok != runs + warmup:
        raise RuntimeError(f"{checker.ok}/{runs + warmup} answers right ({checker.first_problem})")
    st = pstats.Stats(prof)
    st.sort_stats("tottime").print_stats(top)
    st.sort_stats("cumulative").print_stats(top)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["worker"]:
        fw, url, wl, runs, warmup = argv[1:6]
        worker(fw, url, wl, int(runs), int(warmup))
        return 0
    p = argparse.ArgumentParser(prog="bench/agent_instr.py", description=__doc__.splitlines()[0])
    p.add_argument("--only", default="chainreact,bare_httpx", help="comma list of runner names "
                                                                   "(bench/frameworks/run_<name>.py)")
    p.add_argument("--workloads", default="sync,stream", help="comma list of: sync, stream")
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--profile", metavar="FRAMEWORK", help="cProfile one runner instead of counting")
    p.add_argument("--top", type=int, default=40, help="--profile: functions listed")
    a = p.parse_args(argv)
    workloads = [s.strip() for s in a.workloads.split(",") if s.strip()]
    if a.profile:
        for wl in workloads:
            profile(a.profile, wl, a.runs, a.warmup, a.top)
        return 0
    fws = [s.strip() for s in a.only.split(",") if s.strip()]
    res = measure(fws, workloads, a.runs, a.warmup)
    print(json.dumps(res, indent=1))
    return 1 if res.get("error") else 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    sys.exit(main())
