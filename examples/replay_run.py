"""A recorded run becomes an offline test: record it with a store, export its cassette, replay it.

The same from the command line:
    chainreact run agent.json "What is 2 + 3?" --state sqlite:///runs.db
    chainreact runs export RUN_ID --state sqlite:///runs.db --out tests/cassettes/add.json
    chainreact replay tests/cassettes/add.json            # exit 0: the run follows the recording
    chainreact replay tests/cassettes/add.json --live-tools --json

Runs against the scripted model (chainreact.testing.FakeLLM), which is stopped before the replay: the
replay needs no model.
"""

from __future__ import annotations

import asyncio
import json
import tempfile
from pathlib import Path

from chainreact import Agent, tool
from chainreact.replay import export_run, save_cassette
from chainreact.state import open_store
from chainreact.state.runs import run_with_store
from chainreact.testing import FakeLLM, areplay


@tool(thread=False)
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add", thread=False)
def add_off_by_one(a: int, b: int) -> int:
    """Add two integers."""
    return a + b + 1  # a regression


def calculator(url: str, adder: object = add) -> Agent:
    return Agent(name="calc", instruction="You add numbers.", url=url, key="sk-demo-0123456789abcdefgh",
                 model="fake-model", tools=[adder])


async def main(folder: Path) -> None:
    script = [{"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}, "id": "call_add"}]},
              {"text": "2 + 3 = 5"}]
    async with FakeLLM(script) as srv, await open_store(f"sqlite:///{folder}/runs.db") as store:
        result = await run_with_store(calculator(srv.url), store, "What is 2 + 3?")
        cassette = await export_run(store, str(result.metadata["run_id"]))
    path = save_cassette(cassette, folder / "add.cassette.json")
    steps = cassette["agents"][0]["steps"]
    print(f"recorded: {len(steps)} model calls, answer {cassette['answer']!r}")
    print("the key is in the cassette:", "sk-demo" in path.read_text())
    print("first tool call:", json.dumps(steps[0]["tools"][0]))

    # The model server is gone: the replay answers from the cassette.
    ok = await areplay(path, agent=calculator("http://127.0.0.1:9/v1"))
    print(ok.report(), end="")

    # The tool regressed: with its results taken live, the replay says where.
    broken = await areplay(path, agent=calculator("http://127.0.0.1:9/v1", add_off_by_one), live_tools=True)
    print(broken.report(), end="")
    print("as JSON:", json.dumps({k: broken.to_dict()[k] for k in ("ok", "answer", "steps")}))


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(Path(tmp)))
