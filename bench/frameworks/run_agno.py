"""Agno runner: `Agent(model=OpenAILike(...), tools=[add])`; `arun` / `arun(stream=True)`. Telemetry off."""

from __future__ import annotations

import os
from typing import Any

import _harness as h

BUILD_NOTE = "Agent(model=shared OpenAILike, tools=[add]) (agno resolves tools at run time)"


def adapter() -> h.Adapter:
    os.environ["AGNO_TELEMETRY"] = "false"  # agno reports runs to its API by default; stay local
    h.require("agno", "agno")
    from agno.agent import Agent
    from agno.models.openai.like import OpenAILike

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return h.add(a, b)

    def model(url: str) -> Any:
        return OpenAILike(id="fake-model", base_url=url, api_key="x", max_retries=0, timeout=h.TIMEOUT)

    def agent_of(m: Any, tool_: Any) -> Any:
        return Agent(model=m, instructions=h.SYSTEM_PROMPT, tools=[tool_], telemetry=False)

    def make_agent(url: str, streaming: bool) -> Any:
        return agent_of(model(url), add)

    async def run(agent: Any, prompt: str, streaming: bool) -> str:
        if not streaming:
            return str((await agent.arun(prompt)).content)
        parts: list[str] = []
        final = None
        async for ev in agent.arun(prompt, stream=True):
            kind = getattr(ev, "event", None)
            if kind == "RunContent" and isinstance(ev.content, str):
                parts.append(ev.content)
            elif kind == "RunCompleted":
                final = ev.content
        # agno's streamed RunCompleted carries no content; the answer is the sum of the deltas.
        return str(final) if final is not None else "".join(parts)

    def prepare_build(url: str) -> Any:
        return model(url), add

    def build_one(shared: Any) -> Any:
        return agent_of(*shared)

    return h.Adapter(name="agno", package="agno", make_agent=make_agent, run=run,
                     prepare_build=prepare_build, build_one=build_one, extra_versions=["openai"],
                     build_note=BUILD_NOTE)


if __name__ == "__main__":
    h.main(adapter)
