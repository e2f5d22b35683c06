"""Cancelling a run at a safe point, and resuming from its history."""

import asyncio

from chainreact import Agent, tool
from chainreact.testing import FakeLLM
from chainreact.types import ToolCallEvent


@tool
async def slow_search(query: str) -> str:
    """Search (slowly)."""
    await asyncio.sleep(0.2)
    return f"3 results for {query}"


SCRIPT = [
    {"tool_calls": [{"name": "slow_search", "arguments": {"query": "chainreact"}}]},
    {"text": "Resumed: I found 3 results."},
]


async def main() -> None:
    with FakeLLM(SCRIPT) as server:
        agent = Agent(name="searcher", url=server.url, model="fake-model", tools=[slow_search])
        run = agent.start("Search for chainreact")
        async for ev in run:
            if isinstance(ev, ToolCallEvent):
                # Let the tool finish, then stop; after 1 s a pending cancel would become immediate.
                handle = run.cancel("after_tools", timeout=1.0)
        print("cancel outcome:", await handle.wait())
        cancelled = await run.result()
        print("stop_reason:", cancelled.stop_reason, "| last message:", cancelled.messages[-1].content)

        history = [m.to_openai() for m in cancelled.messages]
        resumed = await agent.run({"messages": [*history, {"role": "user", "content": "Go on."}]})
        print(resumed.content)


if __name__ == "__main__":
    asyncio.run(main())
