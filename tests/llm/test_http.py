"""One endpoint over real sockets (FakeLLM): request mapping on the wire, parsing, each scripted fault."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact.errors import EmptyResponseError, MalformedResponseError, ModelError
from chainreact.llm import parse_retry_after
from chainreact.testing import FakeLLM
from chainreact.types import ReasoningChunk, TextChunk, ToolCallChunk

from .conftest import texts

TOOLS = [{"type": "function", "function": {"name": "get", "parameters": {"type": "object"}}}]


async def test_request_on_the_wire(harness: Any) -> None:
    async with FakeLLM([{"text": "ok"}]) as srv:
        h = harness(url=srv.url + "/", key="sk-test", model="m1", maxRetries=-1,
                    params={"temperature": 0, "maxTokens": 5, "extraFields": {"thinking.type": "off"}})
        _, resp = await h.run("hello", stream=True, tools=TOOLS, tool_choice="auto")
        assert resp.message.content == "ok" and resp.endpoint == srv.url
        (r,) = srv.chat_requests
        assert r.path == "/v1/chat/completions"
        assert r.headers["authorization"] == "Bearer sk-test"
        b = r.body
        assert b["model"] == "m1" and b["temperature"] == 0 and b["max_completion_tokens"] == 5
        assert b["thinking"] == {"type": "off"} and b["stream"] is True
        assert b["stream_options"] == {"include_usage": True}
        assert b["tools"] == TOOLS and b["tool_choice"] == "auto"
        assert b["messages"] == [{"role": "user", "content": "hello"}]


async def test_no_key_no_authorization_header(harness: Any) -> None:
    async with FakeLLM([{"text": "ok"}]) as srv:
        await harness(url=srv.url, model="m").run()
        assert "authorization" not in srv.chat_requests[0].headers


async def test_streaming_text_reasoning_usage(harness: Any) -> None:
    turn = {"reasoning": "let me think", "text": "The answer is 42.", "chunks": 4,
            "usage": {"prompt_tokens": 7, "completion_tokens": 5, "total_tokens": 12,
                      "prompt_tokens_details": {"cached_tokens": 3}}}
    async with FakeLLM([turn, turn]) as srv:
        h = harness(url=srv.url, model="m")
        items, resp = await h.run(stream=True)
        assert [type(i) for i in items] == [ReasoningChunk] * 4 + [TextChunk] * 4
        assert texts(items) == "The answer is 42."
        assert resp.message.reasoning == "let me think" and resp.finish_reason == "stop"
        assert resp.usage is not None and (resp.usage.total_tokens, resp.usage.cached_tokens) == (12, 3)
        items, sync = await h.run(stream=False)
        assert items == [] and sync.message.content == resp.message.content
        assert sync.message.reasoning == "let me think"
        # Both calls went over one kept-alive connection.
        assert srv.chat_requests[0].peer == srv.chat_requests[1].peer


@pytest.mark.parametrize("interleave,omit_index", [(False, False), (True, False), (False, True)])
async def test_streamed_tool_calls(harness: Any, interleave: bool, omit_index: bool) -> None:
    turn = {"text": "Let me check.", "arg_chunks": 5, "interleave": interleave, "omit_index": omit_index,
            "tool_calls": [{"name": "get", "arguments": {"city": "Paris", "days": 3}, "id": "c1"},
                           {"name": "put", "arguments": {"k": "v" * 20}, "id": "c2"}]}
    async with FakeLLM([turn]) as srv:
        items, resp = await harness(url=srv.url, model="m").run(stream=True, tools=TOOLS)
        calls = resp.message.tool_calls
        assert calls is not None
        assert [(c.id, c.name) for c in calls] == [("c1", "get"), ("c2", "put")]
        assert calls[0].arguments == '{"city":"Paris","days":3}'
        assert calls[1].arguments == '{"k":"' + "v" * 20 + '"}'
        assert resp.message.content == "Let me check." and resp.finish_reason == "tool_calls"
        frags = [i for i in items if isinstance(i, ToolCallChunk)]
        for idx in (0, 1):
            assert "".join(f.arguments for f in frags if f.index == idx) == calls[idx].arguments


async def test_compat_stream_tools_false_calls_without_streaming(harness: Any) -> None:
    turn = {"reasoning": "r", "text": "t", "tool_calls": [{"name": "get", "arguments": {"a": 1}, "id": "x"}]}
    async with FakeLLM([turn, {"text": "plain", "chunks": 2}]) as srv:
        h = harness(url=srv.url, model="m", compat={"streamTools": False})
        items, resp = await h.run(stream=True, tools=TOOLS)
        assert srv.chat_requests[0].body["stream"] is False
        assert items == [ReasoningChunk("r"), TextChunk("t"), ToolCallChunk(0, "x", "get", '{"a":1}')]
        assert resp.message.tool_calls is not None
        items, _ = await h.run(stream=True)  # no tools: streams as usual
        assert srv.chat_requests[1].body["stream"] is True and len(items) == 2


async def test_http_error_carries_provider_message_and_status(harness: Any) -> None:
    body = {"error": {"message": "Unsupported parameter: 'stop'", "type": "invalid_request_error"}}
    async with FakeLLM([{"status": 400, "body": body}]) as srv:
        h = harness(url=srv.url, model="m", maxRetries=3)
        with pytest.raises(ModelError) as ei:
            await h.run()
        e = ei.value
        assert e.status == 400 and e.endpoint == srv.url and not e.retryable
        assert "Unsupported parameter: 'stop'" in str(e) and "HTTP 400" in str(e) and "compat.omit" in str(e)
        assert e.body is not None and "invalid_request_error" in e.body
        assert len(srv.chat_requests) == 1 and h.events == []  # 4xx: no retry


async def test_plain_text_error_body(harness: Any) -> None:
    async with FakeLLM([{"status": 503, "body": "upstream connect error"}]) as srv:
        with pytest.raises(ModelError, match="HTTP 503: upstream connect error") as ei:
            await harness(url=srv.url, model="m", maxRetries=-1).run()
        assert ei.value.retryable


@pytest.mark.parametrize("stream", [False, True])
async def test_error_object_in_200(harness: Any, stream: bool) -> None:
    turn = {"text": "abc", "chunks": 3, "fault": "error_event", "after_chunks": 0,
            "body": {"error": {"message": "context length exceeded", "code": 400}}}
    async with FakeLLM([turn]) as srv:
        with pytest.raises(ModelError, match="context length exceeded") as ei:
            await harness(url=srv.url, model="m").run(stream=stream)
        assert ei.value.status is None and len(srv.chat_requests) == 1


@pytest.mark.parametrize("stream", [False, True])
async def test_empty_body(harness: Any, stream: bool) -> None:
    async with FakeLLM([{"fault": "empty"}]) as srv:
        with pytest.raises(EmptyResponseError):
            await harness(url=srv.url, model="m", maxRetries=-1).run(stream=stream)


async def test_stream_without_finish_reason(harness: Any) -> None:
    async with FakeLLM([{"text": "cut short", "fault": "no_finish"}]) as srv:
        with pytest.raises(EmptyResponseError, match="finish_reason"):
            await harness(url=srv.url, model="m", maxRetries=-1).run(stream=True)


@pytest.mark.parametrize("stream", [False, True])
async def test_malformed(harness: Any, stream: bool) -> None:
    async with FakeLLM([{"text": "a b c", "fault": "malformed", "after_chunks": 0}]) as srv:
        with pytest.raises(MalformedResponseError):
            await harness(url=srv.url, model="m", maxRetries=-1).run(stream=stream)


@pytest.mark.parametrize("stream", [False, True])
async def test_reset_and_disconnect_are_network_errors(harness: Any, stream: bool) -> None:
    script = [{"fault": "reset"}, {"text": "a b c", "fault": "disconnect", "after_chunks": 0}]
    async with FakeLLM(script) as srv:
        h = harness(url=srv.url, model="m", maxRetries=-1)
        for _ in range(2):
            with pytest.raises(ModelError) as ei:
                await h.run(stream=stream)
            assert ei.value.retryable and ei.value.status is None


async def test_read_timeout_is_a_retryable_error(harness: Any) -> None:
    async with FakeLLM([{"text": "late", "first_byte_delay": 1.0}]) as srv:
        h = harness(url=srv.url, model="m", maxRetries=-1, timeouts={"connect": 5, "read": 0.2})
        with pytest.raises(ModelError, match=r"timeouts\.read") as ei:
            await h.run()
        assert ei.value.retryable


async def test_connection_refused(harness: Any) -> None:
    srv = FakeLLM([])
    srv.start()
    url = srv.url
    srv.stop()
    with pytest.raises(ModelError, match="cannot connect") as ei:
        await harness(url=url, model="m", maxRetries=-1).run()
    assert ei.value.retryable


def test_parse_retry_after_forms() -> None:
    assert parse_retry_after({"retry-after": "7"}) == 7
    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=1445412500.0) == 10.0
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:30 GMT"}, now=1445412600.0) == 0.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None
