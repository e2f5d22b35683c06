"""Conversation history for the `ai/agent` node, by metadata `sessionKey`.

The interface is the state store's conversation half (`history(session)`, `append(session, messages)`),
so a `chainreact.state` store works as it is: `engine.services["sessions"] = await open_store(...)`.
Without one, each engine keeps conversations in memory (MemorySessionStore)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from ..types import Message


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
