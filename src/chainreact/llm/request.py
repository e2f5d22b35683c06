"""ModelRequest (what one attempt sends) and its mapping to the OpenAI chat-completions JSON body.

Mapping (config -> wire): temperature, topP -> top_p, frequencyPenalty -> frequency_penalty,
presencePenalty -> presence_penalty (always sent, so an explicit 0 is honoured), maxTokens ->
max_completion_tokens (0 = omitted), stop (empty = omitted), responseFormat/jsonSchema -> response_format,
extraFields merged at the top level with dotted keys nested and standard fields winning on conflict,
then the endpoint's Compat switches (flattenContent, systemRole, toolChoiceRequired, omit[]).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from chainreact.config import Compat, ModelParams
from chainreact.errors import ConfigError
from chainreact.types import Message

from ..jsonutil import deep_merge


@dataclass(slots=True)
class ModelRequest:
    """One model attempt against one endpoint. Middleware (`wrap`) may return a changed copy
    (`dataclasses.replace`) before calling the inner function; the HTTP attempt builds the body from it.

    - messages: the conversation (chainreact Messages, not yet wire dicts)
    - tools: OpenAI `tools[]` entries, or None
    - tool_choice: "auto" | "none" | "required" | {"type": "function", ...} | None ("auto" with tools)
    - stream: whether the caller wants stream items (the wire may still be non-streaming when the
      endpoint's compat says `streamTools: false` and tools are present)
    - model: the model name sent to this endpoint
    - params: the effective ModelParams for this endpoint (primary's, merged with a failover's override)
    - endpoint: the endpoint's base URL (…/v1)
    - compat: the endpoint's compatibility switches
    - images: resolved image URLs / data: URLs appended to the last user message
    - extra: wire-level fields merged into the body (like extraFields; from `params_override`)
    - attempt: 1-based attempt number against this endpoint
    - timeout: seconds this attempt may take in all (what is left of `timeouts.total` for this endpoint),
      or None for no overall bound
    """

    messages: list[Message]
    tools: list[dict[str, Any]] | None
    tool_choice: str | dict[str, Any] | None
    stream: bool
    model: str
    params: ModelParams
    endpoint: str
    compat: Compat = field(default_factory=lambda: Compat.model_validate({}))
    images: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    attempt: int = 1
    timeout: float | None = None

    @property
    def wire_stream(self) -> bool:
        """Whether the HTTP request itself streams (see `stream`)."""
        return self.stream and (self.compat.streamTools or not self.tools)


def nest(fields: dict[str, Any]) -> dict[str, Any]:
    """Expand dotted keys: {"thinking.type": "x"} -> {"thinking": {"type": "x"}} (deep-merging)."""
    out: dict[str, Any] = {}
    for key, value in fields.items():
        parts = key.split(".") if "." in key else [key]
        target = out
        for p in parts[:-1]:
            nxt = target.get(p)
            if not isinstance(nxt, dict):
                nxt = target[p] = {}
            target = nxt
        leaf = parts[-1]
        if isinstance(value, dict) and isinstance(target.get(leaf), dict):
            target[leaf] = deep_merge(target[leaf], value)
        else:
            target[leaf] = value
    return out


def response_format(params: ModelParams) -> dict[str, Any] | None:
    fmt = params.responseFormat
    if fmt == "text":
        return None  # the default everywhere; some servers reject an explicit {"type": "text"}
    if fmt == "json_object":
        return {"type": "json_object"}
    schema: Any = params.jsonSchema
    if isinstance(schema, str):
        if not schema.strip():
            raise ConfigError("params.jsonSchema: responseFormat is json_schema but jsonSchema is empty; "
                              "give a JSON Schema (object or JSON string)")
        try:
            schema = orjson.loads(schema)
        except orjson.JSONDecodeError as e:
            raise ConfigError(f"params.jsonSchema: not valid JSON ({e}); give a JSON Schema object") from None
    if not isinstance(schema, dict):
        raise ConfigError("params.jsonSchema: expected a JSON object (a JSON Schema)")
    if "schema" in schema and isinstance(schema["schema"], dict):
        wrapper = dict(schema)  # already OpenAI's {"name", "schema", "strict"?} wrapper
        wrapper.setdefault("name", "response")
    else:
        title = schema.get("title")
        wrapper = {"name": _schema_name(title if isinstance(title, str) else "response"), "schema": schema}
    return {"type": "json_schema", "json_schema": wrapper}


def _schema_name(name: str) -> str:
    # OpenAI: ^[a-zA-Z0-9_-]{1,64}$
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)[:64]
    return cleaned or "response"


def _flatten(content: list[dict[str, Any]], where: str) -> str:
    texts = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "text":
            texts.append(str(part.get("text", "")))
        elif isinstance(part, str):
            texts.append(part)
        else:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise ConfigError(
                f"{where}: compat.flattenContent is on but a message has a {kind!r} content part, which a "
                "string cannot carry; turn flattenContent off for this endpoint or drop the non-text input"
            )
    return "\n".join(texts)


def wire_messages(req: ModelRequest) -> list[dict[str, Any]]:
    compat = req.compat
    out = [m.to_openai() for m in req.messages]
    if req.images:
        for i in range(len(out) - 1, -1, -1):
            if out[i]["role"] == "user":
                msg = out[i] = dict(out[i])
                content = msg.get("content")
                parts: list[Any]
                if isinstance(content, list):
                    parts = list(content)
                else:
                    parts = [{"type": "text", "text": content}] if content else []
                parts.extend({"type": "image_url", "image_url": {"url": u}} for u in req.images)
                msg["content"] = parts
                break
    if compat.flattenContent or not compat.systemRole:
        for i, m in enumerate(out):
            if compat.flattenContent and isinstance(m.get("content"), list):
                m = out[i] = {**m, "content": _flatten(m["content"], f"{req.endpoint}: messages[{i}]")}
            if not compat.systemRole and m["role"] == "system":
                out[i] = {**m, "role": "user"}
    return out


def build_body(req: ModelRequest) -> dict[str, Any]:
    """The JSON body of POST {endpoint}/chat/completions for this request."""
    p = req.params
    body: dict[str, Any] = {
        "model": req.model,
        "messages": wire_messages(req),
        "temperature": p.temperature,
        "top_p": p.topP,
        "frequency_penalty": p.frequencyPenalty,
        "presence_penalty": p.presencePenalty,
    }
    if p.maxTokens > 0:
        body["max_completion_tokens"] = p.maxTokens
    if p.stop:
        body["stop"] = list(p.stop)
    fmt = response_format(p)
    if fmt is not None:
        body["response_format"] = fmt
    if req.tools:
        body["tools"] = req.tools
    # "auto" is OpenAI's default with tools, but some servers (llama.cpp) ignore tools unless told.
    choice = req.tool_choice if req.tool_choice is not None else ("auto" if req.tools else None)
    if choice is not None and (req.tools or choice == "none"):
        if choice == "required" and not req.compat.toolChoiceRequired:
            choice = "auto"
        body["tool_choice"] = choice
    stream = req.wire_stream
    body["stream"] = stream
    if stream:
        body["stream_options"] = {"include_usage": True}
    extra: dict[str, Any] | None = None
    if p.extraFields:
        extra = nest(p.extraFields)
    if req.extra:
        extra = deep_merge(extra or {}, nest(req.extra))
    if extra:
        body = deep_merge(extra, body)  # standard fields win on conflict
    for key in req.compat.omit:
        _drop(body, key)
    return body


def _drop(body: dict[str, Any], dotted: str) -> None:
    parts = dotted.split(".")
    target: Any = body
    for p in parts[:-1]:
        target = target.get(p) if isinstance(target, dict) else None
        if target is None:
            return
    if isinstance(target, dict):
        target.pop(parts[-1], None)
