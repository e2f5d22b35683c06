"""The model client end to end against the embedded llama.cpp server (url "local"): sync, streaming
text, and a tool call (which the client sends unstreamed, per the endpoint's compat, yet yields as items).
Skipped without the `local` extra."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from chainreact.config import AgentConfig
from chainreact.llm import ModelClient
from chainreact.local import local_extra_available, stop_local
from chainreact.types import Message, ModelResponse, StreamItem, TextChunk, ToolCallChunk

_missing = local_extra_available()
pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(bool(_missing), reason=f"the 'local' extra is not installed (no {_missing!r} module)"),
]

ADD = {"type": "function", "function": {
    "name": "add", "description": "Add two numbers and return their sum.",
    "parameters": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
                   "required": ["a", "b"]}}}


@pytest.fixture
async def client(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[ModelClient]:
    monkeypatch.delenv("CHAINREACT_LOCAL_URL", raising=False)
    cfg = AgentConfig.model_validate({"url": "local", "maxRetries": 1,
                                      "params": {"temperature": 0, "maxTokens": 48}})
    c = ModelClient.from_config(cfg)
    yield c
    await c.aclose()


async def run(client: ModelClient, messages: list[Message],
              **kw: Any) -> tuple[list[StreamItem], ModelResponse]:
    items = [i async for i in client.call(messages, **kw)]
    last = items.pop()
    assert isinstance(last, ModelResponse)
    return items, last


async def test_local_model_end_to_end(client: ModelClient) -> None:
    try:
        # Non-streaming text.
        _, resp = await run(client, [Message("user", "Say hello in one short sentence.")], stream=False)
        assert resp.message.text.strip() and resp.finish_reason in ("stop", "length")
        assert resp.usage is not None and resp.usage.completion_tokens > 0
        assert resp.endpoint is not None and resp.endpoint.startswith("http://127.0.0.1:")

        # Streaming text: several chunks that add up to the message.
        items, resp = await run(client, [Message("user", "Count from one to five.")], stream=True)
        chunks = [i for i in items if isinstance(i, TextChunk)]
        assert len(chunks) >= 2 and "".join(c.text for c in chunks) == resp.message.text
        assert resp.finish_reason in ("stop", "length")

        # A tool call, asked for with streaming and tool_choice "required": the client sends it
        # unstreamed with "auto" (the server's quirks) and still yields stream items.
        msgs = [Message("system", "You are a calculator assistant. To add numbers, call the add tool."),
                Message("user", "What is 17 + 25? Use the add tool.")]
        items, resp = await run(client, msgs, tools=[ADD], tool_choice="required", stream=True,
                                params_override={"maxTokens": 100})
        assert resp.finish_reason == "tool_calls"
        (call,) = resp.message.tool_calls or []
        assert call.name == "add" and call.id
        assert set(json.loads(call.arguments)) == {"a", "b"}
        assert [i for i in items if isinstance(i, ToolCallChunk)] == [ToolCallChunk(0, call.id, "add",
                                                                                     call.arguments)]
    finally:
        await stop_local()
