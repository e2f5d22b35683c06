"""The input contract, checked on what actually reaches the endpoint."""

from __future__ import annotations

from chainreact.agent import Agent
from chainreact.agent.inputs import build_messages
from chainreact.testing import FakeLLM
from chainreact.types import Message

from .conftest import make_agent


async def test_messages_input_keeps_tool_history(server: FakeLLM) -> None:
    server.add_turns([{"text": "ok"}])
    history = {"messages": [
        {"role": "user", "content": "add 1 and 2"},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "add", "arguments": None}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "3"},
        {"role": "assistant", "content": ""},  # empty: dropped
        {"role": "user", "content": "thanks"},
    ]}
    await make_agent(server).run(history)
    sent = server.chat_requests[0].body["messages"]
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "tool", "user"]
    assert sent[2]["tool_calls"][0]["function"]["arguments"] == "{}"
    assert sent[2]["content"] == ""  # never null beside tool_calls


async def test_system_prompt_not_prepended_when_input_has_one(server: FakeLLM) -> None:
    server.add_turns([{"text": "ok"}])
    await make_agent(server).run({"messages": [{"role": "system", "content": "mine"},
                                               {"role": "user", "content": "q"}]})
    sent = server.chat_requests[0].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "system"] == ["mine"]


async def test_preset_messages_only_without_input_messages(server: FakeLLM) -> None:
    server.add_turns([{"text": "a"}, {"text": "b"}])
    agent = Agent(url=server.url, model="m", config={
        "systemPrompt": "sys",
        "messages": [{"role": "user", "content": "preset q"}, {"role": "assistant", "content": "preset a"}],
    })
    await agent.run("real question")
    first = server.chat_requests[0].body["messages"]
    assert [m["content"] for m in first] == ["sys", "preset q", "preset a", "real question"]
    await agent.run({"messages": [{"role": "user", "content": "own"}]})
    second = server.chat_requests[1].body["messages"]
    assert [m["content"] for m in second] == ["sys", "own"]


def test_non_string_input_becomes_one_json_user_message() -> None:
    msgs = build_messages({"order": 42, "items": ["a"]}, "", [])
    assert msgs == [Message("user", '{"order":42,"items":["a"]}')]
