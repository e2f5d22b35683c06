"""The processes of the durable-run benchmark (bench/durable_bench.py starts them).

    python bench/durable_load.py worker --framework F --address HOST:PORT --task-queue Q --url MODEL_URL
    python bench/durable_load.py caller --framework F --address HOST:PORT --task-queue Q --url MODEL_URL \
        --workers PID[,PID] --server-pid PID [--batches B --batch N --warmup W] [--burst K] [--inproc-burst]

`worker` runs framework F's Temporal worker on task queue Q (`bench/frameworks/durable_<F>.py` says how
each framework builds it), prints `ready` once it polls, and on SIGTERM stops and prints one JSON line
with the tool executions it ran. `caller`, in one process, alternates batch by batch:

- **in-process**: the same agent run in this process (its CPU from `time.process_time`, all threads);
- **durable**: the run as a workflow on the dev server, executed by the worker(s), whose CPU (all their
  threads, the SDK's Rust core included) is read from /proc; the dev server's and this process's too;

then, with `--burst K`, K durable runs started at once (throughput; and, with `--inproc-burst`, K
in-process runs at once for reference). Every run's answer is checked. Prints `BENCH_RESULT {json}`.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import os
import signal
import statistics
import sys
import time
import traceback
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent / "frameworks"))
import _harness as h

MARKER = "BENCH_RESULT "
FRAMEWORKS = ("chainreact_sandboxed", "chainreact", "pydantic_ai", "openai_agents")


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a whole process (all its threads), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of `pid` and its live children (the dev server may be a launcher and a server)."""
    total = cpu_s(pid)
    try:
        children = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:
        children = []
    for child in children:
        try:
            total += tree_cpu_s(int(child))
        except OSError:
            pass
    return total


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def framework(name: str, url: str) -> Any:
    if name not in FRAMEWORKS:
        raise SystemExit(f"durable_load: unknown framework {name!r} (one of {', '.join(FRAMEWORKS)})")
    os.environ["DBENCH_MODEL_URL"] = url  # read by the peers' module-level agents at import
    return importlib.import_module(f"durable_{name}")


# --- worker ---------------------------------------------------------------------------------------

async def _worker(args: argparse.Namespace) -> None:
    fw = framework(args.framework, args.url)
    client = await fw.connect(args.address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with fw.worker(client, args.task_queue, args.url):
        print("ready", flush=True)
        await stop.wait()
    print(json.dumps({"tool_calls": h.TOOL_CALLS, "peak_rss_mb": peak_rss_mb(os.getpid())}), flush=True)


# --- caller ---------------------------------------------------------------------------------------

class Tally:
    """Runs made and runs that returned the scripted answer (the first wrong one kept)."""

    def __init__(self) -> None:
        self.runs = 0
        self.checker = h.Checker()

    async def one(self, run: Callable[[], Awaitable[str]]) -> float:
        self.runs += 1
        t0 = time.perf_counter()
        try:
            self.checker.check(await run())
        except Exception as e:  # a failed run is counted and reported, never a fast-looking number
            self.checker.error(e)
        return time.perf_counter() - t0


class Probe:
    """CPU seconds of the worker processes, the dev server and this process, between two points."""

    def __init__(self, workers: list[int], server_pid: int) -> None:
        self.workers = workers
        self.server_pid = server_pid

    def read(self) -> dict[str, float]:
        return {"workers": sum(cpu_s(p) for p in self.workers), "server": tree_cpu_s(self.server_pid),
                "caller": time.process_time()}

    @staticmethod
    def delta(a: dict[str, float], b: dict[str, float]) -> dict[str, float]:
        return {k: b[k] - a[k] for k in a}


async def _caller(args: argparse.Namespace) -> dict[str, Any]:
    fw = framework(args.framework, args.url)
    inproc = fw.InProcess(args.url)
    client = await fw.connect(args.address)
    durable = fw.Caller(client, args.task_queue)
    probe = Probe([int(p) for p in args.workers.split(",") if p], args.server_pid)
    tally = {"inproc": Tally(), "durable": Tally()}
    runners = {"inproc": inproc.run, "durable": durable.run}
    out: dict[str, Any] = {"framework": fw.NAME,
                           "versions": {d: h._version(d) for d in [fw.PACKAGE, *fw.EXTRA_VERSIONS]}}

    if args.batches:
        for mode in ("inproc", "durable"):  # first connections, lazy imports, the sandbox's first load
            for _ in range(args.warmup):
                await tally[mode].one(runners[mode])
        walls: dict[str, list[float]] = {"inproc": [], "durable": []}
        cpu: dict[str, dict[str, float]] = {m: {"workers": 0.0, "server": 0.0, "caller": 0.0} for m in walls}
        for _ in range(args.batches):
            for mode in ("inproc", "durable"):  # batch by batch in turn: drift hits both alike
                a = probe.read()
                for _ in range(args.batch):
                    walls[mode].append(await tally[mode].one(runners[mode]))
                for k, v in probe.delta(a, probe.read()).items():
                    cpu[mode][k] += v
        out["pair"] = {m: {"runs": len(walls[m]), "walls_s": walls[m], "cpu_s": cpu[m]} for m in walls}

    if args.burst:
        out["burst"] = {}
        modes = ["durable", *(["inproc"] if args.inproc_burst else [])]
        for mode in modes:
            a = probe.read()
            t0 = time.perf_counter()
            per_run = await asyncio.gather(*(tally[mode].one(runners[mode]) for _ in range(args.burst)))
            wall = time.perf_counter() - t0
            out["burst"][mode] = {"runs": args.burst, "wall_s": wall, "cpu_s": probe.delta(a, probe.read()),
                                  "run_p50_s": statistics.median(per_run)}

    await inproc.aclose()
    out["runs"] = {m: t.runs for m, t in tally.items()}
    out["completed"] = {m: t.checker.ok for m, t in tally.items()}
    out["problem"] = next((t.checker.first_problem for t in tally.values() if t.checker.first_problem), None)
    out["tool_calls_inproc"] = h.TOOL_CALLS
    out["status"] = "ok"
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/durable_load.py", description=__doc__.splitlines()[0])
    p.add_argument("role", choices=["worker", "caller"])
    p.add_argument("--framework", required=True, choices=FRAMEWORKS)
    p.add_argument("--address", required=True, help="the Temporal server, host:port")
    p.add_argument("--task-queue", required=True)
    p.add_argument("--url", required=True, help="the scripted model server's base URL")
    p.add_argument("--workers", default="", help="caller: the worker processes' pids, comma-separated")
    p.add_argument("--server-pid", type=int, default=0, help="caller: the Temporal dev server's pid")
    p.add_argument("--batches", type=int, default=0, help="caller: in-process/durable batch pairs")
    p.add_argument("--batch", type=int, default=5, help="caller: runs per batch")
    p.add_argument("--warmup", type=int, default=2, help="caller: warm-up runs per mode")
    p.add_argument("--burst", type=int, default=0, help="caller: durable runs started at once")
    p.add_argument("--inproc-burst", action="store_true", help="caller: also that many in-process at once")
    args = p.parse_args(argv)
    if args.role == "worker":
        asyncio.run(_worker(args))
        return 0
    try:
        out = asyncio.run(_caller(args))
    except Exception as e:
        traceback.print_exc(file=sys.stderr)
        out = {"status": "error", "reason": f"{type(e).__name__}: {e}"[:1000]}
    print(MARKER + json.dumps(out), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
