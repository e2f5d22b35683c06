"""The state store: a conversation, long-term memory, and a run checkpoint with its event log.

Runs against a temporary SQLite file; point it at PostgreSQL with
    CHAINREACT_STATE=postgresql://postgres@127.0.0.1:5432/test python examples/state_basic.py
"""

from __future__ import annotations

import asyncio
import os
import tempfile

from chainreact.state import open_store
from chainreact.state.checkpoint import Question, RunSnapshot, ToolOutcome, load_snapshot, save_snapshot
from chainreact.types import Message, ToolCall
from chainreact.types.messages import assistant, tool_result, user


async def main(url: str) -> None:
    async with await open_store(url) as store:
        # A conversation: the window keeps the tool call and its result together.
        await store.append("customer-42", [
            user("What is the weather in Lyon?"),
            assistant(None, [ToolCall("c1", "weather", '{"city": "Lyon"}')]),
            tool_result("c1", "21°C, clear", name="weather"),
            assistant("It is 21°C and clear in Lyon."),
        ])
        window = await store.history("customer-42", last=2)
        print("last 2 ->", [m.role for m in window])  # the orphaned tool result is left out
        print("last 3 ->", [m.role for m in await store.history("customer-42", last=3)])

        # Long-term memory with full-text ranking.
        await store.remember("The user prefers window seats on trains", scope="planner")
        await store.remember("The user's dog is called Biscuit", scope="global")
        best = (await store.recall("which seat on the train?", k=1, scope="planner"))[0]
        print(f"recall -> {best.text}")

        # A run that stopped to ask the user, saved at a safe point, and its events.
        calls = [ToolCall("c1", "weather", '{"city": "Lyon"}'), ToolCall("c2", "ask_user", '{"q": "Unit?"}')]
        snap = RunSnapshot(
            run_id="run-1", status="interrupted", step=1, agent="helper", session="customer-42",
            messages=[user("Weather in Lyon?"), Message("assistant", None, calls),
                      tool_result("c1", "21", name="weather")],
            pending_tool_calls=calls, completed_tool_results={"c1": ToolOutcome("21")},
            questions=[Question("c2", "ask_user", "Celsius or Fahrenheit?", {"enum": ["C", "F"]})])
        await save_snapshot(store, snap)
        await store.append_events("run-1", [("run_start", {"input": "Weather in Lyon?"}),
                                            ("interrupted", {"questions": ["c2"]})])
        loaded, version = await load_snapshot(store, "run-1")
        print(f"run-1 {loaded.status} v{version}: still to run {[c.name for c in loaded.calls_to_run]}")
        print("events after 1 ->", [e.type for e in await store.events("run-1", after=1)])
        info = await store.info()
        print(f"{info.backend} schema v{info.schema_version}: {info.counts}")


if __name__ == "__main__":
    url = os.environ.get("CHAINREACT_STATE")
    if url:
        asyncio.run(main(url))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(main(f"sqlite:///{tmp}/state.db"))
