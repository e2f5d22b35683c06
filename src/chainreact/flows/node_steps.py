"""One run of an `aiagent` node, each step written once, over an executor that does the I/O (a seam: a
durable turn runs the same steps with activities, chainreact.durable.flow_node).

    async for item in node_turn(node, env, io, pending): ...    # FlowEvents live, then an AgentOutcome

The decisions are here: an answered question (take the answer; ask the next question, or go on with the
stored run), the run's output parsed and validated against the node's schema (asked again with the
violations, up to `output.maxRetries`), a run that stops to ask the user, the memory event. The steps
with I/O are functions both executors call where their I/O runs (`prepare`: prompts, the memory window
and its summary, long-term recall; `remember`: the conversation memory appended, long-term memories
written); the executor (`NodeIO`) runs the node's agent (in process: the Agent; durable: chainreact's
ReactLoop in the workflow with each call an activity) and saves a run that asks.

The answer's text (the message the user sees) is the output's `response` field, else `answer`, `message`,
`reply` or `text` (the first of these the schema declares and the output holds as a string); a schema
with none of them gives no message, only `output`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from ..types import Message
from .asking import Pending, prompts_for, take_answer
from .errors import FlowError, OutputValidationError
from .events import FlowEvent, message
from .exprs import render, render_key
from .llm import agent_config
from .memory import (
    SUMMARY_HEADER,
    memories_block,
    read_context,
    recall_memories,
    summary_request,
    write_memory,
)
from .model import AIAgentNode
from .prompts import system_message
from .tooling import ToolBudget

if TYPE_CHECKING:
    from ..agent.result import RunResult
    from ..state.base import Store

TEXT_FIELDS = ("response", "answer", "message", "reply", "text")

RETRY_PROMPT = ("Your previous answer is not valid against the required JSON Schema:\n{errors}\n"
                "Answer again with only a JSON object that matches the schema.")

SUMMARY_SYSTEM = "You summarize conversations."
EXTRACT_SYSTEM = "You extract what an assistant should remember."

_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)


@dataclass
class AgentOutcome:
    output: Any = None
    text: str | None = None
    attempts: int = 0
    asked: Pending | None = None  # the run waits for the user's answer: no output yet


@dataclass
class NodeStart:
    """What a fresh run of the node starts from (`prepare`)."""

    system: str  # the node's system prompt, with the summary of older messages and the recalled memories
    user_text: str  # the user message, rendered
    key: str  # the conversation memory's key
    history: list[Message] = field(default_factory=list)  # the memory window
    memories: list[str] = field(default_factory=list)  # long-term memories recalled (not written again)


class NodeIO(Protocol):
    """Where one run of an aiagent node does its I/O: in process (agent_node.LocalNodeIO) or as a durable
    turn's activities (chainreact.durable.flow_node)."""

    @property
    def tools_used(self) -> int:
        """The tool budget (`maxToolExecutions`) spent so far."""
        ...

    async def start(self) -> NodeStart:
        """A fresh run: `prepare`, and the node's agent made."""
        ...

    async def resume(self, pending: Pending) -> None:
        """An answered question: the stored agent run claimed (its answers checked), ready to go on."""
        ...

    def run(self, messages: list[Message] | None) -> AsyncIterator[FlowEvent]:
        """One run of the node's agent on `messages` (None: the resumed run goes on): its FlowEvents as
        they come; then `result` is its RunResult."""
        ...

    @property
    def result(self) -> RunResult | None:
        """The RunResult of the last run."""
        ...

    async def suspend(self, result: RunResult) -> str:
        """The run stopped to ask the user: saved where the next turn finds it. Its run id."""
        ...

    async def finish(self, key: str, user_text: str, content: str, text: str | None,
                     memories: list[str]) -> list[str]:
        """After a valid answer: `remember`. The long-term memories written."""
        ...

    async def aclose(self) -> None:
        """The runs are over (the memory steps may follow)."""
        ...


class NodeRun:
    """What every executor keeps of one run of the node: the turn's names, where its events go, the
    session it checkpoints under, and the tool budget (spent across the run's questions)."""

    def __init__(self, node: AIAgentNode, env: dict[str, Any], *, session_key: str | None,
                 agent_events: bool):
        self.node = node
        self.env = env
        self.session_key = session_key
        self.agent_events = agent_events
        self.budget = ToolBudget(node.maxToolExecutions)

    @property
    def tools_used(self) -> int:
        return self.budget.used


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
    """Where the node's conversation is kept: its `memoryId` rendered, else (no memoryId, or one that
    names a value the turn does not have, exprs.render_key) `default`, the session's own key."""
    mem = node.memory
    if mem is not None and mem.memoryId:
        return render_key(mem.memoryId, env) or default
    return default


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


