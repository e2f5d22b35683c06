"""Conversation history for the `ai/agent` node, by metadata `sessionKey`.

A small interface so the state store (another wing) can replace the in-memory default: the engine looks
for `engine.services["sessions"]` and falls back to one MemorySessionStore per engine."""

from __future__ import annotations

from collections import OrderedDict
from typing import Protocol, runtime_checkable

from ..types import Message


@runtime_checkable
class SessionStore(Protocol):
    async def load(self, key: str) -> list[Message]: ...

    async def save(self, key: str, messages: list[Message]) -> None: ...


class MemorySessionStore:
    """Keeps the last `max_sessions` conversations in memory (least recently used dropped first)."""

    def __init__(self, max_sessions: int = 10_000):
        self.max_sessions = max_sessions
        self._data: OrderedDict[str, list[Message]] = OrderedDict()

    async def load(self, key: str) -> list[Message]:
        msgs = self._data.get(key)
        if msgs is None:
            return []
        self._data.move_to_end(key)
        return list(msgs)

    async def save(self, key: str, messages: list[Message]) -> None:
        self._data[key] = list(messages)
        self._data.move_to_end(key)
        while len(self._data) > self.max_sessions:
            self._data.popitem(last=False)
