"""Middleware: a permission check around tool calls, history trimming before model calls, and timing."""

import asyncio
import time

from chainreact import Agent, Middleware, tool
from chainreact.agent import RunState, ToolCallInfo
from chainreact.testing import FakeLLM
from chainreact.tools import ToolOutput


@tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


@tool
def list_files() -> str:
    """List files."""
    return "a.txt b.txt"


class Permissions(Middleware):
    """Refuse dangerous tools; the model gets an error result and carries on."""

    def wrap_tool_call(self, call, info: ToolCallInfo):
        if info.name != "delete_file":
            return call

        async def refuse(args):
            return ToolOutput(f"Error: {info.name} is not allowed here", is_error=True)
        return refuse


class KeepRecent(Middleware):
    """Keep the system prompt and the last 20 messages (the change persists into later steps)."""

    async def before_model(self, state: RunState) -> None:
        if len(state.messages) > 21:
            state.messages[1:-20] = []


class Timing(Middleware):
    """Time every model attempt (wrap_model sits inside retries: each attempt is timed)."""

    def wrap_model(self, call):
        async def timed(request):
            t0 = time.perf_counter()
            async for item in call(request):
                yield item
            print(f"  model attempt on {request.endpoint}: {1000 * (time.perf_counter() - t0):.1f} ms")
        return timed


SCRIPT = [
    {"tool_calls": [{"name": "list_files", "arguments": {}},
                    {"name": "delete_file", "arguments": {"path": "a.txt"}}]},
    {"text": "I listed the files; deleting is not permitted."},
]


async def main() -> None:
    with FakeLLM(SCRIPT) as server:
        agent = Agent(name="files", url=server.url, model="fake-model", tools=[delete_file, list_files],
                      middleware=[Timing(), Permissions(), KeepRecent()])
        result = await agent.run("Clean up a.txt")
        for m in result.messages:
            if m.role == "tool":
                print(f"  tool result: {m.content}")
        print(result.content)


if __name__ == "__main__":
    asyncio.run(main())
