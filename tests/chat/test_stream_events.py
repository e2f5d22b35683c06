"""The flow's event stream with `agent_events=True` (what `chainreact chat` shows) and `Flow.reset`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact.flows import Flow
from tests.flows.test_engine import USER

from .helpers import answer, chat_flow, orders_server


async def test_agent_events_arrive_in_order_inside_the_turn(fake_llm: Any, tmp_path: Path) -> None:
    with orders_server() as orders:
        srv = fake_llm([
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "7"}}]},
            answer({"response": "Order 7 is late.", "resolved": False}, chunks=4),
        ])
        async with Flow.from_dict(chat_flow(srv.url, orders.url), state=f"sqlite:///{tmp_path}/s.db") as flow:
            events = [ev async for ev in flow.stream("s", "where is 7", user=USER, agent_events=True)]
    kinds = [(ev.type, ev.data["agent_event"].type if ev.type == "agent" else None) for ev in events]
    agent_kinds = [k for t, k in kinds if t == "agent"]
    assert agent_kinds[0] == "run_start" and "final" in agent_kinds
    assert agent_kinds.index("tool_call") < agent_kinds.index("tool_result") < agent_kinds.index("text_delta")
    deltas = "".join(ev.data["agent_event"].text for ev in events
                     if ev.type == "agent" and ev.data["agent_event"].type == "text_delta")
    assert json.loads(deltas) == {"response": "Order 7 is late.", "resolved": False}
    # The agent's events come before the node's output and message, all before turn_end.
    last_agent = max(i for i, (t, _) in enumerate(kinds) if t == "agent")
    assert [t for t, _ in kinds[last_agent + 1:]] == ["output", "message", "turn_end"]
    assert all(ev.node == "support" for ev in events if ev.type == "agent")
    # to_dict: the agent's event in its own JSON form.
    d = next(ev.to_dict() for ev in events if ev.type == "agent")
    assert d["event"] == "agent" and d["node"] == "support" and d["agent_event"]["type"] == "run_start"
    json.dumps(d)  # JSON as it is (`flow send --jsonl` writes these)
    assert srv.chat_requests[0].body["stream"] is True


async def test_without_agent_events_the_stream_is_unchanged(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([answer({"response": "Hi.", "resolved": False})])
    doc = chat_flow(srv.url, "http://127.0.0.1:9")
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as f:
        types = [ev.type async for ev in f.stream("s", "hi", user=USER)]
    assert types == ["node", "message", "node", "output", "message", "turn_end"]
    assert srv.chat_requests[0].body.get("stream") in (None, False)


async def test_reset_forgets_the_session_and_its_memory(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([answer({"response": "Which order?", "resolved": False}),
                    answer({"response": "Hello again.", "resolved": False})])
    doc = chat_flow(srv.url, "http://127.0.0.1:9")
    async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as f:
        await f.send("s", "refund", user=USER)
        assert await f.current_node("s") == "support"
        await f.reset("s")
        assert await f.current_node("s") == "greet"
        store = await f.store()
        assert await store.history(f.session_key("s")) == []
        t = await f.send("s", "hi", user=USER)
    assert [m.content for m in t.messages] == ["Hello Ann!", "Hello again."]
    assert [m["content"] for m in srv.chat_requests[1].messages[1:]] == ["Customer says: hi"]
