"""A programmatic agent with one Python tool.

Runs against chainreact's scripted server by default (so it works offline and in CI). Point it at a
real endpoint with CHAINREACT_URL, CHAINREACT_KEY and CHAINREACT_MODEL.
"""

import os

from chainreact import Agent, tool
from chainreact.testing import FakeLLM


# thread=False: a quick function that never waits is called on the event loop (a sync tool otherwise runs
# in a worker thread, so a blocking one cannot stall other runs); see docs/tools.md.
@tool(thread=False)
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first number
        b: the second number
    """
    return a + b


SCRIPT = [  # what the scripted model will answer, turn by turn
    {"tool_calls": [{"name": "add", "arguments": {"a": 19, "b": 23}}]},
    {"text": "19 + 23 = 42."},
]


def main(url: str, key: str = "", model: str = "fake-model") -> None:
    agent = Agent(name="calculator", instruction="Use the add tool for arithmetic.",
                  url=url, key=key, model=model, tools=[add])
    result = agent.run_sync("What is 19 + 23?")
    print(result.content)
    print(f"steps={result.steps} stop_reason={result.stop_reason} tokens={result.usage.total_tokens}")
    for m in result.messages:
        print(f"  {m.role:9} {m.text or [tc.name + tc.arguments for tc in m.tool_calls or []]}")


if __name__ == "__main__":
    if os.environ.get("CHAINREACT_URL"):
        main(os.environ["CHAINREACT_URL"], os.environ.get("CHAINREACT_KEY", ""),
             os.environ.get("CHAINREACT_MODEL", ""))
    else:
        with FakeLLM(SCRIPT) as server:
            main(server.url)
