"""Pydantic AI in the durable benchmark: its Temporal integration (`pydantic_ai.durable_exec.temporal`).

The documented set-up: the agent with `TemporalDurability` at module level, a workflow class listing it
in `__pydantic_ai_agents__` and calling `agent.run()`, `PydanticAIPlugin` on the client (the worker
inherits it). Model requests and tool calls run as activities.
"""

from __future__ import annotations

import uuid
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    import _harness as h
    from durable_pydantic_ai_agent import agent
    from pydantic_ai.durable_exec.temporal import PydanticAIWorkflow

NAME = "pydantic-ai"
PACKAGE = "pydantic-ai-slim"
EXTRA_VERSIONS = ["temporalio", "openai"]


@workflow.defn(name="bench_pydantic_ai")
class BenchWorkflow(PydanticAIWorkflow):
    __pydantic_ai_agents__ = [agent]

    @workflow.run
    async def run(self, prompt: str) -> str:
        result = await agent.run(prompt)
        return str(result.output)


class InProcess:
    def __init__(self, url: str) -> None:
        self.agent = agent  # the same object, outside a workflow: a plain in-process run

    async def run(self) -> str:
        return str((await self.agent.run(h.PROMPT)).output)

    async def aclose(self) -> None:
        return None


async def connect(address: str) -> Any:
    from pydantic_ai.durable_exec.temporal import PydanticAIPlugin
    from temporalio.client import Client

    return await Client.connect(address, plugins=[PydanticAIPlugin()])


def worker(client: Any, task_queue: str, url: str) -> Any:
    from temporalio.worker import Worker

    return Worker(client, task_queue=task_queue, workflows=[BenchWorkflow])


class Caller:
    def __init__(self, client: Any, task_queue: str) -> None:
        self.client = client
        self.task_queue = task_queue

    async def run(self) -> str:
        run_id = f"bench-{uuid.uuid4().hex[:16]}"
        out = await self.client.execute_workflow(BenchWorkflow.run, h.PROMPT, id=run_id,
                                                 task_queue=self.task_queue)
        return str(out)
