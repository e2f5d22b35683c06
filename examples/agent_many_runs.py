"""Many runs at once in one process: 1,000 agent runs against a scripted model answering after 100 ms.

While many runs are in flight the library raises the cyclic garbage collector's young-generation
threshold and freezes what is alive (imported modules, loaded documents), and undoes both when they are
done (docs/agent.md, "Many runs in flight"); nothing to tune. `gc_tuning(False)` (or
CHAINREACT_GC_TUNING=0) switches that off.
"""

import asyncio
import gc

from chainreact import Agent, tool
from chainreact.agent import gc_tuning, runs_in_flight
from chainreact.testing import FakeLLM, tool_steps_responder

RUNS = 1000
seen: list[tuple[int, int, bool]] = []


@tool(thread=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    seen.append((runs_in_flight(), gc.get_threshold()[0], gc.get_freeze_count() > 0))
    return a + b


async def main(url: str) -> None:
    agent = Agent(name="adder", instruction="Use the add tool.", url=url, model="fake-model", tools=[add])
    print(f"before: threshold {gc.get_threshold()[0]}, frozen {gc.get_freeze_count() > 0}")
    results = await asyncio.gather(*(agent.run("add 0 and 1") for _ in range(RUNS)))
    await agent.aclose()
    done = sum(r.stop_reason == "stop" for r in results)
    busiest = max(seen)
    print(f"{done} of {RUNS} runs done")
    print(f"with {busiest[0]} runs in flight: threshold {busiest[1]}, frozen {busiest[2]}")
    print(f"after: threshold {gc.get_threshold()[0]}, frozen {gc.get_freeze_count() > 0}, "
          f"runs in flight {runs_in_flight()}")
    print(f"tuning on: {gc_tuning()}")


if __name__ == "__main__":
    with FakeLLM(tool_steps_responder(1), latency=0.1, record=False) as srv:
        asyncio.run(main(srv.url))
