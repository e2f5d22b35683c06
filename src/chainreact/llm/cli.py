"""`chainreact complete CONFIG PROMPT [--stream] [--json]`: exactly one model call, for debugging an endpoint.

Uses the document's endpoint(s), params, retries and failover; sends the systemPrompt, the preset
messages and the prompt; no tools. `--json` prints one stable object:
{"content", "reasoning", "tool_calls": [{"id", "name", "arguments"}], "finish_reason", "usage",
 "endpoint", "model"}. Exit codes are the CLI's (docs/cli.md): 0 success, 1 model or document error,
 2 usage error.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import orjson

from chainreact.config import AgentConfig
from chainreact.types import Message, ModelResponse, ReasoningChunk, TextChunk


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


async def _complete(cfg: AgentConfig, prompt: str, stream: bool, as_json: bool) -> int:
    from .client import ModelClient

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
        async for item in client.call(messages, stream=stream):
            if isinstance(item, ModelResponse):
                resp = item
            elif not as_json and isinstance(item, TextChunk):
                out.write(item.text)
                out.flush()
                printed = True
            elif not as_json and isinstance(item, ReasoningChunk):
                sys.stderr.write(item.text)
                sys.stderr.flush()
    finally:
        await client.aclose()
    assert resp is not None
    if as_json:
        out.write(orjson.dumps(result_json(resp)).decode() + "\n")
        return 0
    m = resp.message
    if not stream and m.reasoning:
        sys.stderr.write(m.reasoning)
    if stream and m.reasoning:
        sys.stderr.write("\n")
    if not printed:
        out.write(m.text)
    out.write("\n")
    for call in m.tool_calls or ():
        out.write(f"tool_call {call.id} {call.name} {call.arguments}\n")
    usage = resp.usage.to_dict() if resp.usage else None
    sys.stderr.write(f"[finish_reason={resp.finish_reason} usage={usage} endpoint={resp.endpoint}]\n")
    return 0


def complete_main(cfg: AgentConfig, prompt: str, *, stream: bool = False, as_json: bool = False) -> int:
    """Entry point of `chainreact complete`: `cfg` is already resolved (templates rendered by
    chainreact.config.resolve, like `run`). Errors propagate: the CLI maps them to its exit codes."""
    return asyncio.run(_complete(cfg, prompt, stream, as_json))
