"""pydantic-ai runner: `Agent(OpenAIChatModel(...), tools=[add])`; `run` / `run_stream_events`."""

from __future__ import annotations

from typing import Any

import _harness as h


def adapter() -> h.Adapter:
    h.require("pydantic_ai", "pydantic-ai-slim[openai]")
    from openai import AsyncOpenAI
    from pydantic_ai import Agent, AgentRunResultEvent, Tool
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return h.add(a, b)

    def model(url: str) -> Any:
        client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=h.TIMEOUT)
        return OpenAIChatModel("fake-model", provider=OpenAIProvider(openai_client=client))

    def make_agent(url: str, streaming: bool) -> Any:
        return Agent(model(url), instructions=h.SYSTEM_PROMPT, tools=[add])

    async def run(agent: Any, prompt: str, streaming: bool) -> str:
        if not streaming:
            return str((await agent.run(prompt)).output)
        final = None
        async with agent.run_stream_events(prompt) as events:
            async for ev in events:
                if isinstance(ev, AgentRunResultEvent):
                    final = ev.result.output
        return str(final)

    def prepare_build(url: str) -> Any:
        return model(url), Tool(add)

    def build_one(shared: Any) -> Any:
        m, tool_ = shared
        return Agent(m, instructions=h.SYSTEM_PROMPT, tools=[tool_])

    return h.Adapter(name="pydantic-ai", package="pydantic-ai-slim", make_agent=make_agent, run=run,
                     prepare_build=prepare_build, build_one=build_one, extra_versions=["openai"],
                     build_note="Agent(shared OpenAIChatModel, tools=[shared Tool])")


if __name__ == "__main__":
    h.main(adapter)
