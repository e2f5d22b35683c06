"""Scripted turns: validation, and rendering a turn into OpenAI chat-completion JSON or stream chunks.

Pure functions, no I/O: the server decides timing, faults and framing. A turn is a plain dict so scripts
can live in JSON/YAML files; `validate_turn` catches typos early with a message naming the turn and key.
"""

from __future__ import annotations

import base64
import binascii
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from chainreact.errors import ConfigError

FAULTS = ("reset", "disconnect", "malformed", "empty", "no_finish", "error_event")
REASONING_FIELDS = ("reasoning_content", "reasoning")

_NUM = (int, float)
_TYPES: dict[str, tuple[type, ...]] = {
    "text": (str,),
    "chunks": (int,),
    "chunk_size": (int,),
    "reasoning": (str,),
    "reasoning_field": (str,),
    "tool_calls": (list,),
    "arg_chunks": (int,),
    "interleave": (bool,),
    "omit_index": (bool,),
    "tool_delay": _NUM,
    "chunk_delay": _NUM,
    "first_byte_delay": _NUM,
    "delay": _NUM,
    "finish_reason": (str,),
    "usage": (dict, type(None)),
    "status": (int,),
    "body": (str, dict, list),
    "headers": (dict,),
    "message": (str,),
    "fault": (str,),
    "after_chunks": (int,),
    "raw_body": (str,),
    "raw_body_b64": (str,),
    "content_type": (str, type(None)),
    "expect": (dict,),
    "model": (str,),
}
TURN_KEYS = frozenset(_TYPES)
_POSITIVE = ("chunks", "chunk_size", "arg_chunks")
_NON_NEGATIVE = ("tool_delay", "chunk_delay", "first_byte_delay", "delay", "after_chunks")


def validate_turn(turn: Any, where: str) -> dict[str, Any]:
    """Check a turn's keys and value types; returns a plain dict copy. `where` names it in errors."""
    if not isinstance(turn, Mapping):
        raise ConfigError(f"{where}: a turn must be a dict of turn keys, got {type(turn).__name__}")
    unknown = sorted(set(turn) - TURN_KEYS)
    if unknown:
        raise ConfigError(
            f"{where}: unknown turn key(s) {', '.join(map(repr, unknown))}; "
            f"valid keys: {', '.join(sorted(TURN_KEYS))} (see docs/testing.md)"
        )
    for key, value in turn.items():
        types = _TYPES[key]
        # bool is an int subclass; a `chunks: true` typo must not pass as 1.
        if not isinstance(value, types) or (isinstance(value, bool) and bool not in types):
            names = " or ".join("null" if t is type(None) else t.__name__ for t in types)
            raise ConfigError(f"{where}: turn key {key!r} must be {names}, got {value!r}")
    for key in _POSITIVE:
        if key in turn and turn[key] < 1:
            raise ConfigError(f"{where}: turn key {key!r} must be >= 1, got {turn[key]}")
    for key in _NON_NEGATIVE:
        if key in turn and turn[key] < 0:
            raise ConfigError(f"{where}: turn key {key!r} must be >= 0, got {turn[key]}")
    if "chunks" in turn and "chunk_size" in turn:
        raise ConfigError(f"{where}: give either 'chunks' or 'chunk_size', not both")
    if turn.get("reasoning_field", "reasoning_content") not in REASONING_FIELDS:
        raise ConfigError(f"{where}: 'reasoning_field' must be one of {REASONING_FIELDS}")
    if "fault" in turn and turn["fault"] not in FAULTS:
        raise ConfigError(f"{where}: 'fault' must be one of {', '.join(FAULTS)}, got {turn['fault']!r}")
    if "status" in turn and not 100 <= turn["status"] <= 599:
        raise ConfigError(f"{where}: 'status' must be an HTTP status 100-599, got {turn['status']}")
    if "raw_body" in turn and "raw_body_b64" in turn:
        raise ConfigError(f"{where}: give either 'raw_body' or 'raw_body_b64', not both")
    if "raw_body_b64" in turn:
        try:
            base64.b64decode(turn["raw_body_b64"], validate=True)
        except (binascii.Error, ValueError) as e:
            raise ConfigError(f"{where}: 'raw_body_b64' is not valid base64: {e}") from e
    if ("raw_body" in turn or "raw_body_b64" in turn) and turn.get("fault") not in (
        None,
        "reset",
        "disconnect",
        "empty",
    ):
        raise ConfigError(f"{where}: with a raw body only the faults reset, disconnect and empty apply")
    for i, call in enumerate(turn.get("tool_calls", ())):
        at = f"{where}: tool_calls[{i}]"
        if not isinstance(call, Mapping):
            raise ConfigError(f"{at} must be a dict with 'name' and 'arguments'")
        extra = sorted(set(call) - {"name", "arguments", "id"})
        if extra:
            raise ConfigError(f"{at}: unknown key(s) {extra}; valid: name, arguments, id")
        if not isinstance(call.get("name"), str):
            raise ConfigError(f"{at}: 'name' must be a string")
        if not isinstance(call.get("arguments", {}), dict | str):
            raise ConfigError(f"{at}: 'arguments' must be a dict (sent JSON-encoded) or a raw string")
        if "id" in call and not isinstance(call["id"], str):
            raise ConfigError(f"{at}: 'id' must be a string")
    for name, value in turn.get("headers", {}).items():
        if not isinstance(name, str) or not isinstance(value, str | int | float):
            raise ConfigError(f"{where}: header {name!r} must map a string to a string")
    return dict(turn)


