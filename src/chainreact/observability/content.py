"""Message content in the GenAI semantic conventions' JSON shape (only recorded when the user opts in).

    gen_ai.input.messages / gen_ai.output.messages:
        [{"role": "user", "parts": [{"type": "text", "content": "..."}]}, ...]
    parts: text, reasoning, tool_call {id, name, arguments}, tool_call_response {id, response}
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from ..types import Message


def _arguments(raw: str) -> Any:
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError:
        return raw  # the model's text as it came: a bad argument string is worth seeing


def message_parts(m: Message) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    if m.reasoning:
        parts.append({"type": "reasoning", "content": m.reasoning})
    if m.role == "tool":
        parts.append({"type": "tool_call_response", "id": m.tool_call_id, "response": m.text})
    elif m.text:
        parts.append({"type": "text", "content": m.text})
    for tc in m.tool_calls or ():
        parts.append({"type": "tool_call", "id": tc.id, "name": tc.name,
                      "arguments": _arguments(tc.arguments)})
    return {"role": m.role, "parts": parts}


def messages_json(messages: Iterable[Message]) -> str:
    return orjson.dumps([message_parts(m) for m in messages]).decode()


def output_json(message: Message, finish_reason: str | None) -> str:
    out = message_parts(message)
    out["finish_reason"] = finish_reason or "stop"
    return orjson.dumps([out]).decode()


def to_json(value: Any) -> str:
    if isinstance(value, str):
        return value
    return orjson.dumps(value, default=str).decode()
