"""A flow's sessions as the store keeps them: listed (most recently active first) and their conversations.

A session is the run `flow:<flow id>:<session>` (its snapshot: the node its next message goes to, ended,
variables, the last turn's user). Its conversation memory is where its agent nodes keep their turns: under
that same key, or under a node's own `memory.memoryId` (e.g. `support-{{user.id}}`: one conversation per
user, whatever the session), rendered for the session's user and variables (memory_keys).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import ChainreactError
from .model import AIAgentNode, FlowDef
from .node_steps import memory_key

if TYPE_CHECKING:
    from ..state.base import Store


@dataclass
class SessionSummary:
    """One of a flow's sessions in the store (Flow.sessions)."""

    session: str
    node: str | None  # the node its next message goes to (the start node for an ended session)
    ended: bool
    updated_at: float  # when its last turn was saved: the time of its last message
    messages: int  # messages its agent nodes keep (under every key of memory_keys)

    def to_dict(self) -> dict[str, Any]:
        return {"session": self.session, "node": self.node, "ended": self.ended,
                "updated_at": self.updated_at, "messages": self.messages}


def memory_keys(definition: FlowDef | None, key: str, session: str, snapshot: Any) -> list[str]:
    """The conversation keys of session `session` (run id `key`, its stored `snapshot`): `key` itself, then
    each agent node's own `memoryId` rendered with the session's last user and variables (as its turns
    rendered it), each once. Without a definition, `key` alone."""
    keys = [key]
    if definition is None:
        return keys
    snap = snapshot if isinstance(snapshot, dict) else {}
    env = {"userInput": "", "user": dict(snap.get("user") or {}), "session": {"id": session}, "group": None,
           "vars": dict(snap.get("vars") or {}), "output": snap.get("output")}
    for node in definition.nodes:
        if not isinstance(node, AIAgentNode):
            continue
        try:
            found = memory_key(node, env, key)
        except ChainreactError:  # a template that fails for this session: its turns failed the same way
            continue
        if found not in keys:
            keys.append(found)
    return keys


async def list_sessions(store: Store, flow_id: str, start: str, *, limit: int = 50,
                        definition: FlowDef | None = None) -> list[SessionSummary]:
    """The sessions of flow `flow_id` in `store`, most recently active first (at most `limit`); `start`:
    the flow's start node, where an ended session goes on. With the flow's `definition`, `messages`
    counts what its agent nodes keep under their own `memoryId` too (else under the session's key)."""
    prefix = f"flow:{flow_id}:"
    out: list[SessionSummary] = []
    for rec in await store.runs(prefix=prefix, limit=limit):
        full = await store.get_run(rec.run_id)
        if full is None:  # deleted (reset) since it was listed
            continue
        snap = full.snapshot if isinstance(full.snapshot, dict) else {}
        ended = bool(snap.get("ended"))
        session = rec.run_id[len(prefix):]
        kept = 0
        for key in memory_keys(definition, rec.run_id, session, snap):
            info = await store.session_info(key)
            kept += info.messages if info is not None else 0
        node = start if ended else snap.get("node")
        out.append(SessionSummary(session, node, ended, full.updated_at, kept))
    return out


__all__ = ["SessionSummary", "list_sessions", "memory_keys"]
