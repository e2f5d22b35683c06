"""The OpenAI Agents SDK in the durable benchmark: Temporal's integration (`temporalio.openai_agents`, the
`temporalio-openai-agents` package; `temporalio.contrib.openai_agents` forwards to it).

The documented set-up: `OpenAIAgentsPlugin` on the client (the worker inherits it) with a model provider
that points the model activity at the scripted server (Chat Completions), a workflow that builds the
agent and calls `Runner.run()`. The tool is an activity (`activity_as_tool`), as Pydantic AI's and
chainreact's tool calls are: a plain `function_tool` would run inside the workflow code, not durably.
In process, the same agent with a `function_tool` and the same model provider.
"""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import Any

from temporalio import activity, workflow

with workflow.unsafe.imports_passed_through():
    import _harness as h
    from agents import Agent, Runner
    from temporalio.openai_agents.workflow import activity_as_tool

NAME = "openai-agents"
PACKAGE = "openai-agents"
EXTRA_VERSIONS = ["temporalio-openai-agents", "temporalio", "openai"]
TIMEOUT = timedelta(seconds=h.TIMEOUT)


@activity.defn(name="bench_add")
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return h.add(a, b)


@workflow.defn(name="bench_openai_agents")
class BenchWorkflow:
    @workflow.run
    async def run(self, prompt: str) -> str:
        agent = Agent(name="bench", instructions=h.SYSTEM_PROMPT, model="fake-model",
                      tools=[activity_as_tool(add, start_to_close_timeout=TIMEOUT)])
        result = await Runner.run(agent, prompt)
        return str(result.final_output)


def provider(url: str) -> Any:
    from agents import OpenAIProvider
    from openai import AsyncOpenAI

    client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=h.TIMEOUT)
    return OpenAIProvider(openai_client=client, use_responses=False)


def _quiet() -> None:
    from agents import set_tracing_disabled

    set_tracing_disabled(True)  # tracing would export to OpenAI's servers; the benchmark stays local


class InProcess:
    def __init__(self, url: str) -> None:
        from agents import RunConfig, function_tool

        _quiet()

        @function_tool
        def add_tool(a: int, b: int) -> int:
            """Add two integers."""
            return h.add(a, b)

        add_tool.name = "add"
        self.agent = Agent(name="bench", instructions=h.SYSTEM_PROMPT, model="fake-model", tools=[add_tool])
        self.config = RunConfig(model_provider=provider(url))

    async def run(self) -> str:
        return str((await Runner.run(self.agent, h.PROMPT, run_config=self.config)).final_output)

    async def aclose(self) -> None:
        return None


def _plugin(url: str) -> Any:
    from temporalio.openai_agents import ModelActivityParameters, OpenAIAgentsPlugin

    return OpenAIAgentsPlugin(model_params=ModelActivityParameters(start_to_close_timeout=TIMEOUT),
                              model_provider=provider(url))


async def connect(address: str, url: str = "") -> Any:
    import os

    from temporalio.client import Client

    _quiet()
    return await Client.connect(address, plugins=[_plugin(url or os.environ["DBENCH_MODEL_URL"])])


def worker(client: Any, task_queue: str, url: str) -> Any:
    from temporalio.worker import Worker

    return Worker(client, task_queue=task_queue, workflows=[BenchWorkflow], activities=[add])


class Caller:
    def __init__(self, client: Any, task_queue: str) -> None:
        self.client = client
        self.task_queue = task_queue

    async def run(self) -> str:
        run_id = f"bench-{uuid.uuid4().hex[:16]}"
        out = await self.client.execute_workflow(BenchWorkflow.run, h.PROMPT, id=run_id,
                                                 task_queue=self.task_queue)
        return str(out)
