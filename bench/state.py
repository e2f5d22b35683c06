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

Measures: appends per second (wall clock, one task, awaited one by one: the latency a run waits for),
p50/p99 latency of append and of the window read, and CPU per append (`time.process_time`, this
process only: the PostgreSQL server's CPU is not in it). The ratio chainreact/LangGraph is the figure
to compare across machines. Needs `pip install -e '.[postgres,bench]'` (LangGraph's checkpointers are in
the bench extra); a peer that is missing is reported as n/a.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

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


async def chainreact_workload(url: str, sessions: int, n: int, reads: int) -> dict[str, float]:
    keys = [f"s{i}" for i in range(sessions)]
    async with await open_store(url) as store:
        appends = await timed(lambda i: store.append(keys[i % sessions], user(TEXT.format(i=i))), n)
        rnd = random.Random(1)

        async def read(_: int) -> None:
            got = await store.history(rnd.choice(keys), last=WINDOW)
            assert got, "empty window"
        r = (await timed(read, reads))[0]
    return summary(appends, r)


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


# ---------------------------------------------------------------------------- LangGraph


async def langgraph_workload(saver: Any, sessions: int, n: int, reads: int) -> dict[str, float]:
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint

    threads = [f"t{uuid.uuid4().hex[:8]}-{i}" for i in range(sessions)]
    state: dict[str, tuple[Any, list[dict[str, str]], dict[str, Any]]] = {}

    async def append(i: int) -> None:
        thread = threads[i % sessions]
        prev = state.get(thread)
        if prev is None:
            ckpt, msgs = empty_checkpoint(), []
            config: dict[str, Any] = {"configurable": {"thread_id": thread, "checkpoint_ns": ""}}
        else:
            ckpt, msgs, config = prev
        msgs = [*msgs, {"role": "user", "content": TEXT.format(i=i)}]
        new = create_checkpoint(ckpt, None, len(msgs))
        version = saver.get_next_version(ckpt["channel_versions"].get("messages"), None)
        new["channel_values"] = {"messages": msgs}
        new["channel_versions"] = {"messages": version}
        config = await saver.aput(config, new, {"source": "loop", "step": len(msgs), "parents": {}},
                                  {"messages": version})
        state[thread] = (new, msgs, config)

    appends = await timed(append, n)
    rnd = random.Random(1)

    async def read(_: int) -> None:
        config = {"configurable": {"thread_id": rnd.choice(threads), "checkpoint_ns": ""}}
        tup = await saver.aget_tuple(config)
        window = tup.checkpoint["channel_values"]["messages"][-WINDOW:]
        assert window, "empty window"
    r = (await timed(read, reads))[0]
    return summary(appends, r)


async def langgraph_sqlite(path: str, sessions: int, n: int, reads: int, tuned: bool) -> dict[str, float]:
    """`tuned`: the connection gets chainreact's pragmas (WAL, synchronous=NORMAL); the async saver's
    own default is a rollback journal with synchronous=FULL, an fsync per commit."""
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    async with aiosqlite.connect(path) as conn:
        if tuned:
            await conn.execute("PRAGMA journal_mode=WAL")
            await conn.execute("PRAGMA synchronous=NORMAL")
        saver = AsyncSqliteSaver(conn)
        await saver.setup()
        return await langgraph_workload(saver, sessions, n, reads)


async def langgraph_postgres(url: str, schema: str, sessions: int, n: int, reads: int) -> dict[str, float]:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    sep = "&" if "?" in url else "?"
    async with AsyncPostgresSaver.from_conn_string(f"{url}{sep}options=-csearch_path%3D{schema}") as saver:
        await saver.setup()
        return await langgraph_workload(saver, sessions, n, reads)


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
    shapes = [("1 session", 1, n1), ("1000 sessions", 1000, n1000)]
    results: dict[str, Any] = {"n": {"1 session": n1, "1000 sessions": n1000, "reads": reads}, "rows": []}
    tmp = tempfile.mkdtemp(prefix="chainreact-bench-state-")
    for backend in ("sqlite", "postgres"):
        for shape, sessions, n in shapes:
            impls = ("chainreact", "langgraph", "langgraph (WAL)") if backend == "sqlite" else \
                ("chainreact", "langgraph")
            for impl in impls:
                tag = uuid.uuid4().hex[:8]
                row: dict[str, Any] = {"backend": backend, "shape": shape, "impl": impl}
                try:
                    if impl == "chainreact" and backend == "sqlite":
                        row |= await chainreact_workload(f"sqlite:///{tmp}/cr-{tag}.db", sessions, n, reads)
                    elif impl == "chainreact":
                        schema = f"bench_cr_{tag}"
                        try:
                            row |= await chainreact_workload(f"{args.postgres}?schema={schema}", sessions, n,
                                                             reads)
                        finally:
                            await pg_schema(args.postgres, schema, drop=True)
                    elif backend == "sqlite":
                        row |= await langgraph_sqlite(f"{tmp}/lg-{tag}.db", sessions, n, reads,
                                                      tuned=impl != "langgraph")
                    else:
                        schema = f"bench_lg_{tag}"
                        await pg_schema(args.postgres, schema, drop=False)
                        try:
                            row |= await langgraph_postgres(args.postgres, schema, sessions, n, reads)
                        finally:
                            await pg_schema(args.postgres, schema, drop=True)
                except ImportError as e:
                    row["error"] = f"n/a ({e.name} not installed)"
                results["rows"].append(row)
                print(format_row(row), file=sys.stderr, flush=True)
        tag = uuid.uuid4().hex[:8]
        if backend == "sqlite":
            url = f"sqlite:///{tmp}/ck-{tag}.db"
        else:
            url = f"{args.postgres}?schema=bench_ck_{tag}"
        try:
            results["rows"].append({"backend": backend, "shape": "checkpoint", "impl": "chainreact",
                                    **await checkpoint_workload(url, saves)})
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
        ratio = " / ".join(f"{r['appends_per_s'] / p['appends_per_s']:.2f}x" for p in peers) \
            if r["impl"] == "chainreact" else ""
        out.append(f"| {r['backend']} | {r['shape']} | {r['impl']} | {r['appends_per_s']:,.0f} | {ratio} | "
                   f"{r['append_p50_ms']:.2f} / {r['append_p99_ms']:.2f} | {r['append_cpu_us']:.0f} | "
                   f"{r['read_p50_ms']:.2f} / {r['read_p99_ms']:.2f} |")
    out += ["", "| backend | checkpoint saves/s | save p50 / p99 ms | CPU/save µs | load p50 / p99 ms "
            "| snapshot |", "|---|---:|---|---:|---|---:|"]
    for r in rows:
        if r["shape"] == "checkpoint":
            out.append(f"| {r['backend']} | {r['saves_per_s']:,.0f} | {r['save_p50_ms']:.2f} / "
                       f"{r['save_p99_ms']:.2f} | {r['save_cpu_us']:.0f} | {r['load_p50_ms']:.2f} / "
                       f"{r['load_p99_ms']:.2f} | {r['snapshot_bytes']} B |")
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
