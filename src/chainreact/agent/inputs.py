"""The input contract: from whatever a caller passes to the message list of a run.

- a JSON body (dict) with `messages` (OpenAI chat shape, tool history kept), or a list of messages:
  those are the conversation;
- anything else (a string, a dict without `messages`, a number) becomes one user message (non-strings
  as compact JSON);
- preset messages from the config are used only when the input brings no messages of its own;
- the system prompt is prepended only when the conversation has no system message; a conversation's own
  system message gets `system_hook` applied instead (the skill catalog goes there);
- empty assistant messages are dropped; empty or null tool arguments become "{}".
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import orjson

from ..types import Message


def _to_message(m: Any, where: str) -> Message:
    if isinstance(m, Message):
        return Message(m.role, m.content, list(m.tool_calls) if m.tool_calls else None, m.tool_call_id,
                       m.name, m.reasoning)
    if isinstance(m, dict):
        if m.get("role") not in ("system", "user", "assistant", "tool"):
            from ..errors import ConfigError

            raise ConfigError(f"{where}: message role must be system, user, assistant or tool, "
                              f"got {m.get('role')!r}")
        return Message.from_openai(m)
    if hasattr(m, "model_dump"):  # config ChatMessage
        return Message.from_openai(m.model_dump(exclude_none=True))
    from ..errors import ConfigError

    raise ConfigError(f"{where}: expected a chat message object, got {type(m).__name__}")


def input_messages(data: Any) -> list[Message] | None:
    """The conversation the input carries, or None when the input is a single request."""
    if isinstance(data, dict) and "messages" in data and isinstance(data["messages"], list):
        return [_to_message(m, f"input.messages[{i}]") for i, m in enumerate(data["messages"])]
    if isinstance(data, list | tuple) and data and all(
        isinstance(m, Message) or (isinstance(m, dict) and "role" in m) for m in data
    ):
        return [_to_message(m, f"input[{i}]") for i, m in enumerate(data)]
    return None


def input_text(data: Any) -> str | list[dict[str, Any]]:
    if isinstance(data, str):
        return data
    if isinstance(data, bytes):
        return data.decode("utf-8", "replace")
    return orjson.dumps(data, default=str).decode()


async def gen_messages(gen: Callable[[str, Any], Any], instruction: str, data: Any) -> list[Message]:
    """A custom GenModelInput's messages (Message objects or OpenAI-shaped dicts; sync or async)."""
    out = gen(instruction, data)
    if hasattr(out, "__await__"):
        out = await out
    if not isinstance(out, list | tuple):
        from ..errors import ConfigError

        raise ConfigError(f"gen_model_input must return a list of messages, got {type(out).__name__}")
    return [_to_message(m, f"gen_model_input()[{i}]") for i, m in enumerate(out)]


def build_messages(data: Any, system_prompt: str, preset: Sequence[Any],
                   system_hook: Callable[[str], str] | None = None) -> list[Message]:
    messages = input_messages(data)
    if messages is None:
        messages = [_to_message(m, f"messages[{i}]") for i, m in enumerate(preset)]
        if data is not None and data != "":
            messages.append(Message("user", input_text(data)))
    out: list[Message] = []
    for m in messages:
        if m.role == "assistant" and not m.tool_calls and not m.text and not m.content:
            continue  # empty assistant messages confuse some endpoints and carry nothing
        if m.tool_calls:
            for tc in m.tool_calls:
                if not tc.arguments or not tc.arguments.strip() or tc.arguments.strip() == "null":
                    tc.arguments = "{}"
        out.append(m)
    own = next((i for i, m in enumerate(out) if m.role == "system"), None)
    if own is None:
        if system_prompt:
            out.insert(0, Message("system", system_prompt))
    elif system_hook is not None and isinstance(text := out[own].content, str):
        out[own] = Message("system", system_hook(text), name=out[own].name)
    return out
