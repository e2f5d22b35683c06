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
from typing import TYPE_CHECKING, Any

from ..types import Message
from .model import AIAgentNode

if TYPE_CHECKING:
    from ..state.base import Store

DEFAULT_SUMMARY_PROMPT = ("Summarize the conversation below for the assistant who continues it: keep the "
                          "user's requests, facts, decisions and open questions; at most 200 words.")

SUMMARY_HEADER = "Summary of the earlier conversation:\n"


@dataclass
class Context:
    history: list[Message]
    summary: str | None


def _state_id(key: str) -> str:
    return f"flowmem:{key}"


async def read_context(node: AIAgentNode, store: Store, key: str, summarize: Any) -> Context:
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
INSTRUCTIONS_HEADER = "Instructions you have learned from the user (follow them):\n"
RECALL_K = 5
MAX_EXTRACTED = 5  # memories written per turn, at most
MAX_MEMORY_CHARS = 500

# The prompts of the extraction call after a turn (docs/flows.md quotes them); the exchange follows them.
EXTRACT_PROMPTS = {
    "semantic": (
        "Extract the facts worth remembering for later conversations from the exchange below: facts about "
        "the user (name, preferences, circumstances) or about their case (order numbers, products, dates, "
        "decisions). Write each fact so that it is understood on its own, one per line, each line starting "
        "with \"- \". Leave out what is already remembered. Answer NONE when there is nothing new worth "
        "remembering."),
    "procedural": (
        "Extract the instructions the user gave in the exchange below about how the assistant should behave "
        "or do its work from now on (for example \"answer in French\", \"always confirm the order number "
        "first\"). Write each as an instruction to the assistant, one per line, each line starting with "
        "\"- \". Leave out what is already remembered. Answer NONE when the user gave no such instruction."),
}


def _long_term(node: AIAgentNode, env: dict[str, Any]) -> tuple[Any, str, str] | None:
    """(the definition, scope, namespace) of the node's long-term memory, or None: also when its
    `memoryId` names a value the turn does not have (`customer-{{user.id}}` without a user id), since
    memory kept across sessions for nobody in particular would be recalled to everyone."""
    from ..state import GLOBAL
    from .exprs import render_key

    ltm = node.memory.longTermMemory if node.memory is not None else None
    if ltm is None:
        return None
    scope = GLOBAL if ltm.scope == "global" else node.name
    if not ltm.memoryId:
        return ltm, scope, ""
    namespace = render_key(ltm.memoryId, env)
    return None if namespace is None else (ltm, scope, namespace)


async def recall_memories(node: AIAgentNode, env: dict[str, Any], store: Store) -> list[str]:
    """The memories of the node's long-term memory (its type, scope and rendered memoryId) that best match
    the user's input, best first. Procedural ones (instructions) apply whatever the user says: the best
    matches first, then the most recent, up to RECALL_K."""
    lt = _long_term(node, env)
    if lt is None:
        return []
    ltm, scope, namespace = lt
    found = await store.recall(str(env.get("userInput") or ""), RECALL_K, scope=scope, type=ltm.memoryType,
                               namespace=namespace)
    texts = [m.text for m in found]
    if ltm.memoryType == "procedural" and len(texts) < RECALL_K:
        # A query without searchable words gives the most recent memories.
        for m in await store.recall("", RECALL_K, scope=scope, type="procedural", namespace=namespace):
            if m.text not in texts and len(texts) < RECALL_K:
                texts.append(m.text)
    return texts


def memories_block(node: AIAgentNode, memories: list[str]) -> str:
    """The system message's part for recalled memories (empty when there are none)."""
    if not memories:
        return ""
    lt = node.memory.longTermMemory if node.memory is not None else None
    header = INSTRUCTIONS_HEADER if lt is not None and lt.memoryType == "procedural" else MEMORIES_HEADER
    return header + "\n".join(f"- {m}" for m in memories)


def extraction_request(memory_type: str, user_input: str, answer: str, known: list[str]) -> str:
    remembered = ("Already remembered:\n" + "\n".join(f"- {k}" for k in known) + "\n\n") if known else ""
    return (f"{EXTRACT_PROMPTS[memory_type]}\n\n{remembered}The exchange:\nuser: {user_input}\n"
            f"assistant: {answer}")


def parse_extracted(text: str) -> list[str]:
    """The `- item` lines of an extraction answer (NONE, blank and other lines ignored), de-duplicated."""
    out: list[str] = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith(("- ", "* ")):
            continue
        item = line[2:].strip()
        if item and item.upper().rstrip(".") != "NONE" and item not in out:
            out.append(item[:MAX_MEMORY_CHARS])
    return out[:MAX_EXTRACTED]


async def write_memory(node: AIAgentNode, env: dict[str, Any], store: Store, answer: str,
                       ask: Any = None, known: list[str] | None = None) -> list[str]:
    """After a turn, the node's long-term memories: an episodic one of what happened, or, for semantic
    and procedural, the facts or instructions the model extracts from the exchange (`ask(prompt) -> text`
    is that model call; `known` the memories recalled this turn, which are not written again). Returns the
    texts written."""
    lt = _long_term(node, env)
    if lt is None:
        return []
    ltm, scope, namespace = lt
    meta = {"session": env["session"]["id"], "node": node.name}
    user_input = str(env.get("userInput") or "")
    if ltm.memoryType == "episodic":
        text = f"The user said: {user_input}\nThe assistant answered: {answer}"
        await store.remember(text, scope=scope, type="episodic", metadata=meta, namespace=namespace)
        return [text]
    if ask is None:
        return []
    known = list(known or [])
    items = parse_extracted(await ask(extraction_request(ltm.memoryType, user_input, answer, known)))
    written = []
    seen = {k.strip().lower() for k in known}
    for item in items:
        if item.lower() in seen:
            continue
        # Already stored (recalled or not this turn): never the same memory twice.
        same = await store.recall(item, 3, scope=scope, type=ltm.memoryType, namespace=namespace)
        if any(m.text.strip().lower() == item.lower() for m in same):
            continue
        await store.remember(item, scope=scope, type=ltm.memoryType, metadata=meta, namespace=namespace)
        seen.add(item.lower())
        written.append(item)
    return written


def summary_request(prompt: str, previous: str | None, messages: list[Message]) -> str:
    lines = [f"{m.role}: {m.text}" for m in messages]
    before = f"The summary so far:\n{previous}\n\n" if previous else ""
    return f"{prompt}\n\n{before}The messages to add:\n" + "\n".join(lines)


__all__ = ["DEFAULT_SUMMARY_PROMPT", "EXTRACT_PROMPTS", "INSTRUCTIONS_HEADER", "MEMORIES_HEADER", "RECALL_K",
           "SUMMARY_HEADER", "Context", "extraction_request", "memories_block", "parse_extracted",
           "read_context", "recall_memories", "summary_request", "write_memory"]
