"""An AG-UI `RunAgentInput` read for `POST /agui/{id}`: checked field by field, its messages as OpenAI chat
messages (what chainreact's agents, chains and flows take), its front-end tools as OpenAI function tools,
and the answers it brings to an earlier run (resume entries, tool results).

    threadId, runId           required; threadId is the chainreact session (with --state), runId the client's
    messages                  developer/system, user (text, image parts), assistant (content, toolCalls),
                              tool (toolCallId, content); activity and reasoning messages are passed over
    tools                     {name, description, parameters}: the client's own tools (agents only)
    context                   [{description, value}]: one user message before the last user message, for
                              this run only (not kept in the session)
    resume                    [{interruptId, status, payload}]: answers to the interrupts that ended a run
    state, forwardedProps     accepted, not applied (a flow's state is the server's session)

A problem is a `BadInput` naming the field (`messages[2].content[0].type`) and what to send.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

MAX_THREAD = 200  # a session key's limit (server/sessions.py)


class BadInput(Exception):
    pass


@dataclass
class AguiInput:
    thread_id: str
    run_id: str
    messages: list[dict[str, Any]]  # OpenAI chat messages, context inserted
    tools: list[dict[str, Any]] | None  # OpenAI function tools, or None when none were given
    resume: list[dict[str, Any]] = field(default_factory=list)
    state: Any = None
    raw: dict[str, Any] = field(default_factory=dict)

    def last_user_text(self) -> str | None:
        for m in reversed(self.messages):
            if m["role"] == "user" and not m.get("context"):
                content = m["content"]
                if isinstance(content, str):
                    return content
                return "".join(p.get("text", "") for p in content if p.get("type") == "text")
        return None

    def trailing_results(self) -> list[tuple[str, Any]]:
        """(toolCallId, content) of the tool messages at the end of the conversation."""
        out: list[tuple[str, Any]] = []
        for m in reversed(self.messages):
            if m["role"] != "tool":
                break
            out.append((m["tool_call_id"], m["content"]))
        return out[::-1]


def _text(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise BadInput(f"{where} must be a string, got {type(value).__name__}")
    return value


def _ident(body: dict[str, Any], name: str) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value or len(value) > MAX_THREAD or not value.isprintable():
        raise BadInput(f"{name} must be printable text of 1 to {MAX_THREAD} characters, got {value!r}")
    return value


def _part(p: Any, where: str) -> dict[str, Any]:
    if not isinstance(p, dict):
        raise BadInput(f"{where} must be a content part object")
    kind = p.get("type")
    if kind == "text":
        return {"type": "text", "text": _text(p.get("text"), f"{where}.text")}
    if kind == "image":
        src = p.get("source")
        if not isinstance(src, dict):
            raise BadInput(f"{where}.source must be an object {{type: url | data, value, mimeType}}")
        value = _text(src.get("value"), f"{where}.source.value")
        if src.get("type") == "url":
            return {"type": "image_url", "image_url": {"url": value}}
        if src.get("type") == "data":
            mime = _text(src.get("mimeType"), f"{where}.source.mimeType")
            return {"type": "image_url", "image_url": {"url": f"data:{mime};base64,{value}"}}
        raise BadInput(f"{where}.source.type must be url or data for an image, got {src.get('type')!r}")
    raise BadInput(f"{where}.type {kind!r} is not supported: send text and image parts")


def _message(m: Any, where: str) -> dict[str, Any] | None:
    if not isinstance(m, dict):
        raise BadInput(f"{where} must be a message object")
    role = m.get("role")
    if role in ("system", "developer"):
        return {"role": "system", "content": _text(m.get("content"), f"{where}.content")}
    if role == "user":
        content = m.get("content")
        if isinstance(content, list):
            parts = [_part(p, f"{where}.content[{i}]") for i, p in enumerate(content)]
            return {"role": "user", "content": parts}
        return {"role": "user", "content": _text(content, f"{where}.content")}
    if role == "assistant":
        out: dict[str, Any] = {"role": "assistant", "content": m.get("content") or ""}
        if not isinstance(out["content"], str):
            raise BadInput(f"{where}.content must be a string")
        calls = m.get("toolCalls")
        if calls:
            if not isinstance(calls, list):
                raise BadInput(f"{where}.toolCalls must be a list")
            out["tool_calls"] = [_tool_call(c, f"{where}.toolCalls[{i}]") for i, c in enumerate(calls)]
        return out
    if role == "tool":
        content = m.get("content")
        if isinstance(content, list):
            content = "".join(_part(p, f"{where}.content[{i}]").get("text", "")
                              for i, p in enumerate(content))
        text = _text(content, f"{where}.content")
        if m.get("error"):
            text = orjson.dumps({"content": text, "is_error": True}).decode()
        return {"role": "tool", "tool_call_id": _text(m.get("toolCallId"), f"{where}.toolCallId"),
                "content": text}
    if role in ("activity", "reasoning"):
        return None  # the client's own rendering state and the model's reasoning: not conversation
    raise BadInput(f"{where}.role must be developer, system, user, assistant, tool, activity or reasoning, "
                   f"got {role!r}")


def _tool_call(c: Any, where: str) -> dict[str, Any]:
    fn = c.get("function") if isinstance(c, dict) else None
    if not isinstance(fn, dict):
        raise BadInput(f"{where} must be {{id, type: function, function: {{name, arguments}}}}")
    return {"id": _text(c.get("id"), f"{where}.id"), "type": "function",
            "function": {"name": _text(fn.get("name"), f"{where}.function.name"),
                         "arguments": _text(fn.get("arguments", ""), f"{where}.function.arguments")}}


def _tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None or tools == []:
        return None
    if not isinstance(tools, list):
        raise BadInput("tools must be a list of {name, description, parameters}")
    out = []
    for i, t in enumerate(tools):
        if not isinstance(t, dict):
            raise BadInput(f"tools[{i}] must be an object {{name, description, parameters}}")
        fn: dict[str, Any] = {"name": t.get("name"), "description": t.get("description") or ""}
        if t.get("parameters") is not None:
            fn["parameters"] = t["parameters"]
        out.append({"type": "function", "function": fn})
    return out


def _context(context: Any) -> str | None:
    if not context:
        return None
    if not isinstance(context, list):
        raise BadInput("context must be a list of {description, value}")
    lines = []
    for i, c in enumerate(context):
        if not isinstance(c, dict):
            raise BadInput(f"context[{i}] must be an object {{description, value}}")
        lines.append(f"- {_text(c.get('description'), f'context[{i}].description')}: "
                     f"{_text(c.get('value'), f'context[{i}].value')}")
    return "Context from the application:\n" + "\n".join(lines)


def _resume(resume: Any) -> list[dict[str, Any]]:
    if not resume:
        return []
    if not isinstance(resume, list):
        raise BadInput("resume must be a list of {interruptId, status, payload}")
    for i, r in enumerate(resume):
        if not isinstance(r, dict) or not isinstance(r.get("interruptId"), str):
            raise BadInput(f"resume[{i}] must be an object with an interruptId")
        if r.get("status") not in ("resolved", "cancelled"):
            raise BadInput(f"resume[{i}].status must be resolved or cancelled, got {r.get('status')!r}")
    return resume


def parse_input(raw: bytes) -> AguiInput:
    """The request body as an AguiInput; BadInput naming what is wrong."""
    try:
        body = orjson.loads(raw or b"")
    except orjson.JSONDecodeError as e:
        raise BadInput(f"the request body is not valid JSON: {e}") from None
    if not isinstance(body, dict):
        raise BadInput("the request body must be a RunAgentInput object {threadId, runId, messages, ...}")
    thread, run = _ident(body, "threadId"), _ident(body, "runId")
    msgs = body.get("messages")
    if not isinstance(msgs, list):
        raise BadInput("messages must be a list of AG-UI messages")
    messages = [c for i, m in enumerate(msgs) if (c := _message(m, f"messages[{i}]")) is not None]
    context = _context(body.get("context"))
    if context is not None:
        at = max((i for i, m in enumerate(messages) if m["role"] == "user"), default=len(messages))
        messages.insert(at, {"role": "user", "content": context, "context": True})
    return AguiInput(thread, run, messages, _tools(body.get("tools")), _resume(body.get("resume")),
                     body.get("state"), body)


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without this module's own markers (what the agent is given)."""
    return [{k: v for k, v in m.items() if k != "context"} if "context" in m else m for m in messages]


__all__ = ["AguiInput", "BadInput", "chat_messages", "parse_input"]
