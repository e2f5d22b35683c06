"""Streaming a run: typed events as they happen, and the detection mode for text before tool calls."""

import asyncio

from chainreact import Agent, tool
from chainreact.testing import FakeLLM
from chainreact.types import Final, Preamble, TextDelta, ToolCallEvent, ToolResultEvent


@tool
def weather(city: str) -> str:
    """Current weather for a city."""
    return f"{city}: 21°C, clear"


SCRIPT = [
    # Some models say something before calling a tool; auto mode holds text 500 ms to find out.
    {"text": "Let me look that up. ", "tool_calls": [{"name": "weather", "arguments": {"city": "Lyon"}}],
     "tool_delay": 0.1},
    {"text": "It is 21°C and clear in Lyon.", "chunks": 6, "chunk_delay": 0.05},
]


async def main() -> None:
    with FakeLLM(SCRIPT) as server:
        agent = Agent(name="weather", url=server.url, model="fake-model", tools=[weather],
                      stream_tool_call_check="")  # "" = auto; also "firstContent" or "drain"
        async for ev in agent.stream("Weather in Lyon?"):
            if isinstance(ev, TextDelta):
                print(ev.text, end="", flush=True)
            elif isinstance(ev, ToolCallEvent):
                print(f"\n→ {ev.call.name}({ev.call.arguments})")
            elif isinstance(ev, ToolResultEvent):
                print(f"← {ev.content}")
            elif isinstance(ev, Preamble):
                print(f"\n(the text above was a preamble to tool calls: {ev.text!r})")
            elif isinstance(ev, Final):
                print(f"\n[final: {ev.stop_reason}, {ev.usage.total_tokens} tokens, seq {ev.seq}]")
        await agent.aclose()


if __name__ == "__main__":
    asyncio.run(main())
