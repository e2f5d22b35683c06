"""A store that records the reads made through it, and one that answers reads from such a recording.

A flow turn reads its session (the current node, variables), its conversation memory and long-term
memories; a replay of the turn must see what the recorded turn saw, in a store that has none of it:

    rec = ReadRecorder(store)            # the turn runs over `rec`; writes go through to `store`
    reads = rec.reads                    # [{"op", "args", "result"}, ...] (JSON)
    replay = ReadReplayer(reads, fresh)  # the same reads answered from the recording, in order;
                                         # a read not recorded, and every write, go to `fresh`

Recorded: `get_run`, `load_run` (a stored run a turn resumes), `history`, `session_info`, `recall`,
`memories`. Anything else is passed through.
"""

from __future__ import annotations

from typing import Any

from .base import MemoryEntry, RunRecord, SessionInfo
from .codec import message_from_dict, message_to_dict

READS = ("get_run", "load_run", "history", "session_info", "recall", "memories")


def _dump(op: str, value: Any) -> Any:
    if value is None:
        return None
    if op == "history":
        return [message_to_dict(m) for m in value]
    if op in ("recall", "memories"):
        return [{"id": m.id, "text": m.text, "scope": m.scope, "type": m.type, "metadata": m.metadata,
                 "created_at": m.created_at, "namespace": m.namespace, "score": m.score} for m in value]
    if op == "session_info":
        return {"key": value.key, "messages": value.messages, "tokens": value.tokens,
                "created_at": value.created_at, "updated_at": value.updated_at}
    return {"run_id": value.run_id, "status": value.status, "version": value.version,
            "snapshot": value.snapshot, "agent": value.agent, "session": value.session,
            "last_event_id": value.last_event_id,
            "created_at": value.created_at, "updated_at": value.updated_at}


def _load(op: str, value: Any) -> Any:
    if value is None:
        return None
    if op == "history":
        return [message_from_dict(m) for m in value]
    if op in ("recall", "memories"):
        return [MemoryEntry(**m) for m in value]
    if op == "session_info":
        return SessionInfo(**value)
    return RunRecord(**value)


def _args(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
    return [list(args), dict(sorted(kwargs.items()))]


class _Proxy:
    def __init__(self, inner: Any):
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class ReadRecorder(_Proxy):
    """`inner` with its reads recorded in `reads` (results as JSON, taken when read)."""

    def __init__(self, inner: Any):
        super().__init__(inner)
        self.reads: list[dict[str, Any]] = []

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in READS:
            return attr

        async def read(*args: Any, **kwargs: Any) -> Any:
            value = await attr(*args, **kwargs)
            self.reads.append({"op": name, "args": _args(args, kwargs), "result": _dump(name, value)})
            return value

        return read


class ReadReplayer(_Proxy):
    """Reads answered from `reads` (the first unused one of the same op and arguments), else from `inner`."""

    def __init__(self, reads: list[dict[str, Any]], inner: Any):
        super().__init__(inner)
        self._reads = [dict(r) for r in reads]

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in READS:
            return attr

        async def read(*args: Any, **kwargs: Any) -> Any:
            key = _args(args, kwargs)
            for r in self._reads:
                if not r.get("used") and r.get("op") == name and r.get("args") == key:
                    r["used"] = True
                    return _load(name, r.get("result"))
            return await attr(*args, **kwargs)

        return read


__all__ = ["READS", "ReadRecorder", "ReadReplayer"]
