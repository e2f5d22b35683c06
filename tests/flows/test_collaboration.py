"""`multiAgentCollaboration`: the supervisor calls its collaborators (another aiagent node of the flow, an
agent document) as tools; their own tool calls and answers nest in the supervisor's event stream; bad
collaboration objects are validation errors with their JSON path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.errors import ConfigError
from chainreact.flows import Flow, flow_json_schema, load_flow

from .servers import order_tool, shop_api

SUPPORT = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}
BILLING = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}


def team_flow(llm_url: str, api: Any, researcher: Path) -> dict[str, Any]:
    return {"id": "team", "nodes": [
        {"name": "support", "type": "aiagent", "start": True, "llmConfig": {"url": llm_url},
         "systemMessage": "You coordinate the team.", "userMessage": "{{userInput}}",
         "output": {"schema": SUPPORT},
         "multiAgentCollaboration": {"collaborators": [
             {"node": "billing", "description": "Answers questions about orders, payments and refunds."},
             {"agentFile": str(researcher), "description": "Looks up general facts."}]}},
        {"name": "billing", "type": "aiagent", "llmConfig": {"url": llm_url},
         "systemMessage": "You are billing, serving {{user.name}}.",
         "userMessage": "Billing task: {{userInput}}",
         "tools": [order_tool(api)], "output": {"schema": BILLING}}]}


def tool_message(request: Any, call_id: str) -> str:
    found = [m for m in request.messages if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
    assert len(found) == 1, request.messages
    return str(found[0]["content"])


async def test_supervisor_delegates_and_collaborator_events_nest(fake_llm: Any, tmp_path: Path) -> None:
    with shop_api() as api:
        srv = fake_llm([
            {"tool_calls": [{"name": "billing", "arguments": {"request": "status of A1"}, "id": "s1"}]},
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "A1"}, "id": "b1"}]},
            {"text": json.dumps({"answer": "A1 shipped, total 19.5"})},
            {"tool_calls": [{"name": "researcher", "arguments": {"request": "usual shipping time"},
                             "id": "s2"}]},
            {"text": "About 3 days."},
            {"text": json.dumps({"response": "A1 has shipped and should arrive in about 3 days."})},
        ])
        researcher = tmp_path / "researcher.json"
        researcher.write_text(json.dumps({
            "id": "researcher", "type": "ai/agent", "name": "researcher",
            "configuration": {"url": srv.url, "key": "k", "model": "m", "systemPrompt": "You research."}}))
        state = f"sqlite:///{tmp_path}/s.db"
        async with Flow.from_dict(team_flow(srv.url, api, researcher), state=state) as flow:
            events = [ev async for ev in flow.stream("c1", "Where is A1?", user={"id": "u1", "name": "Ann"})]
            store = await flow.store()
            hist = await store.history("flow:team:c1")
        boss = srv.chat_requests[0].body
        tools = {t["function"]["name"]: t["function"]["description"] for t in boss["tools"]}
        assert tools == {"billing": "Answers questions about orders, payments and refunds.",
                         "researcher": "Looks up general facts."}
        # The billing node runs as its own agent: its prompts, its tools, its output schema.
        billing = srv.chat_requests[1]
        assert billing.messages == [{"role": "system", "content": "You are billing, serving Ann."},
                                    {"role": "user", "content": "Billing task: status of A1"}]
        assert [t["function"]["name"] for t in billing.body["tools"]] == ["orderLookup"]
        assert billing.body["response_format"]["json_schema"]["schema"] == BILLING
        assert srv.chat_requests[4].messages[0] == {"role": "system", "content": "You research."}
        # Their answers are the supervisor's tool results.
        assert tool_message(srv.chat_requests[3], "s1") == json.dumps({"answer": "A1 shipped, total 19.5"})
        assert tool_message(srv.chat_requests[5], "s2") == "About 3 days."
        assert [h.path for h in api.hits] == ["/orders/A1"]
        # Nested events: framed by agent_start / agent_end, with the path supervisor first.
        shown = [(e.type, e.data.get("name") or e.data.get("agent"), e.data.get("path"))
                 for e in events if e.type in ("tool_call", "tool_result", "agent_start", "agent_end")]
        assert shown == [
            ("tool_call", "billing", ["support"]),
            ("agent_start", "billing", ["support", "billing"]),
            ("tool_call", "orderLookup", ["support", "billing"]),
            ("tool_result", "orderLookup", ["support", "billing"]),
            ("agent_end", "billing", ["support", "billing"]),
            ("tool_result", "billing", ["support"]),
            ("tool_call", "researcher", ["support"]),
            ("agent_start", "researcher", ["support", "researcher"]),
            ("agent_end", "researcher", ["support", "researcher"]),
            ("tool_result", "researcher", ["support"]),
        ]
        msgs = [e.data["content"] for e in events if e.type == "message"]
        assert msgs == ["A1 has shipped and should arrive in about 3 days."]
        # Collaborators answer the supervisor only: the session's memory has the user's exchange alone.
        assert [m.role for m in hist] == ["user", "assistant"]
        srv.assert_all_consumed()


def _collab(*collaborators: dict[str, Any], extra: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    out = {"type": "object", "properties": {"response": {"type": "string"}}}
    nodes = [{"name": "a", "type": "aiagent", "userMessage": "x", "output": {"schema": out},
              "multiAgentCollaboration": {"collaborators": list(collaborators)}},
             {"name": "b", "type": "aiagent", "userMessage": "x", "output": {"schema": out}},
             {"name": "done", "type": "end"}, *(extra or [])]
    return {"id": "f", "nodes": nodes}


def _errors(doc: dict[str, Any]) -> dict[str, str]:
    with pytest.raises(ConfigError) as ei:
        load_flow(doc)
    return dict(ei.value.errors)


def test_collaboration_objects_are_validated_with_their_paths() -> None:
    load_flow(_collab({"node": "b", "description": "does b"}))  # valid
    where = "$.nodes[0].multiAgentCollaboration.collaborators"
    errs = _errors(_collab({"node": "nope", "description": "d"}, {"node": "done", "description": "d"},
                           {"node": "a", "description": "d"}, {"description": "d"},
                           {"node": "b", "agentFile": "x.json", "description": "d"}))
    assert "no node named 'nope'" in errs[f"{where}[0].node"]
    assert "a collaborator must be an aiagent node" in errs[f"{where}[1].node"]
    assert "cannot be its own collaborator" in errs[f"{where}[2].node"]
    assert "exactly one of node" in errs[f"{where}[3]"]
    assert "exactly one of node" in errs[f"{where}[4]"]
    errs = _errors(_collab({"node": "b"}))
    assert f"{where}[0].description" in errs  # each collaborator needs a description
    errs = _errors(_collab({"node": "b", "description": "d"}, {"node": "b", "description": "again"}))
    assert "two collaborators are called 'b'" in errs[f"{where}[1].name"]


def test_a_missing_agent_file_is_reported_for_a_flow_file(tmp_path: Path) -> None:
    path = tmp_path / "flow.json"
    path.write_text(json.dumps(_collab({"agentFile": "agents/nope.json", "description": "d"})))
    with pytest.raises(ConfigError) as ei:
        Flow.load(path)
    errs = dict(ei.value.errors)
    where = "$.nodes[0].multiAgentCollaboration.collaborators[0].agentFile"
    assert "no agent document" in errs[where] and "nope.json" in errs[where]
    (tmp_path / "agents").mkdir()
    (tmp_path / "agents" / "nope.json").write_text("{}")
    Flow.load(path)  # present: fine (its content is the agent wing's to check when it is built)


def test_a_cycle_of_collaborators_is_refused() -> None:
    doc = _collab({"node": "b", "description": "d"})
    doc["nodes"][1]["multiAgentCollaboration"] = {"collaborators": [{"node": "a", "description": "back"}]}
    errs = _errors(doc)
    assert "collaborators form a cycle: a -> b -> a" in errs["$.nodes[0].multiAgentCollaboration"]


def test_the_flow_schema_describes_the_collaboration_object() -> None:
    schema = flow_json_schema()
    defs = schema["$defs"]
    assert set(defs["MultiAgentCollaborationDef"]["properties"]) == {"enabled", "collaborators"}
    assert set(defs["CollaboratorDef"]["properties"]) == {"description", "node", "agentFile", "name",
                                                          "shareHistory", "timeout"}
    assert defs["CollaboratorDef"]["required"] == ["description"]
