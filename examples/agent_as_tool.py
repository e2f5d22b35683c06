"""One agent as a tool of another, with the inner agent's events streamed live."""

import asyncio

from chainreact import Agent
from chainreact.testing import FakeLLM
from chainreact.types import TextDelta


async def main() -> None:
    with FakeLLM([{"text": "Paris has about 2.1 million inhabitants.", "chunks": 4}]) as inner_llm, \
         FakeLLM([{"tool_calls": [{"name": "researcher", "arguments": {"request": "Population of Paris?"}}]},
                  {"text": "My researcher says: about 2.1 million."}]) as outer_llm:
        researcher = Agent(name="researcher", description="Looks up facts.", url=inner_llm.url,
                           model="fake-model")
        boss = Agent(name="boss", url=outer_llm.url, model="fake-model",
                     tools=[researcher.as_tool(emit_internal_events=True)])
        async for ev in boss.stream("How many people live in Paris?"):
            if isinstance(ev, TextDelta):
                print(f"[{'/'.join(ev.path)}] {ev.text}")


if __name__ == "__main__":
    asyncio.run(main())
