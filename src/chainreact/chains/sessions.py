"""Conversation history for the `ai/agent` node, by metadata `sessionKey`.

The interface is the state store's conversation half (`history(session)`, `append(session, messages)`),
so a `chainreact.state` store works as it is: `engine.services["sessions"] = await open_store(...)`.
Without one, each engine keeps conversations in memory (MemorySessionStore).

Metadata `sessionScope=node` gives each agent node its own conversation in the session (stored under
`node_session_key`), as RuleGo's session keys name the agent; without it the nodes that get the same
`sessionKey` share one conversation."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..types import Message


def node_session_key(session: str, chain_id: str, node_id: str) -> str:
    """The store key of one agent node's conversation in `session` (metadata sessionScope=node)."""
    return f"chain:{chain_id}:node:{node_id}:{session}"


def unsent_part(history: Sequence[Message], messages: list[Any]) -> list[Any]:
    """`messages` (a request's non-system messages) without the turns the stored `history` already holds.

    Chat UIs send the whole conversation with each request, other clients only the new message. When the
    request begins with the conversation as a user saw it (the user messages and the assistant's answers),
    that part is dropped; otherwise every message is new. Tool calls and results in that part are passed
    over: the agent's own are never shown, and a client that runs tools of its own (an OpenAI client's
    `tools`) sends back the calls it was given and its results, which the history holds already."""
    seen = [(m.role, m.content or "") for m in history
            if m.role == "user" or (m.role == "assistant" and not m.tool_calls and m.content)]

    def key(m: Any) -> tuple[Any, Any]:
        return (m.get("role"), m.get("content") or "") if isinstance(m, dict) else (None, None)

    if not seen:
        return messages
    matched = 0
    for i, m in enumerate(messages):
        if isinstance(m, dict) and (m.get("role") == "tool" or (m.get("role") == "assistant"
                                                                and m.get("tool_calls"))):
            continue  # a tool round of the stored conversation
        if key(m) != seen[matched]:
            return messages
        matched += 1
        if matched == len(seen):
            rest = messages[i + 1:]
            return rest if rest else messages
    return messages


@runtime_checkable
class SessionStore(Protocol):
    async def history(self, session: str) -> list[Message]: ...

    async def append(self, session: str, messages: Sequence[Message]) -> Any: ...


class MemorySessionStore:
    """Keeps the last `max_sessions` conversations in memory (least recently used dropped first)."""

    def __init__(self, max_sessions: int = 10_000):
        self.max_sessions = max_sessions
        self._data: OrderedDict[str, list[Message]] = OrderedDict()

    async def history(self, session: str) -> list[Message]:
        msgs = self._data.get(session)
        if msgs is None:
            return []
        self._data.move_to_end(session)
        return list(msgs)

    async def append(self, session: str, messages: Sequence[Message]) -> int:
        msgs = self._data.setdefault(session, [])
        msgs.extend(messages)
        self._data.move_to_end(session)
        while len(self._data) > self.max_sessions:
            self._data.popitem(last=False)
        return len(msgs)
