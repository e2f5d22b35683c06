"""One run of an `aiagent` node: prompts rendered, memory window read, the agent run with structured output,
the answer parsed and validated (asked again with the errors when it does not validate), memory appended.

The answer's text (the message the user sees) is the output's `response` field, else `answer`, `message`,
`reply` or `text` (the first of these the schema declares and the output holds as a string); a schema
with none of them gives no message, only `output`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..types import Message
from .errors import OutputValidationError
from .exprs import render
from .llm import agent_config
from .memory import (
    MEMORIES_HEADER,
    SUMMARY_HEADER,
    read_context,
    recall_memories,
    summary_request,
    write_memory,
)
from .model import AIAgentNode

TEXT_FIELDS = ("response", "answer", "message", "reply", "text")

RETRY_PROMPT = ("Your previous answer is not valid against the required JSON Schema:\n{errors}\n"
                "Answer again with only a JSON object that matches the schema.")

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


@dataclass
class AgentOutcome:
    output: Any
    text: str | None
    attempts: int


def parse_output(content: str, schema: dict[str, Any]) -> tuple[Any, list[str]]:
    """The parsed answer and its violations of `schema` (empty when valid). A ```json fence is accepted:
    endpoints without structured output often wrap the object in one."""
    from ..tools.jsonschema_lite import validate as schema_errors

    m = _FENCE.match(content)
    raw = m.group(1) if m else content
    try:
        value = json.loads(raw)
    except ValueError as e:
        return None, [f"$: not JSON ({e})"]
    return value, schema_errors(value, schema)


def answer_text(output: Any, schema: dict[str, Any]) -> str | None:
    props = schema.get("properties")
    if not isinstance(output, dict) or not isinstance(props, dict):
        return None
    for name in TEXT_FIELDS:
        if name in props and isinstance(output.get(name), str):
            return str(output[name])
    return None


def memory_key(node: AIAgentNode, env: dict[str, Any], default: str) -> str:
    mem = node.memory
    if mem is not None and mem.memoryId:
        return render(mem.memoryId, env) or default
    return default


async def _run(agent: Any, messages: list[Message], on_event: Callable[[Any], None] | None) -> Any:
    """One agent run; with `on_event`, a streaming one whose events (text deltas, tool calls and results)
    are handed to it as they happen."""
    if on_event is None:
        return await agent.run(messages)
    run = agent.start(messages, stream=True)
    try:
        async for ev in run:
            on_event(ev)
    except BaseException:
        run.cancel()  # the turn was cancelled (Ctrl-C in `chainreact chat`): stop the model call too
        raise
    return await run.result()


async def run_agent_node(node: AIAgentNode, env: dict[str, Any], store: Any, conversation: str,
                         *, base_dir: Path | None = None,
                         on_event: Callable[[Any], None] | None = None) -> AgentOutcome:
    """Run the node once on the turn's input. `conversation` is the session's default memory key;
    `on_event` receives the agent's events as they happen (Flow.stream(agent_events=True))."""
    from ..agent import Agent
    from ..config import AgentConfig

    system = render(node.systemMessage, env)
    if node.userIdentityExpression:
        identity = render(node.userIdentityExpression, env)
        if identity.strip():
            system += f"\n\nThe user: {identity}"
    user_text = render(node.userMessage, env)
    key = memory_key(node, env, conversation)

    async def summarize(prompt: str, previous: str | None, old: list[Message]) -> str:
        plain = agent_config(node, system_prompt="You summarize conversations.")
        # The summary is plain text: the node's model and parameters without its output schema.
        plain["params"] = {k: v for k, v in plain["params"].items()
                           if k not in ("responseFormat", "jsonSchema")}
        summarizer = Agent(config=AgentConfig.model_validate(plain), base_dir=base_dir)
        try:
            return (await summarizer.run(summary_request(prompt, previous, old))).content.strip()
        finally:
            await summarizer.aclose()

    context = await read_context(node, store, key, summarize)
    history = context.history
    if context.summary:
        system += "\n\n" + SUMMARY_HEADER + context.summary
    memories = await recall_memories(node, env, store)
    if memories:
        system += "\n\n" + MEMORIES_HEADER + "\n".join(f"- {m}" for m in memories)
    cfg = agent_config(node, system_prompt=system)
    if node.tools and node.maxToolExecutions > 0:
        cfg["tools"] = [t.model_dump(exclude_none=True, by_alias=True) for t in node.tools]
    agent = Agent(config=AgentConfig.model_validate(cfg), base_dir=base_dir)
    schema = node.output.schema_
    messages: list[Message] = [*history, Message("user", user_text)]
    attempts = 0
    try:
        while True:
            attempts += 1
            result = await _run(agent, messages, on_event)
            output, errors = parse_output(result.content, schema)
            if not errors:
                break
            if attempts > node.output.maxRetries:
                raise OutputValidationError(node.name, errors, attempts)
            messages = [*messages, Message("assistant", result.content),
                        Message("user", RETRY_PROMPT.format(errors="\n".join(f"- {e}" for e in errors)))]
    finally:
        await agent.aclose()
    # Only the turn's user message and the valid answer are remembered: retries and tool rounds are not
    # part of the conversation the next turn should see.
    await store.append(key, [Message("user", user_text), Message("assistant", result.content)])
    text = answer_text(output, schema)
    await write_memory(node, env, store, text if text is not None else result.content)
    return AgentOutcome(output, text, attempts)


__all__ = ["TEXT_FIELDS", "AgentOutcome", "answer_text", "memory_key", "parse_output", "run_agent_node"]
