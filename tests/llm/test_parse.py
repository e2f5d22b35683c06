"""Parsing chunks and completions of the many OpenAI dialects into one message type."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from chainreact.errors import EmptyResponseError, MalformedResponseError, ModelError
from chainreact.llm.body import parse_body
from chainreact.llm.parse import StreamAssembler, error_message, parse_completion
from chainreact.types import ModelResponse, ReasoningChunk, StreamItem, TextChunk, ToolCallChunk


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "delta": delta or {}, "finish_reason": finish}
    return {"object": "chat.completion.chunk", "choices": [choice], **top}


def assemble(chunks: list[dict[str, Any]]) -> tuple[list[StreamItem], ModelResponse]:
    asm = StreamAssembler("http://e/v1")
    out: list[StreamItem] = []
    for c in chunks:
        asm.feed(c, out)
    return out, asm.finish()


def sse(*objs: Any, done: bool = True) -> bytes:
    body = b"".join(b"data: " + orjson.dumps(o) + b"\n\n" for o in objs)
    return body + (b"data: [DONE]\n\n" if done else b"")


def test_text_reasoning_usage_and_items_in_order() -> None:
    items, resp = assemble([
        chunk({"role": "assistant", "content": ""}),
        chunk({"reasoning_content": "think"}),
        chunk({"content": "Hel"}),
        chunk({"content": "lo"}, "stop"),
        {"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5,
                                  "prompt_tokens_details": {"cached_tokens": 1}}},
    ])
    assert items == [ReasoningChunk("think"), TextChunk("Hel"), TextChunk("lo")]
    assert resp.message.content == "Hello" and resp.message.reasoning == "think"
    assert resp.finish_reason == "stop"
    assert resp.usage is not None and (resp.usage.total_tokens, resp.usage.cached_tokens) == (5, 1)


@pytest.mark.parametrize("delta", [
    {"reasoning": "r"},
    {"reasoning_content": "r", "reasoning_details": [{"type": "reasoning.text", "text": "r"}]},
    {"reasoning": "r", "reasoning_details": [{"type": "reasoning.text", "text": "r"}]},
    {"reasoning_details": [{"type": "reasoning.text", "text": "r"}]},
    {"content": [{"type": "thinking", "thinking": [{"type": "text", "text": "r"}]}]},
])
def test_reasoning_variants_are_read_once(delta: dict[str, Any]) -> None:
    _, resp = assemble([chunk(delta), chunk({"content": "a"}, "stop")])
    assert resp.message.reasoning == "r"
    assert resp.message.content == "a"


def test_think_tags_stay_in_content() -> None:
    _, resp = assemble([chunk({"content": "<think>x</think>y"}, "stop")])
    assert resp.message.content == "<think>x</think>y" and resp.message.reasoning is None


def test_tool_calls_merged_by_index_interleaved() -> None:
    items, resp = assemble([
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": ""}}]}),
        chunk({"tool_calls": [{"index": 1, "id": "b", "function": {"name": "g", "arguments": "{\"y\""}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{\"x\":"}}]}),
        chunk({"tool_calls": [{"index": 1, "function": {"arguments": ":2}"}}]}),
        chunk({"tool_calls": [{"index": 0, "function": {"arguments": "1}"}}]}, "tool_calls"),
    ])
    calls = resp.message.tool_calls
    assert calls is not None
    assert [(c.id, c.name, c.arguments) for c in calls] == [("a", "f", '{"x":1}'), ("b", "g", '{"y":2}')]
    assert items[0] == ToolCallChunk(0, "a", "f", "")
    assert ToolCallChunk(1, None, None, ":2}") in items


def test_tool_calls_without_index() -> None:
    _, resp = assemble([
        chunk({"tool_calls": [{"id": "a", "function": {"name": "f", "arguments": "{\"x\""}}]}),
        chunk({"tool_calls": [{"function": {"arguments": ":1}"}}]}),
        chunk({"tool_calls": [{"id": "b", "function": {"name": "g", "arguments": "{}"}}]}, "tool_calls"),
    ])
    assert [(c.id, c.name, c.arguments) for c in resp.message.tool_calls or []] == [
        ("a", "f", '{"x":1}'), ("b", "g", "{}")]


def test_tool_call_id_and_name_repeated_on_every_fragment() -> None:
    frag = [{"index": 0, "id": "a", "type": "function", "function": {"name": "f", "arguments": p}}
            for p in ("{\"q\"", ":", "3}")]
    _, resp = assemble([chunk({"tool_calls": [f]}) for f in frag] + [chunk({}, "tool_calls")])
    assert [(c.id, c.name, c.arguments) for c in resp.message.tool_calls or []] == [("a", "f", '{"q":3}')]


def test_parallel_calls_all_numbered_zero_with_distinct_ids() -> None:
    _, resp = assemble([
        chunk({"tool_calls": [{"index": 0, "id": "a", "function": {"name": "f", "arguments": "{\"n\":1}"}}]}),
        chunk({"tool_calls": [{"index": 0, "id": "b", "function": {"name": "f", "arguments": "{\"n\":2}"}}]}),
        chunk({}, "tool_calls"),
    ])
    got = [(c.id, c.arguments) for c in resp.message.tool_calls or []]
    assert got == [("a", '{"n":1}'), ("b", '{"n":2}')]


def test_arguments_as_object_and_indices_from_one() -> None:
    _, resp = assemble([
        chunk({"tool_calls": [{"index": 1, "id": "t", "function": {"name": "f", "arguments": {"k": [1]}}}]}),
        chunk({}, "tool_calls"),
    ])
    assert [(c.id, c.arguments) for c in resp.message.tool_calls or []] == [("t", '{"k":[1]}')]


def test_missing_id_gets_a_unique_one_and_empty_args_become_object() -> None:
    _, resp = assemble([chunk({"tool_calls": [{"index": 0, "function": {"name": "f"}}]}),
                        chunk({"tool_calls": [{"index": 1, "function": {"name": "g"}}]}, "tool_calls")])
    calls = resp.message.tool_calls or []
    assert calls[0].id and calls[1].id and calls[0].id != calls[1].id
    assert calls[0].arguments == "{}"


def test_other_choices_ignored_and_groq_usage() -> None:
    _, resp = assemble([
        {"choices": [{"index": 1, "delta": {"content": "no"}}, {"index": 0, "delta": {"content": "yes"}}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
         "x_groq": {"usage": {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3}}},
    ])
    assert resp.message.content == "yes"
    assert resp.usage is not None and resp.usage.total_tokens == 3


def test_stream_without_finish_reason_is_an_error() -> None:
    with pytest.raises(EmptyResponseError, match="without a finish_reason"):
        assemble([chunk({"content": "partial"})])


def test_error_object_in_stream_raises_with_provider_message() -> None:
    asm = StreamAssembler("http://e/v1")
    with pytest.raises(ModelError, match="Token limit reached") as ei:
        asm.feed({"error": {"code": 400, "message": "Token limit reached"}, "choices": []}, [])
    assert ei.value.status is None and not ei.value.retryable
    with pytest.raises(ModelError) as ei2:
        StreamAssembler().feed({"error": {"code": 429, "message": "slow down"}}, [])
    assert ei2.value.retryable


def test_refusal_kept_out_of_content() -> None:
    _, resp = assemble([chunk({"refusal": "no."}, "stop")])
    assert resp.message.content == "" and resp.extra["refusal"] == "no."


def test_parse_completion_variants() -> None:
    resp = parse_completion({
        "model": "m",
        "choices": [{"index": 0, "finish_reason": "tool_calls", "message": {
            "role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}],
            "reasoning": "why",
            "tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": {"x": 1}}}]}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "prompt_cache_hit_tokens": 1},
    })
    assert resp.message.content == "ab" and resp.message.reasoning == "why"
    assert resp.message.tool_calls is not None and resp.message.tool_calls[0].arguments == '{"x":1}'
    assert resp.usage is not None and (resp.usage.total_tokens, resp.usage.cached_tokens) == (2, 1)
    assert resp.model == "m" and resp.finish_reason == "tool_calls"


def test_parse_completion_errors() -> None:
    with pytest.raises(MalformedResponseError, match="no choices"):
        parse_completion({"id": "x"})
    with pytest.raises(ModelError, match="bad thing"):
        parse_completion({"error": {"message": "bad thing"}})


@pytest.mark.parametrize("payload,msg", [
    ({"error": {"message": "m1"}}, "m1"),
    ({"error": "m2"}, "m2"),
    ([{"error": {"code": 400, "message": "m3"}}], "m3"),
    ({"detail": "m4"}, "m4"),
    ({"error": {"message": "Provider returned error", "metadata": {"raw": "upstream says"}}},
     "Provider returned error (upstream says)"),
])
def test_error_message_shapes(payload: Any, msg: str) -> None:
    assert error_message(payload) == msg


def test_body_sniffing_sse_under_json_content_and_json_in_stream() -> None:
    body = sse(chunk({"content": "x"}, "stop"))
    items, resp = parse_body(body)
    assert items == [TextChunk("x")] and resp.message.content == "x"
    items, resp = parse_body(b'\n {"choices":[{"index":0,"message":{"content":"y"},"finish_reason":"stop"}]}')
    assert items == [] and resp.message.content == "y"


def test_body_empty_and_malformed() -> None:
    with pytest.raises(EmptyResponseError, match="empty body"):
        parse_body(b"  \n")
    with pytest.raises(MalformedResponseError, match="invalid JSON"):
        parse_body(b'data: {"choices": [\n\n')
    with pytest.raises(MalformedResponseError):
        parse_body(b'{"choices": [')


def test_body_after_done_is_ignored_and_no_done_is_fine() -> None:
    body = sse(chunk({"content": "x"}, "stop")) + b"data: {garbage\n\n"
    assert parse_body(body)[1].message.content == "x"
    assert parse_body(sse(chunk({"content": "x"}, "stop"), done=False))[1].finish_reason == "stop"


def test_body_consecutive_data_lines_without_blank_lines() -> None:
    a = orjson.dumps(chunk({"content": "a"}))
    b = orjson.dumps(chunk({"content": "b"}, "stop"))
    _, resp = parse_body(b"data: " + a + b"\ndata: " + b + b"\n\n")
    assert resp.message.content == "ab"


def test_body_event_error() -> None:
    with pytest.raises(ModelError, match="overloaded"):
        parse_body(b'event: error\ndata: {"message": "overloaded", "code": 529}\n\n')
