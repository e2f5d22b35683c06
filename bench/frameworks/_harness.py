"""The measuring harness every framework runner shares, so each framework runs the same workload.

A runner (`bench/frameworks/run_<name>.py`) defines an adapter: how to make an agent with one tool
`add(a, b)` pointed at the scripted server, how to run it (plain or streaming model calls), and how to
build one agent from shared parts. The harness drives the workloads, measures the client process (CPU via
`time.process_time`, wall, peak RSS) and prints one line `BENCH_RESULT {json}` on stdout.

Correctness is part of the result, never assumed: every run's answer is checked against the scripted final
text, the tool's executions are counted here, and the suite compares the server's request count with
`expected_requests`.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import inspect
import json
import os
import resource
import statistics
import sys
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import dataclass, field
from typing import Any

SYSTEM_PROMPT = "You are a calculator. Use the add tool for every addition, then report the total."
PROMPT = "Add the numbers step by step with the add tool and report the total."
STEPS = 3  # tool steps per run; the server answers with text after STEPS tool results
REQUESTS_PER_RUN = STEPS + 1
# The scripted server's final answer starts with this (see chainreact.testing.responders).
EXPECTED_ANSWER = f"All {STEPS} tool steps are done"
MARKER = "BENCH_RESULT "
# Client timeout (s, connect included) for every peer's HTTP client, retries off: 500 runs at once on two
# cores wait long for a connection, and a peer must not fail on a default stricter than chainreact's own
# (connect 10 s) nor hide a failure behind a retry.
TIMEOUT = 120.0

TOOL_CALLS = 0
_tool_lock = threading.Lock()  # some frameworks run sync tools in worker threads


def add(a: int, b: int) -> int:
    """The benchmark tool's body, shared by every framework's wrapper; counts its executions."""
    global TOOL_CALLS
    with _tool_lock:
        TOOL_CALLS += 1
    return a + b


class NotApplicable(Exception):
    """The framework can't run this workload (not installed, no such concept); the reason is reported."""


@dataclass
class Adapter:
    """What a runner provides. `run` returns the final answer text of one run."""

    name: str
    package: str  # distribution whose version is reported
    make_agent: Callable[[str, bool], Any]  # (base_url, streaming) -> agent
    run: Callable[[Any, str, bool], Awaitable[str]]  # (agent, prompt, streaming) -> answer
    # Build workload: prepare shared parts once (url) -> state; build one agent from it (maybe async).
    prepare_build: Callable[[str], Any] | None = None
    build_one: Callable[[Any], Any] | None = None
    build_note: str = ""
    aclose: Callable[[Any], Awaitable[None]] | None = None
    extra_versions: list[str] = field(default_factory=list)


