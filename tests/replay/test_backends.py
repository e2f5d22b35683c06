"""Recording, export and replay on both store backends (SQLite and a real PostgreSQL server): an agent run
(its recording in the snapshot) and a flow turn (in the session's event log, with its reads)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact.agent import Agent
from chainreact.flows import Flow
from chainreact.replay import export_run, replay
from chainreact.state import open_store
from chainreact.state.runs import run_with_store
from chainreact.testing import FakeLLM
from tests.flows.test_memory import chat_flow, reply
from tests.state.conftest import store_url  # noqa: F401  (the fixture: sqlite and postgres)

from .conftest import SCRIPT, write_agent


async def test_agent_runs_and_flow_turns_on_each_backend(store_url: str, tmp_path: Path) -> None:  # noqa: F811
    async with FakeLLM([*SCRIPT, reply(1), reply(2)]) as srv, await open_store(store_url) as store:
        doc = write_agent(tmp_path / "agent", srv.url)
        agent = Agent.from_config(str(doc))
        result = await run_with_store(agent, store, "What is 2 + 3?")
        await agent.aclose()
        run = await export_run(store, str(result.metadata["run_id"]))
        flow_doc = tmp_path / "chat.json"
        flow_doc.write_text(json.dumps(chat_flow(srv.url)))
        async with Flow.load(flow_doc, store=store) as flow:
            for text in ("m1", "m2"):
                await flow.send("s", text, user={"id": "u1"})
        turn = await export_run(store, "flow:chat:s")
    assert run["answer"] == "2 + 3 = 5" and len(run["agents"][0]["steps"]) == 2
    result_: Any = await replay(run, agent=str(doc))
    assert result_.ok, result_.report()
    # The second turn read the first one's messages from the store; the replay gets them from the cassette.
    history = next(r["result"] for r in turn["reads"] if r["op"] == "history")
    assert [m["content"] for m in history] == ["m1", '{"response": "r1"}']
    result_ = await replay(turn)
    assert result_.ok, result_.report()
    assert result_.answer == "r2"
