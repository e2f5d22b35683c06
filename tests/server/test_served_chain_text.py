"""A chain served as an OpenAI model answers the same text streamed and not, each piece once: the
self-healed preamble of its agent node is not repeated (issue 24, "The seeds")."""

from __future__ import annotations

from typing import Any

import openai
import pytest

from .test_server import echo_chain

PREAMBLE_THEN_CALL = {"text": "Checking now. ", "tool_calls": [{"name": "double", "arguments": {"n": 21}}],
                      "tool_delay": 0.8}


def chain(url: str, mode: str) -> dict[str, Any]:
    return {"ruleChain": {"id": "chat", "name": "Chat"},
            "metadata": {"nodes": [{"id": "a", "type": "ai/agent", "configuration": {
                "url": url, "key": "unused", "model": "fake-model", "maxRetries": -1,
                "streamToolCallCheck": mode,
                "tools": [{"type": "rulechain", "targetId": "echo", "name": "double",
                           "description": "Double n"}]}}]}}


@pytest.mark.parametrize("mode", ["auto", "firstContent"])
def test_a_served_chain_streams_the_preamble_once_and_answers_the_same_unstreamed(
        fake_llm: Any, serve: Any, mode: str) -> None:
    llm = fake_llm([PREAMBLE_THEN_CALL, {"text": "Done: 42"}], loop=True)
    srv = serve({"echo.json": echo_chain(), "chat.json": chain(llm.url, mode)})
    client = openai.OpenAI(base_url=srv.url + "/v1", api_key="none")
    ask = [{"role": "user", "content": "double 21"}]

    chunks = list(client.chat.completions.create(model="chat", messages=ask, stream=True))  # type: ignore
    streamed = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert streamed == "Checking now. Done: 42"  # was "Checking now. Checking now. Done: 42"

    whole = client.chat.completions.create(model="chat", messages=ask)  # type: ignore
    assert whole.choices[0].message.content == streamed  # was "Done: 42"
