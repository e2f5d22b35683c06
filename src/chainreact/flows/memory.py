"""An agent node's conversation memory: the window of the memory key, and with
`memoryOptimizer.summarization` a running summary of what fell out of it.

Summaries are incremental: the key's state `{"summary", "upto"}` (a checkpoint in the store under the run
id `flowmem:<memory key>`) says how many of the key's messages the summary covers. When more than
`maxMessages` messages are not covered yet, the oldest of them (all but the last `retainedMessages`) are
folded into the summary by one model call given the previous summary and only those messages: the summary
is refreshed, never recomputed from the whole history, and a turn reads at most about `maxMessages`
messages, however long the stored conversation is. The summary goes into the system message (a system
message in the conversation would stop the agent from adding its own).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..types import Message
from .model import AIAgentNode

DEFAULT_SUMMARY_PROMPT = ("Summarize the conversation below for the assistant who continues it: keep the "
                          "user's requests, facts, decisions and open questions; at most 200 words.")

SUMMARY_HEADER = "Summary of the earlier conversation:\n"


@dataclass
class Context:
    history: list[Message]
    summary: str | None


def _state_id(key: str) -> str:
    return f"flowmem:{key}"


async def read_context(node: AIAgentNode, store: Any, key: str, summarize: Any) -> Context:
    """The messages (and summary) the node's run sees. `summarize(prompt, previous, messages) -> str` is
    the model call that folds messages into the summary."""
    mem = node.memory
    if mem is None or mem.maxMessages <= 0:
        return Context([], None)
    opt = mem.memoryOptimizer.summarization if mem.memoryOptimizer is not None else None
    if opt is None:
        return Context(await store.history(key, last=mem.maxMessages, max_tokens=mem.maxTokens), None)
    info = await store.session_info(key)
    total = info.messages if info is not None else 0
    rec = await store.get_run(_state_id(key))
    snap = rec.snapshot if rec is not None and isinstance(rec.snapshot, dict) else {}
    summary: str | None = snap.get("summary")
    upto = int(snap.get("upto") or 0)
    pending = total - upto
    if pending > mem.maxMessages:
        keep = min(opt.retainedMessages, mem.maxMessages)
        fold = pending - keep
        messages = await store.history(key, last=pending) if pending else []
        # history() may leave out orphaned tool results at the window's start; fold what it gave.
        old, recent = messages[:len(messages) - keep], messages[len(messages) - keep:]
        summary = await summarize(opt.promptMessage or DEFAULT_SUMMARY_PROMPT, summary, old)
        upto += fold
        await store.save_run(_state_id(key), {"summary": summary, "upto": upto}, status="done",
                             expect_version=rec.version if rec is not None else 0)
        history = recent
    else:
        history = await store.history(key, last=pending, max_tokens=mem.maxTokens) if pending else []
    return Context(history, summary)


MEMORIES_HEADER = "Things you remember that may be relevant:\n"
RECALL_K = 5


def _long_term(node: AIAgentNode, env: dict[str, Any]) -> tuple[Any, str, str] | None:
    """(the definition, scope, namespace) of the node's long-term memory, or None."""
    from ..state import GLOBAL
    from .exprs import render

    ltm = node.memory.longTermMemory if node.memory is not None else None
    if ltm is None:
        return None
    scope = GLOBAL if ltm.scope == "global" else node.name
    return ltm, scope, render(ltm.memoryId, env) if ltm.memoryId else ""


async def recall_memories(node: AIAgentNode, env: dict[str, Any], store: Any) -> list[str]:
    """The memories of the node's long-term memory (its type, scope and rendered memoryId) that best match
    the user's input, best first."""
    lt = _long_term(node, env)
    if lt is None:
        return []
    ltm, scope, namespace = lt
    found = await store.recall(str(env.get("userInput") or ""), RECALL_K, scope=scope, type=ltm.memoryType,
                               namespace=namespace)
    return [m.text for m in found]


async def write_memory(node: AIAgentNode, env: dict[str, Any], store: Any, answer: str) -> None:
    """After a turn, an episodic memory of what happened. Semantic and procedural memories need the
    model to extract facts or instructions: not written yet (docs/flows.md)."""
    lt = _long_term(node, env)
    if lt is None or lt[0].memoryType != "episodic":
        return
    _, scope, namespace = lt
    text = f"The user said: {env.get('userInput')}\nThe assistant answered: {answer}"
    meta = {"session": env["session"]["id"], "node": node.name}
    await store.remember(text, scope=scope, type="episodic", metadata=meta, namespace=namespace)


def summary_request(prompt: str, previous: str | None, messages: list[Message]) -> str:
    lines = [f"{m.role}: {m.text}" for m in messages]
    before = f"The summary so far:\n{previous}\n\n" if previous else ""
    return f"{prompt}\n\n{before}The messages to add:\n" + "\n".join(lines)


__all__ = ["DEFAULT_SUMMARY_PROMPT", "MEMORIES_HEADER", "RECALL_K", "SUMMARY_HEADER", "Context",
           "read_context", "recall_memories", "summary_request", "write_memory"]
