"""What making a run plan costs: docs/architecture.md's "about N µs of CPU per run".

    python bench/plan_cost.py [--rounds 5] [--calls 20000]

`await agent.plan()` of an agent with one tool (what every run does before its first model call), after
1,000 warm-up calls; CPU per call, median [lowest-highest round].
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import stats

from chainreact.agent import Agent
from chainreact.tools import tool


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def measure(rounds: int, calls: int) -> list[float]:
    # The url is never called: a plan names the endpoint, it does not connect.
    agent = Agent(name="plan", instruction="Add numbers.", url="http://127.0.0.1:9/v1", model="m", key="k",
                  tools=[add])
    try:
        for _ in range(1000):
            await agent.plan()
        out = []
        for _ in range(rounds):
            t = time.process_time()
            for _ in range(calls):
                await agent.plan()
            out.append((time.process_time() - t) / calls * 1e6)
        return out
    finally:
        await agent.aclose()


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--calls", type=int, default=20000)
    args = p.parse_args()
    r = asyncio.run(measure(args.rounds, args.calls))
    print(f"agent.plan(): {stats.fmt(stats.spread(r), 1, ' us')} of CPU per call, "
          f"{args.rounds} rounds of {args.calls:,}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
