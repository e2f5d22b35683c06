"""State store benchmark: chainreact's store against LangGraph's checkpointers, same work, same run.

    python bench/state.py                     # SQLite and PostgreSQL, chainreact and LangGraph
    python bench/state.py --quick             # fewer operations (checks the script, rough numbers)
    python bench/state.py --postgres URL      # default postgresql://postgres@127.0.0.1:5432/test
    python bench/state.py --json out.json

Workloads, each on both backends:
- **append, 1 session**: N sequential appends of one message to one conversation, then R reads of the
  last 20 messages. LangGraph's equivalent of an append is what a graph with a `messages` channel does
  after a step: `aput` a new checkpoint whose channel value is the conversation so far; its read is
  `aget_tuple` of the thread's latest checkpoint, sliced to the last 20.
- **append, 1000 sessions**: N appends spread round-robin over 1,000 conversations, then R reads of
  random ones.
- **checkpoint** (chainreact only): `save_run` of an 8-message run snapshot, and `load_run`.
- **checkpoint share of a run**: runs of a chainreact Agent (3 tool steps, 4 model calls) against the
  scripted server (`chainreact fake-llm --responder tool-steps:3`, its own process), without and with
  the loop's checkpoint hook saving a RunSnapshot to the store at every safe point (6 per run:
  `chainreact.state.runs.StoreCheckpointer`). The CPU spent inside the saves, as a share of the
  checkpointing runs' CPU, is the cost; the difference between the two kinds of run is printed too
  (noisier on a shared machine).

Measures: appends per second (wall clock, one task, awaited one by one: the latency a run waits for),
p50/p99 latency of append and of the window read, and CPU per append (`time.process_time`, this
process only: the PostgreSQL server's CPU is not in it). The ratio chainreact/LangGraph is the figure
to compare across machines. Needs `pip install -e '.[postgres,bench]'` (LangGraph's checkpointers are in
the bench extra); a peer that is missing is reported as n/a.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats

from chainreact.state import open_store
from chainreact.state.checkpoint import RunSnapshot, ToolOutcome
from chainreact.types import Message, ToolCall
from chainreact.types.messages import assistant, tool_result, user

WINDOW = 20
TEXT = "Please check the weather in Lyon tomorrow and tell me whether I need an umbrella, message {i}."


def pct(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, round(q * (len(s) - 1)))] * 1000  # ms


async def timed(fn: Callable[[int], Awaitable[Any]], n: int) -> tuple[list[float], float, float]:
    lat = []
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for i in range(n):
        t = time.perf_counter()
        await fn(i)
        lat.append(time.perf_counter() - t)
    return lat, time.perf_counter() - wall0, time.process_time() - cpu0


def summary(appends: tuple[list[float], float, float], reads: list[float]) -> dict[str, float]:
    lat, wall, cpu = appends
    return {"appends_per_s": len(lat) / wall, "append_p50_ms": pct(lat, 0.5),
            "append_p99_ms": pct(lat, 0.99), "append_cpu_us": cpu / len(lat) * 1e6,
            "read_p50_ms": pct(reads, 0.5), "read_p99_ms": pct(reads, 0.99)}


# ---------------------------------------------------------------------------- chainreact


def snapshot(run_id: str) -> dict[str, Any]:
    calls = [ToolCall(f"c{i}", "weather", '{"city": "Lyon"}') for i in range(2)]
    msgs = [user(TEXT.format(i=0))]
    for step in range(3):
        msgs.append(Message("assistant", None, calls))
        msgs += [tool_result(c.id, f"21C step {step}", name="weather") for c in calls]
    msgs.append(assistant("No umbrella needed."))
    return RunSnapshot(run_id, "running", 3, msgs[:8], calls,
                       {"c0": ToolOutcome("21C")}).to_dict()


async def checkpoint_workload(url: str, n: int) -> dict[str, float]:
    async with await open_store(url) as store:
        snap = snapshot("r")
        saves, wall, cpu = await timed(lambda i: store.save_run(f"run-{i % 50}", snap), n)
        loads = (await timed(lambda i: store.load_run(f"run-{i % 50}"), n))[0]
    return {"saves_per_s": n / wall, "save_p50_ms": pct(saves, 0.5), "save_p99_ms": pct(saves, 0.99),
            "save_cpu_us": cpu / n * 1e6, "load_p50_ms": pct(loads, 0.5), "load_p99_ms": pct(loads, 0.99),
            "snapshot_bytes": len(json.dumps(snap))}


async def checkpoint_share(url: str, runs: int, reps: int) -> dict[str, float]:
    """A chainreact Agent's runs without and with the loop's checkpoint hook saving to the store
    (`chainreact.state.runs.StoreCheckpointer`), the CPU spent inside the saves counted as they happen."""
    import subprocess

    from chainreact.agent import Agent, Checkpoint
    from chainreact.state.runs import StoreCheckpointer
    from chainreact.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    spent = {"cpu": 0.0, "saves": 0.0}

    class Timed(StoreCheckpointer):
        async def __call__(self, cp: Checkpoint) -> None:
            cpu = time.process_time()
            await super().__call__(cp)
            spent["cpu"] += time.process_time() - cpu
            spent["saves"] += 1

    proc = subprocess.Popen([sys.executable, "-m", "chainreact", "fake-llm", "--responder", "tool-steps:3"],
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        llm = proc.stdout.readline().strip()
        async with await open_store(url) as store:
            agent = Agent(name="bench", instruction="Add numbers.", url=llm, model="fake-model", key="x",
                          tools=[add])

            async def batch(checkpointing: bool) -> float:
                cpu = time.process_time()
                for _ in range(runs):
                    hook = Timed(store) if checkpointing else None
                    result = await agent.run("Add them up.", checkpoint=hook)
                    assert "All 3 tool steps are done" in result.content, result.content
                return (time.process_time() - cpu) / runs

            await batch(False)
            await batch(True)  # warm-up
            cpu: dict[bool, list[float]] = {False: [], True: []}
            shares: list[float] = []  # each repetition's CPU inside the saves / its checkpointing runs' CPU
            spent.update(cpu=0.0, saves=0.0)
            for _ in range(reps):  # interleaved, so drift on the shared machine hits both alike
                for mode in (False, True):
                    before = spent["cpu"]
                    cpu[mode].append(await batch(mode))
                    if mode:
                        shares.append((spent["cpu"] - before) / runs / cpu[mode][-1])
            await agent.aclose()
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    p, c = statistics.median(cpu[False]), statistics.median(cpu[True])
    d = statistics.median(x - y for x, y in zip(cpu[True], cpu[False], strict=True))  # paired by repetition
    n = reps * runs
    return {"run_cpu_ms": p * 1000, "run_cpu_ckpt_ms": c * 1000, "share": d / c,
            "saves_per_run": spent["saves"] / n,
            "share_in_saves": spent["cpu"] / n / statistics.mean(cpu[True]),
            "share_in_saves_spread": stats.spread(shares),
            "save_cpu_in_run_us": spent["cpu"] / max(1.0, spent["saves"]) * 1e6}


# ---------------------------------------------------------------------------- append workloads


class Workload:
    """One implementation on one backend, kept open while the implementations take turns."""

    name = ""

    def __init__(self, sessions: int):
        self.sessions = sessions
        self.stack = contextlib.AsyncExitStack()
        self.lat: list[float] = []
        self.read_lat: list[float] = []
        self.wall = self.cpu = 0.0
        self.round_rates: list[float] = []  # appends/s of each round (its n/rounds appends)

    async def open(self) -> None: ...

    async def append(self, i: int) -> None: ...

    async def read(self, session: int) -> None: ...

    async def close(self) -> None:
        await self.stack.aclose()

    def summary(self) -> dict[str, Any]:
        return {"appends_per_s": len(self.lat) / self.wall, "round_appends_per_s": self.round_rates,
                "append_p50_ms": pct(self.lat, 0.5),
                "append_p99_ms": pct(self.lat, 0.99), "append_cpu_us": self.cpu / len(self.lat) * 1e6,
                "read_p50_ms": pct(self.read_lat, 0.5), "read_p99_ms": pct(self.read_lat, 0.99)}


class Chainreact(Workload):
    name = "chainreact"

    def __init__(self, sessions: int, url: str):
        super().__init__(sessions)
        self.url = url

    async def open(self) -> None:
        self.store = await self.stack.enter_async_context(await open_store(self.url))

    async def append(self, i: int) -> None:
        await self.store.append(f"s{i % self.sessions}", user(TEXT.format(i=i)))

    async def read(self, session: int) -> None:
        assert await self.store.history(f"s{session}", last=WINDOW), "empty window"


SaverFactory = Callable[[contextlib.AsyncExitStack], Awaitable[Any]]


class LangGraph(Workload):
    """A graph's `messages` channel after a step: `aput` of the thread's next checkpoint holding the
    conversation so far; the read is `aget_tuple` of the latest checkpoint, sliced."""

    def __init__(self, sessions: int, name: str, saver: SaverFactory):
        super().__init__(sessions)
        self.name = name
        self.make_saver = saver
        self.prefix = uuid.uuid4().hex[:8]
        self.state: dict[int, tuple[Any, list[dict[str, str]], dict[str, Any]]] = {}

    async def open(self) -> None:
        self.saver = await self.make_saver(self.stack)
        await self.saver.setup()

    def config(self, session: int) -> dict[str, Any]:
        return {"configurable": {"thread_id": f"{self.prefix}-{session}", "checkpoint_ns": ""}}

    async def append(self, i: int) -> None:
        from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

        session = i % self.sessions
        prev = self.state.get(session)
        ckpt, msgs, config = prev if prev else (empty_checkpoint(), [], self.config(session))
        msgs = [*msgs, {"role": "user", "content": TEXT.format(i=i)}]
        new = create_checkpoint(ckpt, None, len(msgs))
        version = self.saver.get_next_version(ckpt["channel_versions"].get("messages"), None)
        new["channel_values"] = {"messages": msgs}
        new["channel_versions"] = {"messages": version}
        config = await self.saver.aput(config, new, {"source": "loop", "step": len(msgs), "parents": {}},
                                       {"messages": version})
        self.state[session] = (new, msgs, config)

    async def read(self, session: int) -> None:
        tup = await self.saver.aget_tuple(self.config(session))
        assert tup.checkpoint["channel_values"]["messages"][-WINDOW:], "empty window"


def langgraph_sqlite(path: str, tuned: bool) -> SaverFactory:
    """`tuned`: the connection gets chainreact's pragmas (WAL, synchronous=NORMAL); the async saver's
    own default is a rollback journal with synchronous=FULL, an fsync per commit."""
    async def make(stack: contextlib.AsyncExitStack) -> Any:
        import aiosqlite
        from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

        conn = await stack.enter_async_context(aiosqlite.connect(path))
        if tuned:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
        return AsyncSqliteSaver(conn)
    return make


def langgraph_postgres(url: str, schema: str) -> SaverFactory:
    async def make(stack: contextlib.AsyncExitStack) -> Any:
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        await pg_schema(url, schema, drop=False)
        stack.push_async_callback(pg_schema, url, schema, True)
        sep = "&" if "?" in url else "?"
        return await stack.enter_async_context(
            AsyncPostgresSaver.from_conn_string(f"{url}{sep}options=-csearch_path%3D{schema}"))
    return make


async def compare(workloads: list[Workload], n: int, reads: int, rounds: int = 5) -> None:
    """Each implementation appends n/rounds messages in turn, `rounds` times (the order rotating), then
    reads likewise: drift on a shared machine then hits all of them alike."""
    for w in workloads:
        await w.open()
    rnd = random.Random(1)
    try:
        for r in range(rounds):
            order = workloads[r % len(workloads):] + workloads[:r % len(workloads)]
            for w in order:
                wall0, cpu0 = time.perf_counter(), time.process_time()
                for i in range(r * n // rounds, (r + 1) * n // rounds):
                    t = time.perf_counter()
                    await w.append(i)
                    w.lat.append(time.perf_counter() - t)
                took = time.perf_counter() - wall0
                w.wall += took
                w.round_rates.append(((r + 1) * n // rounds - r * n // rounds) / took)
                w.cpu += time.process_time() - cpu0
        picks = [rnd.randrange(workloads[0].sessions) for _ in range(reads)]
        for r in range(rounds):
            for w in workloads:
                for session in picks[r * reads // rounds:(r + 1) * reads // rounds]:
                    t = time.perf_counter()
                    await w.read(session)
                    w.read_lat.append(time.perf_counter() - t)
    finally:
        for w in workloads:
            await w.close()


# ---------------------------------------------------------------------------- driver


async def pg_schema(url: str, schema: str, drop: bool) -> None:
    import asyncpg

    conn = await asyncpg.connect(url)
    try:
        sql = f'DROP SCHEMA IF EXISTS "{schema}" CASCADE' if drop else f'CREATE SCHEMA "{schema}"'
        await conn.execute(sql)
    finally:
        await conn.close()


async def run(args: argparse.Namespace) -> dict[str, Any]:
    n1, n1000, reads, saves = (200, 2000, 200, 200) if args.quick else (1000, 5000, 1000, 1000)
    share_runs = 20 if args.quick else 50
    shapes = [("1 session", 1, n1), ("1000 sessions", 1000, n1000)]
    results: dict[str, Any] = {"n": {"1 session": n1, "1000 sessions": n1000, "reads": reads}, "rows": []}
    tmp = tempfile.mkdtemp(prefix="chainreact-bench-state-")
    for backend in ("sqlite", "postgres"):
        for shape, sessions, n in shapes:
            tag = uuid.uuid4().hex[:8]
            workloads: list[Workload] = []
            if backend == "sqlite":
                workloads.append(Chainreact(sessions, f"sqlite:///{tmp}/cr-{tag}.db"))
                workloads.append(LangGraph(sessions, "langgraph",
                                           langgraph_sqlite(f"{tmp}/lg-{tag}.db", False)))
                workloads.append(LangGraph(sessions, "langgraph (WAL)",
                                           langgraph_sqlite(f"{tmp}/lgw-{tag}.db", True)))
            else:
                workloads.append(Chainreact(sessions, f"{args.postgres}?schema=bench_cr_{tag}"))
                workloads.append(LangGraph(sessions, "langgraph", langgraph_postgres(args.postgres,
                                                                                     f"bench_lg_{tag}")))
            try:
                import langgraph.checkpoint.base  # noqa: F401
            except ImportError as e:
                for w in workloads[1:]:
                    results["rows"].append({"backend": backend, "shape": shape, "impl": w.name,
                                            "error": f"n/a ({e.name} not installed)"})
                workloads = workloads[:1]
            try:
                await compare(workloads, n, reads)
            finally:
                if backend == "postgres":
                    await pg_schema(args.postgres, f"bench_cr_{tag}", drop=True)
            for w in workloads:
                row = {"backend": backend, "shape": shape, "impl": w.name, **w.summary()}
                results["rows"].append(row)
                print(format_row(row), file=sys.stderr, flush=True)
        tag = uuid.uuid4().hex[:8]
        if backend == "sqlite":
            url = f"sqlite:///{tmp}/ck-{tag}.db"
        else:
            url = f"{args.postgres}?schema=bench_ck_{tag}"
        try:
            results["rows"].append({"backend": backend, "shape": "checkpoint", "impl": "chainreact",
                                    **await checkpoint_workload(url, saves),
                                    **await checkpoint_share(url, share_runs, 7)})
        finally:
            if backend == "postgres":
                await pg_schema(args.postgres, f"bench_ck_{tag}", drop=True)
    return results


def format_row(row: dict[str, Any]) -> str:
    if "error" in row:
        return f"{row['backend']:<9} {row['shape']:<14} {row['impl']:<15} {row['error']}"
    return (f"{row['backend']:<9} {row['shape']:<14} {row['impl']:<15} {row['appends_per_s']:8.0f}/s  "
            f"append p50 {row['append_p50_ms']:6.2f} p99 {row['append_p99_ms']:6.2f} ms  "
            f"cpu {row['append_cpu_us']:5.0f} us  "
            f"read p50 {row['read_p50_ms']:6.2f} p99 {row['read_p99_ms']:6.2f} ms")


def round_ratio(mine: dict[str, Any], peer: dict[str, Any]) -> str:
    """chainreact's appends/s over the peer's: the median of the rounds' ratios [lowest-highest round]
    (in a round the two took turns, so each round's pair met the same machine)."""
    pairs = list(zip(mine.get("round_appends_per_s") or [mine["appends_per_s"]],
                     peer.get("round_appends_per_s") or [peer["appends_per_s"]], strict=False))
    return stats.fmt(stats.ratios(pairs), 1, "x")


def share_fmt(row: dict[str, Any]) -> str:
    """The checkpoint's share: median of the repetitions [lowest-highest], in %."""
    s = row.get("share_in_saves_spread")
    if not s:
        return f"{row['share_in_saves'] * 100:.1f} %"
    pct_s = {k: (v * 100 if k in ("median", "min", "max") else v) for k, v in s.items()}
    return stats.fmt(pct_s, 1, " %")


def markdown(results: dict[str, Any]) -> str:
    rows = results["rows"]
    out = ["| backend | sessions | store | appends/s | vs LangGraph | append p50 / p99 ms | CPU/append µs "
           "| read-20 p50 / p99 ms |", "|---|---|---|---:|---:|---|---:|---|"]
    for r in rows:
        if r["shape"] == "checkpoint":
            continue
        if "error" in r:
            out.append(f"| {r['backend']} | {r['shape']} | {r['impl']} | {r['error']} | | | | |")
            continue
        peers = [p for p in rows if p["backend"] == r["backend"] and p["shape"] == r["shape"]
                 and p["impl"].startswith("langgraph") and "error" not in p]
        ratio = " / ".join(round_ratio(r, p) for p in peers) if r["impl"] == "chainreact" else ""
        out.append(f"| {r['backend']} | {r['shape']} | {r['impl']} | {r['appends_per_s']:,.0f} | {ratio} | "
                   f"{r['append_p50_ms']:.2f} / {r['append_p99_ms']:.2f} | {r['append_cpu_us']:.0f} | "
                   f"{r['read_p50_ms']:.2f} / {r['read_p99_ms']:.2f} |")
    out += ["", "| backend | checkpoint saves/s | save p50 / p99 ms | CPU/save µs | load p50 / p99 ms "
            "| snapshot | run CPU ms (plain / checkpointed) | saves/run | CPU/save in a run µs "
            "| checkpoint share of run CPU: inside the saves (difference of runs) |",
            "|---|---:|---|---:|---|---:|---|---:|---:|---|"]
    for r in rows:
        if r["shape"] == "checkpoint":
            out.append(f"| {r['backend']} | {r['saves_per_s']:,.0f} | {r['save_p50_ms']:.2f} / "
                       f"{r['save_p99_ms']:.2f} | {r['save_cpu_us']:.0f} | {r['load_p50_ms']:.2f} / "
                       f"{r['load_p99_ms']:.2f} | {r['snapshot_bytes']} B | {r['run_cpu_ms']:.2f} / "
                       f"{r['run_cpu_ckpt_ms']:.2f} | {r['saves_per_run']:.0f} | "
                       f"{r['save_cpu_in_run_us']:.0f} | "
                       f"**{share_fmt(r)}** ({r['share'] * 100:.1f} %) |")
    return "\n".join(out)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--postgres", default=os.environ.get("CHAINREACT_BENCH_POSTGRES",
                                                        "postgresql://postgres@127.0.0.1:5432/test"))
    p.add_argument("--json", default=None, help="write the raw results here")
    args = p.parse_args()
    results = asyncio.run(run(args))
    results["machine"] = {"python": sys.version.split()[0], "cpus": os.cpu_count(),
                          "when": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2))
    n = results["n"]
    print(f"appends: {n['1 session']} to 1 session, {n['1000 sessions']} over 1000 sessions; "
          f"{n['reads']} window reads; {results['machine']}\n")
    print(markdown(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
