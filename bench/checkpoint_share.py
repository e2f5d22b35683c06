"""The checkpoint's share of a run, alone: docs/state.md's "As a share of a run's CPU" figures.

    python bench/checkpoint_share.py [--rounds 6] [--runs 50] [--reps 7] [--postgres URL | --no-postgres]

bench/state.py's checkpoint-share workload (a chainreact Agent, 3 tool steps against the scripted server,
with and without the loop's checkpoint hook saving to the store at its 6 safe points) without the append
workloads around it, each round in a fresh process on a fresh database. Published per backend: the share
of the checkpointing runs' CPU spent inside the saves and the CPU of one save in a run, median
[lowest-highest round].
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats

PG = os.environ.get("CHAINREACT_BENCH_POSTGRES", "postgresql://postgres@127.0.0.1:5432/test")


def one(backend: str, runs: int, reps: int, pg: str) -> dict[str, float]:
    import state

    with tempfile.TemporaryDirectory(prefix="chainreact-ckshare-") as tmp:
        tag = uuid.uuid4().hex[:8]
        if backend == "sqlite":
            return asyncio.run(state.checkpoint_share(f"sqlite:///{tmp}/ck-{tag}.db", runs, reps))

        async def on_pg() -> dict[str, float]:
            try:
                return await state.checkpoint_share(f"{pg}?schema=bench_ck_{tag}", runs, reps)
            finally:
                await state.pg_schema(pg, f"bench_ck_{tag}", drop=True)

        return asyncio.run(on_pg())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=6)
    p.add_argument("--runs", type=int, default=50, help="runs per batch")
    p.add_argument("--reps", type=int, default=7, help="interleaved batch pairs per round")
    p.add_argument("--postgres", default=PG)
    p.add_argument("--no-postgres", action="store_true")
    p.add_argument("--one", choices=("sqlite", "postgres"), help=argparse.SUPPRESS)  # a round, in a child
    args = p.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.runs, args.reps, args.postgres)))
        return 0
    backends = ["sqlite"] + ([] if args.no_postgres else ["postgres"])
    rows: dict[str, list[dict[str, float]]] = {b: [] for b in backends}
    load = os.getloadavg()[0]
    for i in range(args.rounds):
        for b in backends:  # interleaved, so the machine's drift hits both alike
            out = subprocess.run([sys.executable, __file__, "--one", b, "--runs", str(args.runs), "--reps",
                                  str(args.reps), "--postgres", args.postgres],
                                 capture_output=True, text=True, check=True)
            rows[b].append(json.loads(out.stdout.strip().splitlines()[-1]))
            r = rows[b][-1]
            print(f"[checkpoint-share] round {i + 1} {b}: {r['share_in_saves'] * 100:.1f} % in the saves, "
                  f"{r['save_cpu_in_run_us']:.0f} us per save, run {r['run_cpu_ms']:.2f} / "
                  f"{r['run_cpu_ckpt_ms']:.2f} ms", file=sys.stderr, flush=True)
    print(f"{args.rounds} rounds of {args.reps} x {args.runs} runs, load average {load:.1f} / "
          f"{os.getloadavg()[0]:.1f}\n")
    print("| backend | share inside the saves | CPU per save in a run | run CPU plain / checkpointed |")
    print("|---|---|---|---|")
    for b, rs in rows.items():
        share = stats.spread(r["share_in_saves"] * 100 for r in rs)
        save = stats.spread(r["save_cpu_in_run_us"] for r in rs)
        plain, ck = stats.spread(r["run_cpu_ms"] for r in rs), stats.spread(r["run_cpu_ckpt_ms"] for r in rs)
        print(f"| {b} | {stats.fmt(share, 1, ' %')} | {stats.fmt(save, 0, ' us')} | "
              f"{stats.fmt(plain, 2)} / {stats.fmt(ck, 2)} ms |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
