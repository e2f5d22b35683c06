"""A flow's tool calls on /v1/chat/completions for agui clients (X-Stream-Protocol: agui): a real server,
the scripted model and a local shop API the flow's `standard` HTTP tool calls; the tool frames are an
agent's, in their place among the streamed text, and a client without the header sees none."""

from __future__ import annotations

import json
from typing import Any

import httpx
import openai
import orjson

from ..flows.servers import TOKEN, order_tool, shop_api

ANSWER = "Order A1 has shipped; it will reach you soon."
SCHEMA = {"type": "object", "properties": {"response": {"type": "string"}}, "required": ["response"]}


def shop_flow(llm_url: str, api: Any) -> dict[str, Any]:
    return {"id": "shop", "nodes": [
        {"name": "greet", "type": "message", "start": True, "message": "Hello!",
         "transition": {"targetId": "clerk"}},
        {"name": "clerk", "type": "aiagent", "llmConfig": {"url": llm_url, "apiKey": "k"},
         "userMessage": "{{userInput}}", "tools": [order_tool(api)], "output": {"schema": SCHEMA}},
    ]}


def model_turns(call_id: str) -> list[dict[str, Any]]:
    """One flow turn's model answers: a call of orderLookup, then the answer in 5-character pieces."""
    return [{"tool_calls": [{"name": "orderLookup", "arguments": {"orderId": "A1"}, "id": call_id}]},
            {"text": json.dumps({"response": ANSWER}), "chunk_size": 5}]


def chat(url: str, user: str, headers: dict[str, str]) -> list[Any]:
    """A streamed flow turn's chunks, in order: ("text", content) or ("tool", event); then the end."""
    body = {"model": "shop", "user": user, "stream": True,
            "messages": [{"role": "user", "content": "Where is my order A1?"}]}
    out: list[Any] = []
    with httpx.stream("POST", url + "/v1/chat/completions", json=body, headers=headers, timeout=30) as resp:
        assert resp.status_code == 200
        raw = resp.read().decode()
    for block in raw.split("\n\n"):
        if not block.startswith("data: "):
            continue
        payload = block[6:]
        if payload == "[DONE]":
            out.append("[DONE]")
            continue
        choice = orjson.loads(payload)["choices"][0]
        delta = choice["delta"]
        if "tool_calls" in delta:
            assert set(delta) == {"tool_calls"} and len(delta["tool_calls"]) == 1
            out.append(("tool", delta["tool_calls"][0]))
        elif delta.get("content"):
            out.append(("text", delta["content"]))
        elif choice["finish_reason"] == "stop":
            out.append("stop")
    return out


def test_agui_clients_get_a_flows_tool_frames_in_order_with_its_text(fake_llm: Any, serve: Any) -> None:
    with shop_api() as api:
        llm = fake_llm([*model_turns("o1"), *model_turns("o2"), *model_turns("o3")])
        srv = serve({"shop.json": shop_flow(llm.url, api)})

        got = chat(srv.url, "ann", {"X-Stream-Protocol": "agui"})
        assert got[-2:] == ["stop", "[DONE]"]
        kinds = [k for k, _ in got[:-2]]
        # the greeting, the call and its result, then the agent's answer piece by piece
        first_tool = kinds.index("tool")
        assert kinds[:first_tool] == ["text"] and got[0] == ("text", "Hello!")
        assert kinds[first_tool:first_tool + 2] == ["tool", "tool"]
        assert set(kinds[first_tool + 2:]) == {"text"} and len(kinds) - first_tool - 2 >= 8
        start, result = got[first_tool][1], got[first_tool + 1][1]
        # the frames an agent's agui stream sends (server/frames.py), with the node's agent as the path
        assert start == {"type": "TOOL_CALL_START", "toolCallId": "o1", "toolName": "orderLookup",
                         "arguments": {"orderId": "A1"}, "path": ["clerk"]}
        assert set(result) == {"type", "toolCallId", "toolName", "content", "isError", "durationMs", "path"}
        assert (result["type"], result["toolCallId"], result["toolName"], result["isError"], result["path"]) \
            == ("TOOL_CALL_RESULT", "o1", "orderLookup", False, ["clerk"])
        assert isinstance(result["durationMs"], int | float) and result["durationMs"] >= 0
        # the result is what the shop API answered, and what the model was given
        assert json.loads(result["content"]) == {"orderId": "A1", "status": "shipped", "total": 19.5}
        given = [m for m in llm.chat_requests[1].messages if m.get("role") == "tool"]
        assert [m["content"] for m in given] == [result["content"]]
        assert [(h.method, h.path, h.headers["authorization"]) for h in api.hits] == \
            [("GET", "/orders/A1", f"Bearer {TOKEN}")]
        text = "".join(t for k, t in got[:-2] if k == "text")
        assert text == "Hello!\n\n" + ANSWER

        # without the header: the same text, no tool frame, nothing about the call in the bytes
        plain = chat(srv.url, "bob", {})
        assert all(k == "text" for k, _ in plain[:-2]) and plain[-2:] == ["stop", "[DONE]"]
        assert "".join(t for _, t in plain[:-2]) == "Hello!\n\n" + ANSWER
        client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
        chunks = list(client.chat.completions.create(
            model="shop", user="cy", stream=True, messages=[{"role": "user", "content": "A1?"}]))
        assert not any(c.choices and c.choices[0].delta.tool_calls for c in chunks)
        assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello!\n\n" + ANSWER
        assert len(api.hits) == 3  # each turn called the tool: the frames were left out, not the call
        llm.assert_all_consumed()


