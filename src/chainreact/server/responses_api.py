"""OpenAI's Responses API, the request side: the body checked, `input` (text or items) and `instructions`
as chat messages, and the ids of responses.

Input items: messages (`{"role", "content"}` with or without `"type": "message"`; content as text or
`input_text` / `output_text` / `refusal` / `input_image` parts; `developer` counts as `system`),
`function_call` (the calls a previous response made: an assistant message's `tool_calls`),
`function_call_output` (their results: `tool` messages); `reasoning` items are passed over (the model's
reasoning is not sent back to it). `instructions` is a system message before the input: as on the chat
route, a request's system message takes the place of the agent's own system prompt.

Response ids: an agent's response is `resp_<run id>` (its conversation is the run's messages, kept in the
state store: `previous_response_id` continues from them). A chain's or a flow's response names its
session: `resp_s_<session key, base64url>_<random>`; `previous_response_id` continues that session.
"""

from __future__ import annotations

import base64
import binascii
import secrets
from typing import Any

from starlette.responses import JSONResponse

from .client_tools import result_text
from .openai_api import error, json_object

# Fields of a Responses request that change what is asked in ways this server does not do: refused, not
# dropped. Other unknown fields (temperature, include, store, metadata, ...) are accepted and not used:
# the served document decides its model's parameters (as on the chat route).
UNSUPPORTED = ("conversation", "prompt", "background")
_ROLES = {"user": "user", "system": "system", "developer": "system", "assistant": "assistant"}
_TEXT_PARTS = ("input_text", "output_text", "text", "refusal")


def parse_request(raw: bytes) -> dict[str, Any] | JSONResponse:
    """The request body as a dict, or the 400 that says what is wrong with it."""
    body = json_object(raw)
    if isinstance(body, JSONResponse):
        return body
    for name in UNSUPPORTED:
        if body.get(name):
            return error(400, f"'{name}' is not supported by this server; send the conversation as 'input' "
                              "(or continue one with 'previous_response_id')", code="unsupported_parameter")
    if not isinstance(body.get("model"), str) or not body["model"]:
        return error(400, "'model' must name a served agent, chain or flow (GET /v1/models lists them)")
    if "stream" in body and not isinstance(body["stream"], bool):
        return error(400, "'stream' must be true or false")
    inp = body.get("input")
    if inp is None and not body.get("previous_response_id"):
        return error(400, "'input' is required: text, or a list of input items", code="invalid_input")
    if inp is not None and not isinstance(inp, str | list):
        return error(400, "'input' must be text or a list of input items", code="invalid_input")
    for name in ("instructions", "previous_response_id", "user"):
        if body.get(name) is not None and not isinstance(body[name], str):
            return error(400, f"'{name}' must be a string")
    text = body.get("text")
    if text is not None and not isinstance(text, dict):
        return error(400, "'text' must be an object, e.g. {\"format\": {\"type\": \"json_object\"}}")
    return body


def items(body: dict[str, Any]) -> list[Any]:
    """The request's input as a list of items (text: one user message)."""
    inp = body.get("input")
    if inp is None:
        return []
    return [{"role": "user", "content": inp}] if isinstance(inp, str) else list(inp)


def input_messages(body: dict[str, Any]) -> list[dict[str, Any]] | JSONResponse:
    """`instructions` and `input` as chat messages, or the 400 naming the item that cannot be one."""
    out: list[dict[str, Any]] = []
    if body.get("instructions"):
        out.append({"role": "system", "content": body["instructions"]})
    for i, it in enumerate(items(body)):
        at = f"input[{i}]"
        if not isinstance(it, dict):
            return error(400, f"{at} must be an input item object", code="invalid_input")
        kind = it.get("type", "message")
        if kind == "message":
            msg = _message(it, at)
            if isinstance(msg, JSONResponse):
                return msg
            out.append(msg)
        elif kind == "function_call":
            call_id, name = it.get("call_id"), it.get("name")
            if not isinstance(call_id, str) or not isinstance(name, str):
                return error(400, f"{at}: a function_call needs 'call_id' and 'name'", code="invalid_input")
            args = it.get("arguments")
            if args is not None and not isinstance(args, str):
                return error(400, f"{at}.arguments must be a JSON string", code="invalid_input",
                             extra={"param": f"{at}.arguments"})
            call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": args or "{}"}}
            last = out[-1] if out else None
            if last is not None and last["role"] == "assistant":
                last.setdefault("tool_calls", []).append(call)  # the calls of one model message
            else:
                out.append({"role": "assistant", "content": None, "tool_calls": [call]})
        elif kind == "function_call_output":
            if not isinstance(it.get("call_id"), str):
                return error(400, f"{at}: a function_call_output needs 'call_id'", code="invalid_input")
            out.append({"role": "tool", "tool_call_id": it["call_id"],
                        "content": result_text(it.get("output"))})
        elif kind != "reasoning":
            return error(400, f"{at}: items of type {kind!r} are not supported here (message, function_call, "
                              "function_call_output, reasoning)", code="invalid_input")
    return out


def _message(it: dict[str, Any], at: str) -> dict[str, Any] | JSONResponse:
    role = _ROLES.get(it.get("role"))  # type: ignore[arg-type]
    if role is None:
        return error(400, f"{at}.role must be user, system, developer or assistant, got {it.get('role')!r}",
                     code="invalid_input")
    content = it.get("content")
    if isinstance(content, str):
        return {"role": role, "content": content}
    if not isinstance(content, list):
        return error(400, f"{at}.content must be text or a list of content parts", code="invalid_input")
    parts: list[dict[str, Any]] = []
    for j, p in enumerate(content):
        kind = p.get("type") if isinstance(p, dict) else None
        if kind in _TEXT_PARTS:
            field = "refusal" if kind == "refusal" else "text"
            if not isinstance(p.get(field), str):
                return error(400, f"{at}.content[{j}].{field} must be a string", code="invalid_input",
                             extra={"param": f"{at}.content[{j}].{field}"})
            parts.append({"type": "text", "text": p[field]})
        elif kind == "input_image" and isinstance(p.get("image_url"), str) and role == "user":
            parts.append({"type": "image_url", "image_url": {"url": p["image_url"]}})
        else:
            return error(400, f"{at}.content[{j}]: parts of type {kind!r} are not supported here "
                              "(input_text, output_text, refusal; input_image with an image_url in user "
                              "messages)",
                         code="invalid_input")
    if all(p["type"] == "text" for p in parts):
        return {"role": role, "content": "".join(p["text"] for p in parts)}
    return {"role": role, "content": parts}


def text_format(body: dict[str, Any]) -> Any:
    """The request's `text.format` (the Responses API's response_format), or None."""
    text = body.get("text")
    return text.get("format") if isinstance(text, dict) else None


def run_response_id(run_id: str) -> str:
    return f"resp_{run_id}"


def session_response_id(session: str) -> str:
    key = base64.urlsafe_b64encode(session.encode()).decode().rstrip("=")
    return f"resp_s_{key}_{secrets.token_hex(4)}"


def previous_of(response_id: str) -> tuple[str, str] | None:
    """What a previous response id names: ("run", run id) or ("session", session key); None if not ours."""
    if response_id.startswith("resp_s_") and response_id.count("_") >= 3:
        key = response_id[len("resp_s_"):response_id.rindex("_")]
        try:
            return "session", base64.urlsafe_b64decode(key + "=" * (-len(key) % 4)).decode()
        except (binascii.Error, UnicodeDecodeError):
            return None
    if response_id.startswith("resp_") and len(response_id) > 5:
        return "run", response_id[5:]
    return None