def _rss_now() -> int:
    """Current resident set size in bytes (ru_maxrss is only the peak)."""
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _version(dist: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(dist)
    except PackageNotFoundError:
        return "?"


class Checker:
    """Counts runs whose answer is the scripted one; keeps the first wrong answer for the report."""

    def __init__(self) -> None:
        self.ok = 0
        self.bad = 0
        self.first_problem: str | None = None
        self.kinds: dict[str, int] = {}  # failed runs by exception type and the start of its message

    def check(self, answer: Any) -> None:
        if isinstance(answer, str) and answer.startswith(EXPECTED_ANSWER):
            self.ok += 1
            return
        self.bad += 1
        # A framework that turns an error into the answer's text (agno: "Request timed out.") is counted
        # by that text, as an exception is by its type.
        kind = f"answer: {answer!r:.120}"
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if self.first_problem is None:
            self.first_problem = f"unexpected answer: {answer!r:.200}"

    def error(self, e: BaseException) -> None:
        self.bad += 1
        kind = f"{type(e).__name__}: {str(e)[:160]}"
        self.kinds[kind] = self.kinds.get(kind, 0) + 1
        if self.first_problem is None:
            self.first_problem = f"{type(e).__name__}: {e}"[:500]


async def _sequential(adapter: Adapter, url: str, streaming: bool, runs: int, reps: int,
                      warmup: int) -> dict[str, Any]:
    agent = adapter.make_agent(url, streaming)
    checker = Checker()
    for _ in range(warmup):  # first connection, lazy imports, caches: not part of the steady state
        checker.check(await adapter.run(agent, PROMPT, streaming))
    cpu_per_req: list[float] = []
    wall_per_run: list[float] = []
    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        for _ in range(runs):
            checker.check(await adapter.run(agent, PROMPT, streaming))
        c1, w1 = time.process_time(), time.perf_counter()
        cpu_per_req.append((c1 - c0) / (runs * REQUESTS_PER_RUN))
        wall_per_run.append((w1 - w0) / runs)
    if adapter.aclose is not None:
        await adapter.aclose(agent)
    total_runs = warmup + reps * runs
    return {
        "cpu_per_request_ms": statistics.median(cpu_per_req) * 1e3,
        "cpu_per_request_ms_reps": [round(x * 1e3, 4) for x in cpu_per_req],
        "wall_per_run_ms": statistics.median(wall_per_run) * 1e3,
        "runs": total_runs,
        "completed": checker.ok,
        "problem": checker.first_problem,
        "expected_requests": total_runs * REQUESTS_PER_RUN,
        "expected_streamed": streaming,
    }


async def _concurrent(adapter: Adapter, url: str, streaming: bool, runs: int, reps: int,
                      warmup: int) -> dict[str, Any]:
    agent = adapter.make_agent(url, streaming)
    checker = Checker()
    for _ in range(warmup):
        checker.check(await adapter.run(agent, PROMPT, streaming))
    walls: list[float] = []
    cpus: list[float] = []

    async def one() -> None:
        try:
            checker.check(await adapter.run(agent, PROMPT, streaming))
        except Exception as e:  # one failed run must not hide the others' outcome
            checker.error(e)

    for _ in range(reps):
        c0, w0 = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(runs)))
        c1, w1 = time.process_time(), time.perf_counter()
        walls.append(w1 - w0)
        cpus.append((c1 - c0) / (runs * REQUESTS_PER_RUN))
    if adapter.aclose is not None:
        await adapter.aclose(agent)
    total_runs = warmup + reps * runs
    return {
        "wall_s": statistics.median(walls),
        "wall_s_reps": [round(x, 4) for x in walls],
        "cpu_per_request_ms": statistics.median(cpus) * 1e3,
        "runs": total_runs,
        "completed": checker.ok,
        "problem": checker.first_problem,
        "expected_requests": total_runs * REQUESTS_PER_RUN,
        "expected_streamed": streaming,
    }


class LagProbe:
    """Event-loop lag: a task that sleeps `interval` s again and again and records how late it woke up
    (the time every other callback of the loop waited too). Started and stopped around a workload.

    Also the same in CPU time: the CPU this thread (the loop's) spent during each sleep, minus the interval.
    On a busy shared machine the wall-clock lag includes the time the process waited for a core; the CPU
    lag is the work the loop did while the probe waited, i.e. the lag an otherwise idle core would show."""

    def __init__(self, interval: float = 0.05) -> None:
        self.interval = interval
        self.lags: list[float] = []
        self.cpu_lags: list[float] = []
        self._task: asyncio.Task[None] | None = None

    async def _tick(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            t0, c0 = loop.time(), time.thread_time()
            await asyncio.sleep(self.interval)
            self.lags.append(max(0.0, loop.time() - t0 - self.interval))
            self.cpu_lags.append(max(0.0, time.thread_time() - c0 - self.interval))

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._tick())

    def stop(self) -> dict[str, Any]:
        if self._task is not None:
            self._task.cancel()
        out: dict[str, Any] = {"lag_samples": len(self.lags)}
        for name, values in (("lag", self.lags), ("cpu_lag", self.cpu_lags)):
            v = sorted(values) or [0.0]
            for label, q in (("p50", 0.5), ("p99", 0.99)):
                out[f"{name}_{label}_ms"] = v[min(len(v) - 1, round(q * (len(v) - 1)))] * 1e3
            out[f"{name}_max_ms"] = v[-1] * 1e3
        return out


