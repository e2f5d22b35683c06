"""A flow's tools for real: the spec example's `standard` HTTP tools against a local shop API with bearer
auth, its `mcp` tools against two in-test MCP servers (bearer and custom-header auth, include/exclude
filters); the results reach the model, tool calls show in the turn's event stream as they run, and
`maxToolExecutions` counts executions (not model steps)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

from chainreact.flows import Flow
from chainreact.flows.tooling import BUDGET_PROMPT

from ..tools.mcp.mcp_testkit import HTTPServer
from .servers import TOKEN, order_tool, refund_tool, shop_api

SPEC_NODE = json.loads((Path(__file__).parent / "data" / "spec_example_node.json").read_text())
WEATHER_KEY = "sk-weather-api-key-1234567890"  # the spec example's own bearer token
FILE_HEADERS = {"Authorization": "ApiKey your-api-key-here", "X-App-ID": "customer-support-agent"}
USER = {"id": "u7", "name": "Ann"}


def answer(obj: dict[str, Any]) -> dict[str, Any]:
    return {"text": json.dumps(obj)}


def spec_flow(node: dict[str, Any]) -> dict[str, Any]:
    return {"id": "spec", "nodes": [
        node, *({"name": n, "type": "end", "message": f"[{n}]"}
                for n in ("satisfactionSurveyAgent", "escalationAgent", "followupAgent"))]}


def tool_message(request: Any, call_id: str) -> str:
    found = [m for m in request.messages if m.get("role") == "tool" and m.get("tool_call_id") == call_id]
    assert len(found) == 1, request.messages
    return str(found[0]["content"])


async def test_spec_example_tools_run_against_local_http_and_mcp_servers(fake_llm: Any,
                                                                          tmp_path: Path) -> None:
    weather = HTTPServer("streamable-http", {"Authorization": f"Bearer {WEATHER_KEY}"})
    files = HTTPServer("streamable-http", FILE_HEADERS)
    weather.start()
    files.start()
    try:
        with shop_api() as api:
            node = copy.deepcopy(SPEC_NODE)
            node["start"] = True
            tools = node["tools"]
            # Only the endpoints change: names, schemas, auth and filters are the spec's.
            tools[0]["execution"] = {**tools[0]["execution"], "endpoint": f"{api.url}/orders/{{orderId}}",
                                     "auth": {"type": "bearer", "bearerToken": TOKEN}}
            tools[1]["execution"] = {**tools[1]["execution"], "endpoint": f"{api.url}/refunds",
                                     "auth": {"type": "bearer", "bearerToken": TOKEN}}
            tools[2]["mcpClient"]["url"] = weather.url
            tools[2]["mcpClient"]["toolFilter"] = {"type": "include", "includedTools": ["echo"]}
            tools[3]["mcpClient"]["url"] = files.url
            tools[3]["mcpClient"]["toolFilter"] = {"type": "exclude",
                                                   "excludedTools": ["echo", "slow", "fail"]}
            srv = fake_llm([
                {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "A1"}, "id": "c1"}]},
                {"tool_calls": [{"name": "echo", "arguments": {"text": "Lyon"}, "id": "c2"}]},
                {"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "A1", "amount": 19.5,
                                                                       "reason": "late"}, "id": "c3"},
                                {"name": "ns_lookup", "arguments": {"key": "k9"}, "id": "c4"}]},
                answer({"response": "Refund R-2 is on its way.", "resolved": False, "category": "refund"}),
            ])
            node["llmConfig"]["url"] = srv.url
            async with Flow.from_dict(spec_flow(node), state=f"sqlite:///{tmp_path}/s.db") as flow:
                events = [ev async for ev in flow.stream("s1", "Refund order A1 please", user=USER)]
            kinds = [e.type for e in events]
            first = srv.chat_requests[0].body
            assert sorted(t["function"]["name"] for t in first["tools"]) == \
                ["createRefund", "echo", "ns_lookup", "orderLookup"]  # the MCP filters applied
            # Each result reached the model in the next request.
            order = json.loads(tool_message(srv.chat_requests[1], "c1"))
            assert order == {"orderId": "A1", "status": "shipped", "total": 19.5}
            assert tool_message(srv.chat_requests[2], "c2") == "echo: Lyon"
            refund = json.loads(tool_message(srv.chat_requests[3], "c3"))
            assert refund == {"refundId": "R-2", "orderId": "A1", "amount": 19.5, "reason": "late"}
            looked = tool_message(srv.chat_requests[3], "c4")
            assert '"k9"' in looked and '"found"' in looked
            # The API saw the bearer token on both calls; the MCP servers accepted our auth only.
            assert [(h.method, h.path) for h in api.hits] == [("GET", "/orders/A1"), ("POST", "/refunds")]
            assert all(h.headers["authorization"] == f"Bearer {TOKEN}" for h in api.hits)
            assert weather.guard is not None and files.guard is not None
            assert weather.guard.accepted > 0 and weather.guard.rejected == 0
            assert files.guard.accepted > 0 and files.guard.rejected == 0
            # The turn's stream shows each call, then its result, in order, nested under the node's agent.
            calls = [(e.data["name"], e.data["path"]) for e in events if e.type == "tool_call"]
            agent = ["customerSupportAgent"]
            assert calls == [("orderLookup", agent), ("echo", agent), ("createRefund", agent),
                             ("ns_lookup", agent)]
            results = [e.data["id"] for e in events if e.type == "tool_result"]
            assert results == ["c1", "c2", "c3", "c4"]
            assert kinds.index("tool_call") < kinds.index("tool_result") < kinds.index("output")
            msgs = [e.data["content"] for e in events if e.type == "message"]
            assert msgs[0] == "Refund R-2 is on its way."
            srv.assert_all_consumed()
    finally:
        weather.stop()
        files.stop()


def budget_flow(llm_url: str, api: Any, limit: int) -> dict[str, Any]:
    return {"id": "budget", "nodes": [{
        "name": "clerk", "type": "aiagent", "llmConfig": {"url": llm_url}, "userMessage": "{{userInput}}",
        "maxToolExecutions": limit, "tools": [order_tool(api), refund_tool(api)],
        "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}},
                              "required": ["response"]}}}]}


async def test_max_tool_executions_counts_executions_then_the_model_answers_without_tools(
        fake_llm: Any, tmp_path: Path) -> None:
    with shop_api() as api:
        srv = fake_llm([
            # Two calls in ONE model step: both run and spend the budget of 2 (a step limit would not).
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "A1"}, "id": "a"},
                            {"name": "orderLookup", "arguments": {"orderId": "A2"}, "id": "b"}]},
            # Tools are gone from this request; the model calls one anyway: refused, not run.
            {"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "A3"}, "id": "c"}]},
            answer({"response": "A1 and A2 are shipped."}),
        ])
        async with Flow.from_dict(budget_flow(srv.url, api, 2), state=f"sqlite:///{tmp_path}/s.db") as flow:
            turn = await flow.send("s1", "where are A1, A2 and A3?")
        assert [m.content for m in turn.messages] == ["A1 and A2 are shipped."]
        assert [h.path for h in api.hits] == ["/orders/A1", "/orders/A2"]  # A3 never ran
        first, second, third = srv.chat_requests
        assert len(first.body["tools"]) == 2
        assert "tools" not in second.body and "tools" not in third.body
        assert second.messages[-1] == {"role": "user", "content": BUDGET_PROMPT}
        refused = tool_message(third, "c")
        assert refused.startswith("Error: orderLookup was not run") and "maxToolExecutions=2" in refused


async def test_max_tool_executions_zero_gives_no_tools(fake_llm: Any, tmp_path: Path) -> None:
    with shop_api() as api:
        srv = fake_llm([answer({"response": "I cannot look that up."})])
        async with Flow.from_dict(budget_flow(srv.url, api, 0), state=f"sqlite:///{tmp_path}/s.db") as flow:
            await flow.send("s1", "where is A1?")
        assert "tools" not in srv.chat_requests[0].body and api.hits == []


async def test_tool_calls_stream_while_they_run(fake_llm: Any, tmp_path: Path) -> None:
    """`Flow.stream` yields `tool_call` before the tool runs and `tool_result` after: a chat can show them
    live (the API has no hit yet when the call is seen, one when the result is)."""
    with shop_api() as api:
        srv = fake_llm([{"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "Z9"}, "id": "z"}]},
                        answer({"response": "Z9 is shipped."})])
        seen: list[tuple[str, int]] = []
        async with Flow.from_dict(budget_flow(srv.url, api, 3), state=f"sqlite:///{tmp_path}/s.db") as flow:
            async for ev in flow.stream("s1", "Z9?"):
                if ev.type in ("tool_call", "tool_result"):
                    seen.append((ev.type, len(api.hits)))
                    if ev.type == "tool_call":
                        assert ev.to_dict() == {"event": "tool_call", "node": "clerk", "id": "z",
                                                "name": "orderLookup", "arguments": '{"orderId":"Z9"}',
                                                "path": ["clerk"]}
        assert seen == [("tool_call", 0), ("tool_result", 1)]
