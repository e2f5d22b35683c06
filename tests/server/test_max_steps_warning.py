"""A served run that reached maxStep says so at the edges (issue 24, "The seeds"; decision 7 of
docs/spec-conformance.md): the runs API's SSE has the `warning` event, a chat completion (streamed: its
last chunk) carries `warning` {code, message} beside its normal fields, for agents and chains alike."""

from __future__ import annotations

from typing import Any

import httpx
import openai
import pytest

from .runs_helpers import agent_doc, sse_events
from .test_server import echo_chain

CALL = {"tool_calls": [{"name": "double", "arguments": {"n": 2}}]}
ANSWER = {"text": "Probably 4."}
DOUBLE = {"type": "rulechain", "targetId": "echo", "name": "double", "description": "Double n"}


def chain_doc(url: str) -> dict[str, Any]:
    return {"ruleChain": {"id": "chat", "name": "Chat"}, "metadata": {"nodes": [
        {"id": "a", "type": "ai/agent", "configuration": {"url": url, "key": "unused", "model": "fake-model",
                                                           "maxStep": 1, "tools": [DOUBLE]}}]}}


@pytest.mark.parametrize("target", ["helper", "chat"])
def test_a_chat_completion_at_max_steps_carries_a_warning(fake_llm: Any, serve: Any, target: str) -> None:
    llm = fake_llm([CALL, ANSWER], loop=True)
    srv = serve({"echo.json": echo_chain(), "chat.json": chain_doc(llm.url),
                 "helper.json": agent_doc(llm.url, maxStep=1, tools=[DOUBLE])})
    ask = {"model": target, "messages": [{"role": "user", "content": "double 2"}]}

    whole = httpx.post(srv.url + "/v1/chat/completions", json=ask, timeout=30).json()
    assert whole["choices"][0]["message"]["content"] == "Probably 4."
    assert whole["warning"]["code"] == "max_steps" and "maxStep (1 steps)" in whole["warning"]["message"]

    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    chunks = list(client.chat.completions.create(stream=True, **ask))  # SDK-parsed, extension kept
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Probably 4."
    last = chunks[-1]
    assert last.choices[0].finish_reason == "stop"
    assert (last.model_extra or {})["warning"] == whole["warning"]
    assert all("warning" not in (c.model_extra or {}) for c in chunks[:-1])


def test_the_runs_api_streams_the_warning_event_before_final(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([CALL, ANSWER, {"text": "4"}])
    srv = serve({"echo.json": echo_chain(), "helper.json": agent_doc(llm.url, maxStep=1, tools=[DOUBLE])})
    with httpx.stream("POST", f"{srv.url}/api/v1/agents/helper/runs",
                      json={"input": "double 2", "stream": True}, timeout=30) as resp:
        frames = list(sse_events(resp.iter_lines()))
    kinds = [f["event"] for f in frames]
    assert kinds[-3:] == ["warning", "final", "end"] and frames[-3]["data"]["code"] == "max_steps"
    normal = httpx.post(f"{srv.url}/v1/chat/completions", timeout=30,
                        json={"model": "helper", "messages": [{"role": "user", "content": "hi"}]}).json()
    assert normal["choices"][0]["message"]["content"] == "4" and "warning" not in normal
