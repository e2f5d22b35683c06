"""Messages to and from their stored JSON form, a token estimate, and windows that keep tool pairs whole.

The stored form is lossless (unlike the OpenAI wire form, which drops `reasoning` and turns a None
content into ""): `role`, then only the fields that are set.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import orjson

from ..types import Message, ToolCall


def message_to_dict(m: Message) -> dict[str, Any]:
    d: dict[str, Any] = {"role": m.role}
    if m.content is not None:
        d["content"] = m.content
    if m.tool_calls:
        d["tool_calls"] = [{"id": tc.id, "name": tc.name, "arguments": tc.arguments} for tc in m.tool_calls]
    if m.tool_call_id is not None:
        d["tool_call_id"] = m.tool_call_id
    if m.name is not None:
        d["name"] = m.name
    if m.reasoning is not None:
        d["reasoning"] = m.reasoning
    return d


def message_from_dict(d: dict[str, Any]) -> Message:
    calls = d.get("tool_calls")
    return Message(
        role=d["role"],
        content=d.get("content"),
        tool_calls=[ToolCall(c["id"], c["name"], c.get("arguments", "")) for c in calls] if calls else None,
        tool_call_id=d.get("tool_call_id"),
        name=d.get("name"),
        reasoning=d.get("reasoning"),
    )


def dumps(value: Any) -> str:
    return orjson.dumps(value).decode()


def loads(text: str | bytes) -> Any:
    return orjson.loads(text)


def estimate_tokens(m: Message) -> int:
    """About four characters per token, plus a few for the message's framing. Stored with each message so
    that a budget window is one indexed query; it is an estimate, not any model's tokenizer."""
    chars = len(m.text)
    if m.content is not None and not isinstance(m.content, str):
        chars += sum(len(dumps(p)) for p in m.content if isinstance(p, dict) and p.get("type") != "text")
    for tc in m.tool_calls or ():
        chars += len(tc.name) + len(tc.arguments)
    return 4 + math.ceil(chars / 4)


def drop_orphan_results(rows: Sequence[Message]) -> list[Message]:
    """A window's messages without leading tool results whose call fell outside the window.

    A window is a suffix of the history, so the only pair it can split is at its start: an assistant
    message with tool calls just before the window and some of its results inside. Those results go.
    """
    i = 0
    while i < len(rows) and rows[i].role == "tool":
        i += 1
    return list(rows[i:])