def test_agui_header_changes_nothing_but_the_stream(fake_llm: Any, serve: Any) -> None:
    """Not streamed, an agui client gets the plain completion (tool frames exist only in a stream)."""
    with shop_api() as api:
        llm = fake_llm([*model_turns("o1")])
        srv = serve({"shop.json": shop_flow(llm.url, api)})
        body = {"model": "shop", "user": "dee", "messages": [{"role": "user", "content": "A1?"}]}
        done = httpx.post(srv.url + "/v1/chat/completions", json=body, headers={"X-Stream-Protocol": "agui"},
                          timeout=30).json()
        assert done["choices"][0]["message"] == {"role": "assistant", "content": "Hello!\n\n" + ANSWER}
        assert len(api.hits) == 1


def test_the_flow_route_sends_its_own_tool_events_whatever_the_header(fake_llm: Any, serve: Any) -> None:
    """The flow session route streams the turn's events, tool calls included, for every client (the
    flow's form: `tool_call` / `tool_result` events); X-Stream-Protocol means nothing there. The RuleGo
    chat route serves chains only."""
    with shop_api() as api:
        llm = fake_llm([*model_turns("o1")])
        srv = serve({"shop.json": shop_flow(llm.url, api)})
        resp = httpx.post(srv.url + "/api/v1/flows/shop/sessions/s1/messages", timeout=30,
                          json={"text": "A1?", "deltas": True}, headers={"X-Stream-Protocol": "agui"})
        events = []
        for block in resp.text.split("\n\n"):
            lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            if "event" in lines:
                events.append((lines["event"], orjson.loads(lines["data"])))
        kinds = [k for k, _ in events]
        assert [k for k in kinds if k != "text_delta"] == ["node", "message", "node", "tool_call",
                                                          "tool_result", "output", "message", "turn_end"]
        assert kinds.index("tool_result") < kinds.index("text_delta")
        call = events[kinds.index("tool_call")][1]
        assert call == {"event": "tool_call", "node": "clerk", "id": "o1", "name": "orderLookup",
                        "arguments": '{"orderId":"A1"}', "path": ["clerk"]}
        result = events[kinds.index("tool_result")][1]
        assert json.loads(result["content"])["status"] == "shipped" and result["is_error"] is False
        assert "".join(d["text"] for k, d in events if k == "text_delta") == ANSWER

        rulego = httpx.post(srv.url + "/api/v1/rules/shop/v1/chat/completions", timeout=30,
                            json={"model": "shop", "messages": [{"role": "user", "content": "A1?"}]})
        assert rulego.status_code == 404 and rulego.json()["error"]["code"] == "model_not_found"
