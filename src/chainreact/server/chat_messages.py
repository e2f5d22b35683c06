"""Chat messages sent by a client (OpenAI's shape), checked field by field before anything reads them.

Every route that takes `messages` (/v1/chat/completions, RuleGo's chat route, the runs API) refuses a
malformed one with 400 naming the field's path (`messages[2].tool_calls[0].function.name`), instead of
failing deep inside (a 500 "'str' object has no attribute 'get'") or handing the wrong type to the model.

What is checked, per role (a field that is absent or null passes, unless said otherwise):
    every message   an object; `role` one of ROLES; `name` a string
    content         a string, or a list of parts, each an object with a string `type`: `text` parts need a
                    string `text`, `image_url` parts an `image_url` string or object with a string `url`;
                    system, developer, assistant and tool messages take text parts only (assistant also
                    `refusal` parts), user messages any part type (the model endpoint judges the others)
    assistant       `tool_calls` a list of {id: string, type: "function", function: {name: non-empty string,
                    arguments: string or object}}; `reasoning_content`, `reasoning`, `refusal` strings
    tool            `tool_call_id` a string (required)
Only assistant messages may carry `tool_calls`. Fields not named here are passed over.
"""

from __future__ import annotations

from typing import Any

ROLES = ("system", "user", "assistant", "tool", "developer")
_TEXT_ONLY = {"system": ("text",), "developer": ("text",), "tool": ("text",),
              "assistant": ("text", "refusal")}
_STRINGS = ("name", "reasoning_content", "reasoning", "refusal")


_KINDS = {bool: "a boolean", int: "a number", float: "a number", str: "a string", list: "a list",
          dict: "an object"}


def _kind(value: Any) -> str:
    return "null" if value is None else _KINDS.get(type(value), type(value).__name__)


class _Bad(Exception):
    def __init__(self, path: str, what: str):
        super().__init__(f"{path} {what}")
        self.path = path


def message_problem(messages: Any, where: str = "messages") -> tuple[str, str] | None:
    """(path, message) for the first field of `messages` that a chat message cannot have, or None. The
    message starts with the path: `messages[0].content must be a string or a list of parts, got a number`."""
    try:
        if not isinstance(messages, list) or not messages:
            raise _Bad(where, "must be a non-empty list of message objects")
        for i, m in enumerate(messages):
            _message(m, f"{where}[{i}]")
    except _Bad as e:
        return e.path, str(e)
    return None


def _message(m: Any, at: str) -> None:
    if not isinstance(m, dict):
        raise _Bad(at, f"must be a message object, got {_kind(m)}")
    role = m.get("role")
    if role not in ROLES:
        raise _Bad(f"{at}.role", f"must be system, developer, user, assistant or tool, got {role!r}"[:200])
    for name in _STRINGS:
        if m.get(name) is not None and not isinstance(m[name], str):
            raise _Bad(f"{at}.{name}", f"must be a string, got {_kind(m[name])}")
    _content(m.get("content"), f"{at}.content", _TEXT_ONLY.get(role))
    if m.get("tool_calls") is not None:
        if role != "assistant":
            raise _Bad(f"{at}.tool_calls", f"belong to assistant messages only, not to a {role} message")
        _tool_calls(m["tool_calls"], f"{at}.tool_calls")
    if role == "tool" and not isinstance(m.get("tool_call_id"), str):
        raise _Bad(f"{at}.tool_call_id", "must be the string id of the tool call this message answers, got "
                                         f"{_kind(m.get('tool_call_id'))}")
    if m.get("tool_call_id") is not None and not isinstance(m["tool_call_id"], str):
        raise _Bad(f"{at}.tool_call_id", f"must be a string, got {_kind(m['tool_call_id'])}")


def _content(content: Any, at: str, only: tuple[str, ...] | None) -> None:
    if content is None or isinstance(content, str):
        return
    if not isinstance(content, list):
        raise _Bad(at, f"must be a string or a list of parts, got {_kind(content)}")
    for j, part in enumerate(content):
        here = f"{at}[{j}]"
        if not isinstance(part, dict):
            raise _Bad(here, f"must be a content part object ({{\"type\": \"text\", \"text\": ...}}), got "
                             f"{_kind(part)}")
        kind = part.get("type")
        if not isinstance(kind, str):
            raise _Bad(f"{here}.type", f"must be a string (text, image_url, ...), got {_kind(kind)}")
        if only is not None and kind not in only:
            raise _Bad(f"{here}.type", f"must be {' or '.join(only)} in this message, got {kind!r}"[:200])
        if kind in ("text", "refusal") and not isinstance(part.get(kind), str):
            raise _Bad(f"{here}.{kind}", f"must be a string, got {_kind(part.get(kind))}")
        if kind == "image_url":
            image = part.get("image_url")
            if isinstance(image, dict):
                if not isinstance(image.get("url"), str):
                    raise _Bad(f"{here}.image_url.url", f"must be a string, got {_kind(image.get('url'))}")
            elif not isinstance(image, str):
                raise _Bad(f"{here}.image_url", f"must be an object {{\"url\": ...}}, got {_kind(image)}")


def _tool_calls(calls: Any, at: str) -> None:
    if not isinstance(calls, list):
        raise _Bad(at, f"must be a list of tool calls, got {_kind(calls)}")
    for j, call in enumerate(calls):
        here = f"{at}[{j}]"
        if not isinstance(call, dict):
            raise _Bad(here, "must be a tool call object {\"id\", \"type\": \"function\", \"function\": "
                             f"{{\"name\", \"arguments\"}}}}, got {_kind(call)}")
        if not isinstance(call.get("id"), str):
            raise _Bad(f"{here}.id", f"must be a string, got {_kind(call.get('id'))}")
        if call.get("type", "function") != "function":
            raise _Bad(f"{here}.type", f"must be 'function', got {call.get('type')!r}"[:200])
        fn = call.get("function")
        if not isinstance(fn, dict):
            raise _Bad(f"{here}.function", f"must be an object {{\"name\", \"arguments\"}}, got {_kind(fn)}")
        if not isinstance(fn.get("name"), str) or not fn["name"]:
            raise _Bad(f"{here}.function.name", f"must be a non-empty string, got {_kind(fn.get('name'))}")
        args = fn.get("arguments")
        if args is not None and not isinstance(args, str | dict):
            raise _Bad(f"{here}.function.arguments", f"must be a JSON string, got {_kind(args)}")


__all__ = ["ROLES", "message_problem"]
