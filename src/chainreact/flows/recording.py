"""A flow turn's recording: what it read from the store, its agent nodes' model and tool calls, its answer.

`Flow.stream` records every turn (a flow always has a store): the store reads go through a ReadRecorder
(state/reads.py) and every agent the turn plans through an IORecorder (agent/recording.py). At the turn's
end one write appends the records to the session's event log (run id `flow:<flow id>:<session>`) as `io`
events, the last one `{"kind": "turn", ...}` with the input, the reads and the turn's messages; so
`chainreact runs export flow:<flow id>:<session> [--turn N]` can make a cassette of any turn, and its
replay starts from what that turn saw.

The recorder is a plan hook set in the context of the turn's generator: whatever the consumer of
`Flow.stream` does between two events runs in that context too (the CLI and the server only pass the events
on). It is closed when the turn ends, so a context that outlives the turn records nothing more.
"""

from __future__ import annotations

from contextvars import Token
from typing import TYPE_CHECKING, Any

from ..agent.plan import PlanHook, plan_hooks
from ..agent.recording import IO_EVENT, IORecorder, document_identity
from ..state.reads import ReadRecorder
from .events import FlowEvent

if TYPE_CHECKING:
    from ..state.base import Store


class TurnRecording:
    def __init__(self, flow: Any, store: Store, session: str, text: str, user: Any, group: Any):
        self.flow = flow
        self.store = store
        self.reads = ReadRecorder(store)
        self.recorder = IORecorder()
        self.input = turn_input(session, text, user, group)
        self.messages: list[dict[str, Any]] = []
        self.output: Any = None
        self._token: Token[tuple[PlanHook, ...]] | None = None

    def start(self) -> None:
        self._token = plan_hooks.set((*plan_hooks.get(), self.recorder))

    def see(self, ev: FlowEvent) -> None:
        if ev.type == "message":
            self.messages.append({"node": ev.node, "content": ev.data.get("content")})
        elif ev.type == "output":
            self.output = ev.data.get("output")

    async def finish(self, key: str, end: FlowEvent) -> None:
        self.recorder.emit(turn_record(self.flow, self.input, self.reads.reads, self.messages, self.output,
                                       end.data))
        self.recorder.close()
        await self.store.append_events(key, [(IO_EVENT, r) for r in self.recorder.take()])

    def stop(self) -> None:
        self.recorder.close()
        if self._token is not None:
            try:
                plan_hooks.reset(self._token)
            except ValueError:  # closed from another context (a collected generator): the recorder is closed
                pass
            self._token = None


def turn_input(session: str, text: str, user: Any, group: Any) -> dict[str, Any]:
    """A turn's input as its `turn` record holds it."""
    return {"session": session, "text": text, "user": dict(user) if user else None,
            "group": dict(group) if group else None}


def turn_record(flow: Any, inp: dict[str, Any], reads: list[dict[str, Any]], messages: list[dict[str, Any]],
                output: Any, end: dict[str, Any]) -> dict[str, Any]:
    """The last record of a turn (turn_input, the reads, its messages `{"node", "content"}`, the last
    output, the `turn_end` event's data): in process here, in a durable turn by its save activity."""
    identity = document_identity(_Doc(flow.id, getattr(flow, "source", None)))
    return {"kind": "turn", "flow": flow.id, "document": identity, "input": inp, "reads": reads,
            "turn": {"messages": messages, "output": output, "node": end.get("current"),
                     "ended": end.get("ended")}}


class _Doc:
    """A flow document as document_identity reads an agent: an id and a file."""

    def __init__(self, flow_id: str, source: str | None):
        self.agent_id = self.name = flow_id
        self.source = source
        self.config = None


__all__ = ["TurnRecording", "turn_input", "turn_record"]
