"""groupConfig.directMessageOnly: in a group conversation the agent answers only when addressed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.flows import Flow
from chainreact.flows.engine import addressed


def group_flow(url: str) -> dict[str, Any]:
    return {"id": "team", "nodes": [
        {"name": "support", "type": "aiagent", "llmConfig": {"url": url}, "userMessage": "{{userInput}}",
         "groupConfig": {"directMessageOnly": True}, "memory": {},
         "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}}}}}]}


async def test_a_group_message_ignored_and_one_answered(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([{"text": json.dumps({"response": "On it."})}, {"text": json.dumps({"response": "Yes."})}])
    async with Flow.from_dict(group_flow(srv.url), state=f"sqlite:///{tmp_path}/s.db") as flow:
        events = [e.to_dict() async for e in flow.stream("g", "lunch anyone?", group={"id": "g1"})]
        assert {"event": "ignored", "node": "support", "reason": "directMessageOnly: not addressed"} in events
        assert srv.chat_requests == []
        t = await flow.send("g", "my order is late", group={"id": "g1", "mentions": ["support"]})
        assert [m.content for m in t.messages] == ["On it."]
        # Outside a group (no group given) the agent always answers.
        t = await flow.send("g", "still there?")
        assert [m.content for m in t.messages] == ["Yes."]
        # The ignored message was not remembered: the third request holds only answered turns.
        assert [m["content"] for m in srv.chat_requests[1].messages[1:]] == [
            "my order is late", '{"response": "On it."}', "still there?"]


@pytest.mark.parametrize(("text", "mentions", "expected"), [
    ("@support help", [], True), ("hey @Support!", [], True), ("support: my order", [], True),
    ("Support , hi", [], True), ("I need support", [], False), ("@supporter hi", [], False),
    ("mail me@support", [], False), ("hi", ["@support"], True), ("hi", ["sales"], False),
])
def test_addressed(text: str, mentions: list[str], expected: bool) -> None:
    assert addressed("support", text, {"id": "g", "mentions": mentions}) is expected
