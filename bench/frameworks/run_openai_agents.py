"""openai-agents runner: `Agent(model=OpenAIChatCompletionsModel(...), tools=[function_tool])`.

Tracing is off (it would export to OpenAI's servers).
"""

from __future__ import annotations

from typing import Any

import _harness as h


def adapter() -> h.Adapter:
    h.require("agents", "openai-agents")
    from agents import Agent, OpenAIChatCompletionsModel, Runner, function_tool, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)  # tracing would export to OpenAI's servers; the benchmark stays local

    @function_tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return h.add(a, b)

    def model(url: str) -> Any:
        client = AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=h.TIMEOUT)
        return OpenAIChatCompletionsModel(model="fake-model", openai_client=client)

    def make_agent(url: str, streaming: bool) -> Any:
        return Agent(name="bench", instructions=h.SYSTEM_PROMPT, model=model(url), tools=[add])

    async def run(agent: Any, prompt: str, streaming: bool) -> str:
        if not streaming:
            return str((await Runner.run(agent, prompt)).final_output)
        result = Runner.run_streamed(agent, prompt)
        async for _ in result.stream_events():
            pass
        return str(result.final_output)

    def prepare_build(url: str) -> Any:
        return model(url), add

    def build_one(shared: Any) -> Any:
        m, tool_ = shared
        return Agent(name="bench", instructions=h.SYSTEM_PROMPT, model=m, tools=[tool_])

    return h.Adapter(name="openai-agents", package="openai-agents", make_agent=make_agent, run=run,
                     prepare_build=prepare_build, build_one=build_one, extra_versions=["openai"],
                     build_note="Agent(shared OpenAIChatCompletionsModel, tools=[shared function_tool])")


if __name__ == "__main__":
    h.main(adapter)
