"""One run of an `aiagent` node: prompts rendered, memory window read, the agent run with structured output,
the answer parsed and validated (asked again with the errors when it does not validate), memory appended.

`run_agent_node` is an async generator: it yields the run's FlowEvents live (tool calls, collaborators,
questions for the user) and, last, an AgentOutcome.

The answer's text (the message the user sees) is the output's `response` field, else `answer`, `message`,
`reply` or `text` (the first of these the schema declares and the output holds as a string); a schema
with none of them gives no message, only `output`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..types import Message
from .asking import Pending, prompts_for, take_answer
from .collaboration import collaborator_tools
from .driver import drive
from .errors import FlowError, OutputValidationError
from .events import FlowEvent, message
from .exprs import render
from .llm import agent_config
from .memory import (
    SUMMARY_HEADER,
    memories_block,
    read_context,
    recall_memories,
    summary_request,
    write_memory,
)
from .model import AIAgentNode, FlowDef
from .prompts import system_message
from .tooling import AskForTools, ToolBudget

TEXT_FIELDS = ("response", "answer", "message", "reply", "text")

RETRY_PROMPT = ("Your previous answer is not valid against the required JSON Schema:\n{errors}\n"
                "Answer again with only a JSON object that matches the schema.")

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


@dataclass
class AgentOutcome:
    output: Any = None
    text: str | None = None
    attempts: int = 0
    asked: Pending | None = None  # the run waits for the user's answer: no output yet


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


SUMMARY_SYSTEM = "You summarize conversations."
EXTRACT_SYSTEM = "You extract what an assistant should remember."


def plain_call(node: AIAgentNode, base_dir: Path | None, system: str) -> Callable[[str], Awaitable[str]]:
    """One plain-text model call on the node's endpoint and model, without its output schema (summaries,
    memory extraction), with `system` as the system message."""
    from ..agent import Agent
    from ..config import AgentConfig

    async def ask(prompt: str) -> str:
        cfg = agent_config(node, system_prompt=system)
        cfg["params"] = {k: v for k, v in cfg["params"].items() if k not in ("responseFormat", "jsonSchema")}
        agent = Agent(config=AgentConfig.model_validate(cfg), base_dir=base_dir)
        try:
            return (await agent.run(prompt)).content.strip()
        finally:
            await agent.aclose()

    return ask


def build_agent(node: AIAgentNode, system: str, env: dict[str, Any], *, flow: FlowDef | None,
                base_dir: Path | None, budget: ToolBudget) -> Any:
    """The node's agent for one run: its tools (HTTP/MCP descriptors, collaborators), the tool budget and,
    with askUserForToolsInput, the asking tools."""
    from ..agent import Agent
    from ..config import AgentConfig

    cfg = agent_config(node, system_prompt=system)
    tools: list[Any] = []
    middleware: list[Any] = [budget]
    if node.maxToolExecutions > 0:
        if node.tools:
            cfg["tools"] = [t.descriptor() for t in node.tools]
        tools = collaborator_tools(node, env, flow=flow, base_dir=base_dir)
        if node.askUserForToolsInput:
            middleware.append(AskForTools())
    return Agent(config=AgentConfig.model_validate(cfg), tools=tools, middleware=middleware,
                 base_dir=base_dir)


def _ask(node: str, pending: Pending, problems: list[str] | None = None) -> list[FlowEvent]:
    p = pending.current
    text = p.text
    if problems:
        text = f"That answer does not fit ({'; '.join(problems[:3])}). {text}"
    return [FlowEvent("ask_user", node, {"id": p.id, "question": text, "field": p.field, "schema": p.schema}),
            message(node, text)]


async def run_agent_node(node: AIAgentNode, env: dict[str, Any], store: Any, conversation: str, *,
                         base_dir: Path | None = None, flow: FlowDef | None = None,
                         pending: Pending | None = None, session_key: str | None = None,
                         agent_events: bool = False) -> AsyncIterator[FlowEvent | AgentOutcome]:
    """Run the node once on the turn's input (`conversation` is the session's default memory key), or,
    with `pending`, take the turn's input as the answer to the question the node's run waits on.
    `agent_events`: streaming model calls, every agent event passed on as an `agent` FlowEvent."""
    schema = node.output.schema_
    run_id: str | None = None
    answers: dict[str, Any] | None = None
    if pending is not None:
        problems = take_answer(pending, str(env.get("userInput") or ""))
        if problems or not pending.complete:
            for ev in _ask(node.name, pending, problems):
                yield ev
            yield AgentOutcome(asked=pending)
            return
        # Every answer is in: the run goes on, for the turn that asked.
        env["userInput"] = pending.user_input
        user_text, key, attempts = pending.user_text, pending.key, pending.attempts
        budget = ToolBudget(node.maxToolExecutions, pending.tools_used)
        run_id, answers = pending.run_id, pending.answers
        memories: list[str] = []
        messages: list[Message] = []
        agent = build_agent(node, system_message(node, env), env, flow=flow, base_dir=base_dir, budget=budget)
    else:
        system = system_message(node, env)
        user_text = render(node.userMessage, env)
        key = memory_key(node, env, conversation)

        async def summarize(prompt: str, previous: str | None, old: list[Message]) -> str:
            return await plain_call(node, base_dir, SUMMARY_SYSTEM)(summary_request(prompt, previous, old))

        context = await read_context(node, store, key, summarize)
        if context.summary:
            system += "\n\n" + SUMMARY_HEADER + context.summary
        memories = await recall_memories(node, env, store)
        if memories:
            system += "\n\n" + memories_block(node, memories)
        budget = ToolBudget(node.maxToolExecutions)
        agent = build_agent(node, system, env, flow=flow, base_dir=base_dir, budget=budget)
        messages = [*context.history, Message("user", user_text)]
        attempts = 1
    # Checkpointed only when the run may stop to ask: then another process may have to go on with it.
    ckpt_store = store if node.askUserForToolsInput else None
    extra = {"flowNode": node.name}
    try:
        source = drive(agent, node.name, messages, store=ckpt_store, session=session_key, run_id=run_id,
                       answers=answers, extra=extra, agent_events=agent_events)
        while True:
            result = None
            async for item in source:
                if isinstance(item, FlowEvent):
                    yield item
                else:
                    result = item
            assert result is not None
            if result.stop_reason == "interrupted":
                if ckpt_store is None or result.interruption is None:
                    raise FlowError(f"node {node.name!r}: a tool stopped to ask the user, but "
                                    "askUserForToolsInput is off")
                asked = Pending(node.name, str(result.metadata["run_id"]), str(env.get("userInput") or ""),
                                user_text, key, attempts, budget.used,
                                prompts_for(result.interruption.questions))
                for ev in _ask(node.name, asked):
                    yield ev
                yield AgentOutcome(asked=asked)
                return
            output, errors = parse_output(result.content, schema)
            if not errors:
                break
            if attempts > node.output.maxRetries:
                raise OutputValidationError(node.name, errors, attempts)
            attempts += 1
            retry = Message("user", RETRY_PROMPT.format(errors="\n".join(f"- {e}" for e in errors)))
            source = drive(agent, node.name, [*result.messages, retry], store=ckpt_store, session=session_key,
                           extra=extra, agent_events=agent_events)
    finally:
        await agent.aclose()
    # Only the turn's user message and the valid answer are remembered: retries, tool rounds and questions
    # asked on the way are not part of the conversation the next turn should see.
    await store.append(key, [Message("user", user_text), Message("assistant", result.content)])
    text = answer_text(output, schema)
    written = await write_memory(node, env, store, text if text is not None else result.content,
                                 plain_call(node, base_dir, EXTRACT_SYSTEM), memories)
    if written:
        lt = node.memory.longTermMemory if node.memory is not None else None
        yield FlowEvent("memory", node.name, {"type": lt.memoryType if lt else "", "written": written})
    yield AgentOutcome(output, text, attempts)


__all__ = ["TEXT_FIELDS", "AgentOutcome", "answer_text", "build_agent", "memory_key", "parse_output",
           "plain_call", "run_agent_node"]
