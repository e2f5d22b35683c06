"""chainreact runner: `Agent(...)` with one `@tool` add, `agent.run` (plain) / `agent.stream` (streaming)."""

from __future__ import annotations

from typing import Any

import _harness as h

BUILD_NOTE = "Agent.from_config(dict) with the shared ModelClient and @tool, tools resolved"


def adapter(thread: bool = True) -> h.Adapter:
    """`thread=False`: the tool is `@tool(thread=False)` (run_chainreact_inline.py; not a suite entry)."""
    from chainreact.agent import Agent
    from chainreact.llm import ModelClient
    from chainreact.tools import tool

    @tool(thread=thread)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return h.add(a, b)

    def make_agent(url: str, streaming: bool) -> Any:
        return Agent(name="bench", instruction=h.SYSTEM_PROMPT, url=url, model="fake-model", key="x",
                     tools=[add])

    async def run(agent: Any, prompt: str, streaming: bool) -> str:
        if not streaming:
            return str((await agent.run(prompt)).content)
        final = None
        async for ev in agent.stream(prompt):  # the consumer sees every event, as a UI would
            if ev.type == "final":
                final = ev.content
        return str(final)

    def config(url: str) -> dict[str, Any]:
        return {"name": "bench", "systemPrompt": h.SYSTEM_PROMPT, "url": url, "model": "fake-model",
                "key": "x"}

    def prepare_build(url: str) -> Any:
        cfg = config(url)
        return cfg, ModelClient.from_config(Agent.from_config(cfg).config), add

    async def build_one(shared: Any) -> Any:
        cfg, client, tool_ = shared
        agent = Agent.from_config(cfg, tools=[tool_], model=client)
        await agent.tools()  # resolved and ready to run, like peers that resolve tools when built
        return agent

    async def aclose(agent: Any) -> None:
        await agent.aclose()

    return h.Adapter(name="chainreact", package="chainreact", make_agent=make_agent, run=run,
                     prepare_build=prepare_build, build_one=build_one, aclose=aclose,
                     build_note=BUILD_NOTE)


if __name__ == "__main__":
    h.main(adapter)