class GcProbe:
    """The cyclic garbage collector's work, per generation, through gc.callbacks (the process's own
    settings untouched: the workload measures what a user's process does): collections, their CPU time
    (this thread's, so the machine's load moves it little), the longest pause (wall), and the objects that
    full collections walked (counted before each one starts: the load-independent measure of their work)."""

    def __init__(self) -> None:
        self.cpu = [0.0, 0.0, 0.0]
        self.count = [0, 0, 0]
        self.longest = 0.0
        self.full_walked = 0
        self._t0 = self._c0 = 0.0

    def _cb(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            if info["generation"] == 2:
                self.full_walked += len(gc.get_objects())
            self._t0, self._c0 = time.perf_counter(), time.thread_time()
            return
        gen = info["generation"]
        self.cpu[gen] += time.thread_time() - self._c0
        self.count[gen] += 1
        self.longest = max(self.longest, time.perf_counter() - self._t0)

    def start(self) -> None:
        gc.callbacks.append(self._cb)

    def stop(self) -> dict[str, Any]:
        gc.callbacks.remove(self._cb)
        return {"gc_s": sum(self.cpu), "gc_s_by_gen": [round(t, 4) for t in self.cpu],
                "gc_collections": self.count, "gc_longest_ms": self.longest * 1e3,
                "gc_full_walked": self.full_walked}


async def _scale(adapter: Adapter, url: str, runs: int, warmup: int,
                 deadline: float = 0.0) -> dict[str, Any]:
    """`runs` runs at once in this process, as `_concurrent`, with the event loop's lag, the time in the
    collector and every failed run counted (bench/scale.py). With a `deadline` (s), runs still going then
    are counted as unfinished and cancelled: a peer too slow for the budget still reports what it did."""
    agent = adapter.make_agent(url, False)
    checker = Checker()
    for _ in range(warmup):
        checker.check(await adapter.run(agent, PROMPT, False))

    async def one() -> None:
        try:
            checker.check(await adapter.run(agent, PROMPT, False))
        except Exception as e:
            checker.error(e)

    lag, gcp = LagProbe(), GcProbe()
    lag.start()
    gcp.start()
    c0, w0 = time.process_time(), time.perf_counter()
    tasks = [asyncio.ensure_future(one()) for _ in range(runs)]
    _, pending = await asyncio.wait(tasks, timeout=deadline or None)
    c1, w1 = time.process_time(), time.perf_counter()
    out = {**lag.stop(), **gcp.stop()}
    if pending:
        for t in pending:
            t.cancel()
        await asyncio.wait(pending, timeout=60)
    out["gc_full_walked_per_request"] = out["gc_full_walked"] / (runs * REQUESTS_PER_RUN)
    if adapter.aclose is not None:
        await adapter.aclose(agent)
    total_runs = warmup + runs
    return {
        **out,
        "in_flight": runs,
        "unfinished": len(pending),
        "deadline_s": deadline,
        "cpu_s": c1 - c0,
        "wall_s": w1 - w0,
        "cpu_per_request_ms": (c1 - c0) / (runs * REQUESTS_PER_RUN) * 1e3,
        "runs": total_runs,
        "completed": checker.ok,
        "failed": checker.bad,
        "failures_by_kind": dict(sorted(checker.kinds.items(), key=lambda kv: -kv[1])[:10]),
        "problem": checker.first_problem,
        "expected_requests": total_runs * REQUESTS_PER_RUN,
        "expected_streamed": False,
    }


async def _build(adapter: Adapter, url: str, n: int, budget: float) -> dict[str, Any]:
    if adapter.prepare_build is None or adapter.build_one is None:
        raise NotApplicable(adapter.build_note or "no agent object to build")
    shared = adapter.prepare_build(url)
    # One agent first, outside the measurement: lazy imports and caches of the first build.
    first = adapter.build_one(shared)
    if inspect.isawaitable(first):
        first = await first
    agents: list[Any] = [first]
    gc.collect()
    rss0 = _rss_now()
    c0, w0 = time.process_time(), time.perf_counter()
    built = 0
    while built < n:
        for _ in range(min(100, n - built)):
            a = adapter.build_one(shared)
            if inspect.isawaitable(a):
                a = await a
            agents.append(a)
        built = len(agents) - 1
        if time.perf_counter() - w0 > budget:
            break  # reported as partial: figures are per agent over the ones built
    c1, w1 = time.process_time(), time.perf_counter()
    gc.collect()
    rss1 = _rss_now()
    # Proof the built agents work: the last one does a real run against the server.
    checker = Checker()
    checker.check(await adapter.run(agents[-1], PROMPT, False))
    distinct = len({id(a) for a in agents})
    return {
        "agents": built,
        "requested_agents": n,
        "partial": built < n,
        "distinct_objects": distinct == len(agents),
        "cpu_per_agent_us": (c1 - c0) / built * 1e6,
        "wall_per_agent_us": (w1 - w0) / built * 1e6,
        "wall_s": w1 - w0,
        "kib_per_agent": (rss1 - rss0) / built / 1024,
        "runs": 1,
        "completed": checker.ok if distinct == len(agents) else 0,
        "problem": checker.first_problem if distinct == len(agents) else "build returned the same object",
        "expected_requests": REQUESTS_PER_RUN,
        "expected_streamed": False,
        "note": adapter.build_note,
    }


async def bare_loop(complete: Callable[[Any, list[dict[str, Any]]], Awaitable[dict[str, Any]]],
                    client: Any, prompt: str) -> str:
    """The baselines' ReAct loop by hand: call the model, run `add` for each tool call, until text."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM_PROMPT},
                                      {"role": "user", "content": prompt}]
    for _ in range(10):
        msg = await complete(client, messages)
        messages.append(msg)
        if not msg.get("tool_calls"):
            return str(msg.get("content"))
        for call in msg["tool_calls"]:
            args = json.loads(call["function"]["arguments"])
            messages.append({"role": "tool", "tool_call_id": call["id"],
                             "content": str(add(args["a"], args["b"]))})
    return "too many steps"


def main(adapter_factory: Callable[[], Adapter]) -> None:
    p = argparse.ArgumentParser(description="one framework's benchmark runner (see bench/README.md)")
    p.add_argument("--url", required=True)
    p.add_argument("--workload", required=True, choices=["sync", "stream", "concurrent", "build", "scale"])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--agents", type=int, default=10_000)
    p.add_argument("--budget", type=float, default=120.0, help="build workload: stop after this many s")
    p.add_argument("--deadline", type=float, default=0.0,
                   help="scale workload: count runs still going after this many s as unfinished (0: wait)")
    args = p.parse_args()
    out: dict[str, Any] = {"workload": args.workload}
    try:
        adapter = adapter_factory()
        out["framework"] = adapter.name
        out["versions"] = {d: _version(d) for d in [adapter.package, *adapter.extra_versions]}
        coro: Coroutine[Any, Any, dict[str, Any]]
        if args.workload == "build":
            coro = _build(adapter, args.url, args.agents, args.budget)
        elif args.workload == "concurrent":
            coro = _concurrent(adapter, args.url, False, args.runs, args.reps, args.warmup)
        elif args.workload == "scale":
            coro = _scale(adapter, args.url, args.runs, args.warmup, args.deadline)
        else:
            coro = _sequential(adapter, args.url, args.workload == "stream", args.runs, args.reps,
                               args.warmup)
        out.update(asyncio.run(coro))
        out["tool_calls"] = TOOL_CALLS
        out["expected_tool_calls"] = out["runs"] * STEPS
        out["status"] = "ok"
    except NotApplicable as e:
        out.update(status="n/a", reason=str(e))
    except Exception as e:
        out.update(status="error", reason=f"{type(e).__name__}: {e}"[:1000])
        traceback.print_exc(file=sys.stderr)
    out["peak_rss_mb"] = _peak_rss_mb()
    print(MARKER + json.dumps(out), flush=True)


def require(module: str, dist: str) -> None:
    """NotApplicable with the install hint when a peer isn't installed."""
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise NotApplicable(f"{dist} is not installed (pip install 'chainreact[bench]')")