# --- text helpers -------------------------------------------------------------------------------------

_WORDS = re.compile(r"\s*\S+|\s+")


def split_text(text: str, chunks: int | None = None, chunk_size: int | None = None) -> list[str]:
    """Pieces that concatenate back to `text`: N near-equal pieces, fixed-size pieces, or word pieces."""
    if not text:
        return []
    if chunk_size is not None:
        return [text[i : i + chunk_size] for i in range(0, len(text), chunk_size)]
    if chunks is not None:
        n = min(chunks, len(text))
        bounds = [round(i * len(text) / n) for i in range(n + 1)]
        return [text[bounds[i] : bounds[i + 1]] for i in range(n)]
    return _WORDS.findall(text)


def estimate_tokens(chars: int) -> int:
    """Deterministic stand-in for a tokenizer: about four characters per token."""
    return math.ceil(chars / 4)


def prompt_chars(body: Mapping[str, Any]) -> int:
    n = 0
    for msg in body.get("messages") or ():
        if not isinstance(msg, Mapping):
            continue
        content = msg.get("content")
        if isinstance(content, str):
            n += len(content)
        elif isinstance(content, list):
            n += sum(len(p.get("text") or "") for p in content if isinstance(p, Mapping))
        for call in msg.get("tool_calls") or ():
            fn = call.get("function") if isinstance(call, Mapping) else None
            if isinstance(fn, Mapping):
                n += len(str(fn.get("name") or "")) + len(str(fn.get("arguments") or ""))
    return n


# --- rendering ----------------------------------------------------------------------------------------


@dataclass(slots=True)
class Pause:
    """A pause inside a stream (tool_delay): the server sleeps instead of sending a chunk."""

    seconds: float


@dataclass(slots=True)
class RenderContext:
    completion_id: str
    created: int
    model: str
    call_id_prefix: str
    prompt_tokens: int


def _arguments(call: Mapping[str, Any]) -> str:
    args = call.get("arguments", {})
    return args if isinstance(args, str) else orjson.dumps(args).decode()


def tool_calls_of(turn: Mapping[str, Any], ctx: RenderContext) -> list[dict[str, Any]]:
    """The turn's tool calls in OpenAI message form, with ids filled in."""
    return [
        {
            "id": call.get("id") or f"{ctx.call_id_prefix}_{i}",
            "type": "function",
            "function": {"name": call["name"], "arguments": _arguments(call)},
        }
        for i, call in enumerate(turn.get("tool_calls") or ())
    ]


def finish_reason_of(turn: Mapping[str, Any]) -> str | None:
    if turn.get("fault") == "no_finish":
        return None
    if "finish_reason" in turn:
        return str(turn["finish_reason"])
    return "tool_calls" if turn.get("tool_calls") else "stop"


