"""`chainreact complete CONFIG PROMPT [--stream] [--json]`: exactly one model call, for debugging an endpoint.

Uses the document's endpoint(s), params, retries and failover; sends the systemPrompt, the preset
messages and the prompt; no tools. `--json` prints one stable object:
{"content", "reasoning", "tool_calls": [{"id", "name", "arguments"}], "finish_reason", "usage",
 "endpoint", "model"}. Exit codes: 0 success, 1 model error, 2 configuration error.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

import orjson

from chainreact.errors import ConfigError, ModelError
from chainreact.types import Message, ModelResponse, ReasoningChunk, TextChunk


def parse_globals(items: list[str] | None) -> dict[str, Any]:
    """KEY=VALUE items (dotted keys nest; KEY:=JSON sets a JSON value) as a nested dict."""
    out: dict[str, Any] = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ConfigError(f"--global {item!r}: expected KEY=VALUE")
        parsed: Any = value
        if key.endswith(":"):
            key = key[:-1]
            try:
                parsed = orjson.loads(value)
            except orjson.JSONDecodeError as e:
                raise ConfigError(f"--global {item!r}: invalid JSON value ({e})") from None
        node = out
        parts = key.split(".")
        for p in parts[:-1]:
            nxt = node.get(p)
            if not isinstance(nxt, dict):
                nxt = node[p] = {}
            node = nxt
        node[parts[-1]] = parsed
    return out


def result_json(resp: ModelResponse) -> dict[str, Any]:
    """The stable JSON form of one model call's result."""
    m = resp.message
    return {
        "content": m.text,
        "reasoning": m.reasoning or "",
        "tool_calls": [{"id": c.id, "name": c.name, "arguments": c.arguments} for c in m.tool_calls or ()],
        "finish_reason": resp.finish_reason,
        "usage": resp.usage.to_dict() if resp.usage else None,
        "endpoint": resp.endpoint,
        "model": resp.model,
    }


def _render(cfg_fields: dict[str, str], globals_: dict[str, Any], source: str | None) -> dict[str, str]:
    if not any("${" in v for v in cfg_fields.values()):
        return cfg_fields
    from chainreact.template import TemplateContext, render

    ctx = TemplateContext(globals=globals_, source=source)
    return {k: render(v, ctx) for k, v in cfg_fields.items()}


async def _complete(args: argparse.Namespace, prompt: str) -> int:
    from chainreact.config import load_document

    from .client import ModelClient

    doc = load_document(args.config)
    cfg = doc.config
    globals_ = parse_globals(getattr(args, "globals", None))
    top = _render({"url": cfg.url, "key": cfg.key, "model": cfg.model, "systemPrompt": cfg.systemPrompt},
                  globals_, doc.source)
    failover = []
    for fo in cfg.failover:
        r = _render({"url": fo.url, "key": fo.key, "model": fo.model}, globals_, doc.source)
        failover.append(fo.model_copy(update=r))
    cfg = cfg.model_copy(update={**top, "failover": failover})
    messages: list[Message] = []
    if cfg.systemPrompt:
        messages.append(Message("system", cfg.systemPrompt))
    for preset in cfg.messages:
        messages.append(Message.from_openai(preset.model_dump(exclude_none=True)))
    messages.append(Message("user", prompt))
    client = ModelClient.from_config(cfg)
    out = sys.stdout
    resp: ModelResponse | None = None
    printed = False
    try:
        async for item in client.call(messages, stream=bool(args.stream)):
            if isinstance(item, ModelResponse):
                resp = item
            elif not args.json and isinstance(item, TextChunk):
                out.write(item.text)
                out.flush()
                printed = True
            elif not args.json and isinstance(item, ReasoningChunk):
                sys.stderr.write(item.text)
                sys.stderr.flush()
    finally:
        await client.aclose()
    assert resp is not None
    if args.json:
        out.write(orjson.dumps(result_json(resp)).decode() + "\n")
        return 0
    m = resp.message
    if not args.stream and m.reasoning:
        sys.stderr.write(m.reasoning)
    if args.stream and m.reasoning:
        sys.stderr.write("\n")
    if not printed:
        out.write(m.text)
    out.write("\n")
    for call in m.tool_calls or ():
        out.write(f"tool_call {call.id} {call.name} {call.arguments}\n")
    usage = resp.usage.to_dict() if resp.usage else None
    sys.stderr.write(f"[finish_reason={resp.finish_reason} usage={usage} endpoint={resp.endpoint}]\n")
    return 0


def complete_main(args: argparse.Namespace) -> int:
    """Entry point of `chainreact complete` (args: config, prompt, stream, json, globals)."""
    prompt = args.prompt
    if prompt is None or prompt == "-":
        prompt = sys.stdin.read()
    try:
        return asyncio.run(_complete(args, prompt))
    except ModelError as e:
        sys.stderr.write(f"error: {e}\n")
        return 1
    except ConfigError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