async def prepare(node: AIAgentNode, env: dict[str, Any], store: Store, conversation: str,
                  base_dir: Path | None) -> NodeStart:
    """A fresh run's prompts and memory: the system prompt, the memory window (older messages folded into
    its summary by a model call), the long-term memories recalled for the user's input. `conversation`
    is the session's default memory key."""
    system = system_message(node, env)
    key = memory_key(node, env, conversation)

    async def summarize(prompt: str, previous: str | None, old: list[Message]) -> str:
        return await plain_call(node, base_dir, SUMMARY_SYSTEM)(summary_request(prompt, previous, old))

    context = await read_context(node, store, key, summarize)
    if context.summary:
        system += "\n\n" + SUMMARY_HEADER + context.summary
    memories = await recall_memories(node, env, store)
    if memories:
        system += "\n\n" + memories_block(node, memories)
    return NodeStart(system, render(node.userMessage, env), key, list(context.history), memories)


async def remember(node: AIAgentNode, env: dict[str, Any], store: Store, base_dir: Path | None, *, key: str,
                   user_text: str, content: str, text: str | None, memories: list[str]) -> list[str]:
    """After a valid answer: the turn's user message and the answer appended to the conversation memory,
    then the long-term memories written (`memories`: those recalled, not written again)."""
    # Only the turn's user message and the valid answer are remembered: retries, tool rounds and questions
    # asked on the way are not part of the conversation the next turn should see.
    await store.append(key, [Message("user", user_text), Message("assistant", content)])
    return await write_memory(node, env, store, text if text is not None else content,
                              plain_call(node, base_dir, EXTRACT_SYSTEM), memories)


def ask_events(node: str, pending: Pending, problems: list[str] | None = None) -> list[FlowEvent]:
    """The current question of a run that waits for the user (with what was wrong with the last answer)."""
    p = pending.current
    text = p.text
    if problems:
        text = f"That answer does not fit ({'; '.join(problems[:3])}). {text}"
    return [FlowEvent("ask_user", node, {"id": p.id, "question": text, "field": p.field, "schema": p.schema}),
            message(node, text)]


async def node_turn(node: AIAgentNode, env: dict[str, Any], io: NodeIO,
                    pending: Pending | None = None) -> AsyncIterator[FlowEvent | AgentOutcome]:
    """Run the node once on the turn's input, or, with `pending`, take the turn's input as the answer to
    the question the node's run waits on (module doc)."""
    schema = node.output.schema_
    messages: list[Message] | None = None
    memories: list[str] = []
    if pending is not None:
        problems = take_answer(pending, str(env.get("userInput") or ""))
        if problems or not pending.complete:
            for ev in ask_events(node.name, pending, problems):
                yield ev
            yield AgentOutcome(asked=pending)
            return
        # Every answer is in: the run goes on, for the turn that asked.
        env["userInput"] = pending.user_input
        user_text, key, attempts = pending.user_text, pending.key, pending.attempts
    try:
        if pending is not None:
            await io.resume(pending)
        else:
            start = await io.start()
            user_text, key, memories = start.user_text, start.key, start.memories
            messages = [*start.history, Message("user", user_text)]
            attempts = 1
        while True:
            async for ev in io.run(messages):
                yield ev
            result = io.result
            assert result is not None
            if result.stop_reason == "interrupted":
                if not node.askUserForToolsInput or result.interruption is None:
                    raise FlowError(f"node {node.name!r}: a tool stopped to ask the user, but "
                                    "askUserForToolsInput is off")
                asked = Pending(node.name, await io.suspend(result), str(env.get("userInput") or ""),
                                user_text, key, attempts, io.tools_used,
                                prompts_for(result.interruption.questions))
                for ev in ask_events(node.name, asked):
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
            messages = [*result.messages, retry]
    finally:
        await io.aclose()
    text = answer_text(output, schema)
    written = await io.finish(key, user_text, result.content, text, memories)
    if written:
        lt = node.memory.longTermMemory if node.memory is not None else None
        yield FlowEvent("memory", node.name, {"type": lt.memoryType if lt else "", "written": written})
    yield AgentOutcome(output, text, attempts)


__all__ = ["EXTRACT_SYSTEM", "RETRY_PROMPT", "SUMMARY_SYSTEM", "TEXT_FIELDS", "AgentOutcome", "NodeIO",
           "NodeRun", "NodeStart", "answer_text", "ask_events", "memory_key", "node_turn", "parse_output",
           "plain_call", "prepare", "remember"]