def usage_of(
    turn: Mapping[str, Any], ctx: RenderContext, calls: list[dict[str, Any]]
) -> dict[str, Any] | None:
    if "usage" in turn:
        return turn["usage"]
    reasoning_tokens = estimate_tokens(len(turn.get("reasoning", "")))
    out_chars = len(turn.get("text", "")) + sum(
        len(c["function"]["name"]) + len(c["function"]["arguments"]) for c in calls
    )
    completion = max(1, estimate_tokens(out_chars) + reasoning_tokens)
    return {
        "prompt_tokens": ctx.prompt_tokens,
        "completion_tokens": completion,
        "total_tokens": ctx.prompt_tokens + completion,
        "prompt_tokens_details": {"cached_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
    }


def render_completion(turn: Mapping[str, Any], ctx: RenderContext) -> dict[str, Any]:
    """The non-streaming `chat.completion` object for a turn."""
    calls = tool_calls_of(turn, ctx)
    message: dict[str, Any] = {"role": "assistant", "content": turn.get("text") if "text" in turn else None}
    if not calls and message["content"] is None:
        message["content"] = ""
    if "reasoning" in turn:
        message[turn.get("reasoning_field", "reasoning_content")] = turn["reasoning"]
    if calls:
        message["tool_calls"] = calls
    out: dict[str, Any] = {
        "id": ctx.completion_id,
        "object": "chat.completion",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [
            {"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason_of(turn)}
        ],
    }
    usage = usage_of(turn, ctx, calls)
    if usage is not None:
        out["usage"] = usage
    return out


def _chunk(ctx: RenderContext, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    return {
        "id": ctx.completion_id,
        "object": "chat.completion.chunk",
        "created": ctx.created,
        "model": ctx.model,
        "choices": [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}],
    }


def _call_fragments(turn: Mapping[str, Any], calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    n = int(turn.get("arg_chunks", 1))
    omit_index = bool(turn.get("omit_index"))
    per_call: list[list[dict[str, Any]]] = []
    for index, call in enumerate(calls):
        pieces = split_text(call["function"]["arguments"], chunks=n) or [""]
        frags: list[dict[str, Any]] = []
        for j, piece in enumerate(pieces):
            frag: dict[str, Any] = {} if omit_index else {"index": index}
            if j == 0:
                frag.update(id=call["id"], type="function", function={"name": call["function"]["name"]})
                frag["function"]["arguments"] = piece
            else:
                frag["function"] = {"arguments": piece}
            frags.append(frag)
        per_call.append(frags)
    if turn.get("interleave"):
        longest = max((len(f) for f in per_call), default=0)
        return [f[j] for j in range(longest) for f in per_call if j < len(f)]
    return [frag for frags in per_call for frag in frags]


def render_stream(
    turn: Mapping[str, Any], ctx: RenderContext, include_usage: bool
) -> list[dict[str, Any] | Pause]:
    """The stream's chunk objects in order (no `[DONE]`), with Pause markers where tool_delay applies.

    The role rides on the first delta, whatever it carries, as OpenAI does.
    """
    deltas: list[dict[str, Any] | Pause] = []
    split = {"chunks": turn.get("chunks"), "chunk_size": turn.get("chunk_size")}
    field = turn.get("reasoning_field", "reasoning_content")
    deltas.extend({field: p} for p in split_text(turn.get("reasoning", ""), **split))
    text_pieces = split_text(turn.get("text", ""), **split)
    deltas.extend({"content": p} for p in text_pieces)
    calls = tool_calls_of(turn, ctx)
    if calls and text_pieces and turn.get("tool_delay"):
        deltas.append(Pause(float(turn["tool_delay"])))
    deltas.extend({"tool_calls": [frag]} for frag in _call_fragments(turn, calls))

    out: list[dict[str, Any] | Pause] = []
    role_sent = False
    for d in deltas:
        if isinstance(d, Pause):
            out.append(d)
            continue
        if not role_sent:
            d = {"role": "assistant", **({"content": None} if "tool_calls" in d else {}), **d}
            role_sent = True
        out.append(_chunk(ctx, d))
    if not role_sent:
        out.append(_chunk(ctx, {"role": "assistant", "content": ""}))
    finish = finish_reason_of(turn)
    if finish is not None:
        out.append(_chunk(ctx, {}, finish))
    usage = usage_of(turn, ctx, calls)
    if include_usage and usage is not None:
        out.append({**_chunk(ctx, {}), "choices": [], "usage": usage})
    return out


def error_payload(turn: Mapping[str, Any], status: int | None, default_message: str) -> Any:
    """The `body` a scripted error carries: the turn's own, else an OpenAI-style error object."""
    if "body" in turn:
        return turn["body"]
    kind, code = _ERROR_KINDS.get(status or 500, ("server_error", "server_error"))
    if status is not None and 400 <= status < 500 and status not in _ERROR_KINDS:
        kind, code = "invalid_request_error", "invalid_request"
    return {"error": {"message": turn.get("message", default_message), "type": kind, "code": code}}


_ERROR_KINDS = {
    400: ("invalid_request_error", "invalid_request"),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", "permission_denied"),
    404: ("not_found_error", "model_not_found"),
    408: ("timeout_error", "timeout"),
    413: ("invalid_request_error", "request_too_large"),
    418: ("invalid_request_error", "expectation_failed"),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}
