"""A chat flow end to end on the embedded model (llama.cpp's server with SmolLM2-135M, the `local` extra).

Two nodes: a `triage` agent whose `output.schema` the server enforces as a grammar (chainreact sends
OpenAI's `response_format` json_schema; the embedded server's entry point hands it to llama.cpp as
json_object + schema), and an `end` node. The outcomes branch on the parsed output. What is asserted is
the shape of the output and that the transition taken is the one its values call for: not what a 135M
model thinks of the message. A second run's schema allows only `urgent: false`, so the other branch (the
session waits at triage, a second message continues it with memory) runs for certain.
"""

from __future__ import annotations

import asyncio
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainreact.flows import Flow
from chainreact.local import local_extra_available, stop_local_sync
from chainreact.local import server as srv
from chainreact.local.llama_entry import json_schema_as_json_object

_missing = local_extra_available()
if _missing and os.environ.get("CI", "").lower() in ("1", "true", "yes"):
    raise RuntimeError(f"CI must run the embedded-model tests, but module {_missing!r} is not installed")

CATEGORIES = ["billing", "delivery", "other"]
SCHEMA = {"type": "object",
          "properties": {"category": {"type": "string", "enum": CATEGORIES}, "urgent": {"type": "boolean"}},
          "required": ["category", "urgent"]}


def triage_flow() -> dict[str, Any]:
    return {"id": "triage", "nodes": [
        {"name": "triage", "type": "aiagent", "start": True,
         "llmConfig": {"provider": "local", "overrideParams": {"temperature": 0, "maxTokens": 40}},
         "systemMessage": "You sort customer messages. Answer with JSON: the category of the message, and "
                          "whether it is urgent.",
         "userMessage": "{{userInput}}",
         "memory": {"maxMessages": 4},
         "output": {"schema": SCHEMA, "maxRetries": 0},
         "answerMessage": "Noted: {{output.category}}.",
         "agentOutcomes": [
             {"condition": "{{output.urgent}} == true", "finish": False, "transition": {"targetId": "done"}},
             {"condition": "{{output.urgent}} == false", "finish": True, "answerAfterFinish": True,
              "transition": {"targetId": "triage"}}]},
        {"name": "done", "type": "end", "message": "Escalated: {{output.category}}."}]}


@pytest.fixture(scope="module")
def own_server() -> Iterator[None]:
    os.environ.pop(srv.LOCAL_URL_ENV, None)
    yield
    stop_local_sync()


@pytest.mark.local_model
@pytest.mark.skipif(bool(_missing), reason=f"the 'local' extra is not installed (no {_missing!r} module)")
@pytest.mark.parametrize("urgent", [
    {"type": "boolean"},  # the model's choice: either branch, checked against what it chose
    {"type": "boolean", "enum": [False]},  # the grammar allows only false: the waiting branch, for certain
], ids=["model-chooses", "schema-forces-false"])
def test_two_node_flow_branches_on_the_models_structured_output(own_server: None, tmp_path: Path,
                                                                 urgent: dict[str, Any]) -> None:
    doc = triage_flow()
    doc["nodes"][0]["output"]["schema"]["properties"]["urgent"] = urgent
    forced = "enum" in urgent

    async def run() -> tuple[list[Any], list[Any], list[Any]]:
        async with Flow.from_dict(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
            text = "My parcel has not arrived, it was due last week."
            events = [ev async for ev in flow.stream("s1", text)]
            second: list[Any] = []
            if forced:  # the session waits at triage: a second message continues it, with memory
                second = [ev async for ev in flow.stream("s1", "Any news?")]
            store = await flow.store()
            return events, second, await store.history(flow.session_key("s1"))

    events, second, remembered = asyncio.run(run())
    outputs = [ev.data for ev in events if ev.type == "output"]
    assert len(outputs) == 1
    out = outputs[0]["output"]
    # The grammar guarantees the shape, so the first answer is valid: no re-ask.
    assert outputs[0]["attempts"] == 1
    assert set(out) == {"category", "urgent"} and out["category"] in CATEGORIES
    assert isinstance(out["urgent"], bool)
    if forced:
        assert out["urgent"] is False
    end = next(ev for ev in events if ev.type == "turn_end").data
    messages = [(ev.node, ev.data["content"]) for ev in events if ev.type == "message"]
    if out["urgent"]:
        # finish: false -> the end node runs in the same turn and ends the flow.
        assert end == {"current": None, "ended": True}
        assert messages == [("done", f"Escalated: {out['category']}.")]
    else:
        # finish: true with answerAfterFinish: the closing message, the session waits at triage.
        assert end == {"current": "triage", "ended": False}
        assert messages == [("triage", f"Noted: {out['category']}.")]
    # The exchanges are in the session memory, the model's answers as the JSON it wrote.
    assert json.loads(remembered[1].text) == out
    if forced:
        out2 = next(ev.data["output"] for ev in second if ev.type == "output")
        assert out2["urgent"] is False and out2["category"] in CATEGORIES
        end2 = next(ev for ev in second if ev.type == "turn_end").data
        assert end2 == {"current": "triage", "ended": False}
        assert [m.role for m in remembered] == ["user", "assistant", "user", "assistant"]
        assert remembered[2].text == "Any news?"
    else:
        assert [m.role for m in remembered] == ["user", "assistant"]


def test_json_schema_is_rewritten_for_llama_cpp() -> None:
    body = {"model": "m", "messages": [], "response_format": {
        "type": "json_schema", "json_schema": {"name": "output", "strict": True, "schema": SCHEMA}}}
    out = json.loads(json_schema_as_json_object(json.dumps(body).encode()))
    assert out["response_format"] == {"type": "json_object", "schema": SCHEMA}
    assert out["messages"] == [] and out["model"] == "m"
    for same in (b'{"response_format": {"type": "json_object"}}', b'{"messages": []}', b"not json",
                 b'{"response_format": {"type": "text"}, "x": "json_schema"}'):
        assert json_schema_as_json_object(same) == same
    no_schema = {"response_format": {"type": "json_schema", "json_schema": {"name": "x"}}}
    assert json.loads(json_schema_as_json_object(json.dumps(no_schema).encode()))["response_format"] == {
        "type": "json_object"}
