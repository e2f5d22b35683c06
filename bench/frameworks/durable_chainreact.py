"""chainreact in the durable benchmark: `DurableAgent.run()` against `durable_worker(AgentHost([agent]))`.

The same `Agent` (one `@tool` add, the scripted server) runs in process and in the worker; the worker is
the library's own (`chainreact.durable.durable_worker`, as `chainreact worker` starts it).
"""

from __future__ import annotations

import uuid
from typing import Any

import _harness as h

NAME = "chainreact"
PACKAGE = "chainreact"
EXTRA_VERSIONS = ["temporalio"]


def agent(url: str) -> Any:
    from chainreact.agent import Agent
    from chainreact.tools import tool

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return h.add(a, b)

    return Agent(name="bench", instruction=h.SYSTEM_PROMPT, url=url, model="fake-model", key="x",
                 tools=[add])


class InProcess:
    def __init__(self, url: str) -> None:
        self.agent = agent(url)

    async def run(self) -> str:
        return str((await self.agent.run(h.PROMPT)).content)

    async def aclose(self) -> None:
        await self.agent.aclose()


async def connect(address: str) -> Any:
    from chainreact.durable import connect as connect_

    return await connect_(address)


def worker(client: Any, task_queue: str, url: str) -> Any:
    """An async context manager: the worker polls `task_queue` inside it."""
    from chainreact.durable import AgentHost, durable_worker

    return durable_worker(client, task_queue, AgentHost([agent(url)]))


class Caller:
    def __init__(self, client: Any, task_queue: str) -> None:
        from chainreact.durable import DurableAgent

        self.durable = DurableAgent("bench", client=client, task_queue=task_queue)

    async def run(self) -> str:
        result = await self.durable.run(h.PROMPT, run_id=f"bench-{uuid.uuid4().hex[:16]}")
        return str(result.content)
