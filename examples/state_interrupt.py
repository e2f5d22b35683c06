"""Asking the user and approving a tool call, with the run saved in a store and resumed from it.

The agent document lists the builtin `ask_user` tool and a tool with `"requireApproval": true`. The run
stops twice; each time a new Agent (as another process would build it) resumes it with the answers.
Runs against a temporary SQLite file (set CHAINREACT_STATE for PostgreSQL).
"""

from __future__ import annotations

import asyncio
import os
import tempfile

from chainreact import Agent
from chainreact.state import StateError, open_store
from chainreact.testing import FakeLLM

removed: list[str] = []
looked_up: list[str] = []


def remove_backup(name: str) -> str:
    """Remove a backup by name."""
    removed.append(name)
    return f"removed {name}"


def list_backups(keep: int) -> str:
    """List the backups beyond the newest `keep`."""
    looked_up.append(str(keep))
    return "nightly-01, nightly-02"


def document(url: str) -> dict[str, object]:
    return {"id": "ops", "type": "ai/agent", "name": "ops", "configuration": {
        "url": url, "key": "k", "model": "fake-model", "systemPrompt": "You tidy backups.",
        "tools": ["ask_user",
                  {"type": "python", "name": "list_backups", "config": {"function": "__main__:list_backups"}},
                  {"type": "python", "name": "remove_backup", "requireApproval": True,
                   "config": {"function": "__main__:remove_backup"}}]}}


SCRIPT = [
    # One step, two calls: the listing needs no input and runs once; the question stops the run.
    {"tool_calls": [{"id": "l", "name": "list_backups", "arguments": {"keep": 3}},
                    {"id": "q", "name": "ask_user", "arguments": {
                        "question": "How many backups should I keep?", "schema": {"type": "integer"}}}]},
    {"tool_calls": [{"id": "r", "name": "remove_backup", "arguments": {"name": "nightly-01"}}]},
    {"text": "Kept the newest 3 backups and removed nightly-02."},
]


async def main(url: str) -> None:
    with FakeLLM(SCRIPT) as llm:
        async with await open_store(url) as store:
            first = await store.run_agent(Agent.from_config(document(llm.url)), "Tidy the backups")
            run_id = first.metadata["run_id"]
            q = first.interruption.questions[0]
            print(f"1. {first.stop_reason}: [{q.kind}] {q.question} schema={q.schema}")
            try:
                await Agent.from_config(document(llm.url)).resume(run_id, {q.id: "three"}, store=store)
            except StateError as e:
                print(f"   refused: {e}")
            second = await Agent.from_config(document(llm.url)).resume(run_id, {q.id: 3}, store=store)
            q = second.interruption.questions[0]
            print(f"2. {second.stop_reason}: [{q.kind}] {q.question}")
            edit = {"arguments": {"name": "nightly-02"}}
            final = await Agent.from_config(document(llm.url)).resume(run_id, {q.id: edit}, store=store)
            print(f"3. {final.stop_reason}: {final.content}")
            print(f"removed {removed}; list_backups ran {len(looked_up)} time(s); "
                  f"run is {(await store.load_run(run_id)).status}")


if __name__ == "__main__":
    with tempfile.TemporaryDirectory() as tmp:
        asyncio.run(main(os.environ.get("CHAINREACT_STATE") or f"sqlite:///{tmp}/state.db"))
