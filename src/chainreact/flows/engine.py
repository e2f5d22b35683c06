"""The turn engine: a session's current node, one user message in, the turn's messages out.

    async with Flow.load("support.json", state="sqlite:///state.db") as flow:
        turn = await flow.send("s1", "my order is late", user={"id": "u1"})
        turn.messages, turn.node, turn.ended, turn.output

The session (current node, ended flag, last output, variables) is a checkpoint in chainreact.state under
the run id `flow:<flow id>:<session>`, saved with its version expected, so two processes in a row continue
one conversation and two at once cannot both move it (the second gets RunConflictError). The
conversation memory lives in the same store, under the node's rendered `memoryId` or, without one, under
that same `flow:<flow id>:<session>` key.

Which nodes a turn runs is decided by routing.route; this module loads and saves the session around it and
gives it the nodes' I/O (LocalTurnIO). chainreact.durable runs the same routing in a Temporal workflow.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from ..config import fallback_id
from .agent_node import run_agent_node
from .asking import Pending
from .chain_node import run_chain_node
from .events import FlowEvent, FlowMessage
from .model import AIAgentNode, FlowDef, RuleChainNode
from .node_steps import AgentOutcome
from .recording import TurnRecording
from .routing import MAX_HOPS, Session, addressed, route, turn_env
from .sessions import SessionSummary, list_sessions
from .validate import load_flow

if TYPE_CHECKING:
    from ..chains.engine import RuleEngine
    from ..state.base import Store


@dataclass
class TurnResult:
    node: str | None  # the session's current node after the turn; None when the flow ended
    ended: bool
    messages: list[FlowMessage]
    output: Any = None  # the last agent's parsed output in this turn
    warnings: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The stable `--json` form of `chainreact flow send`."""
        return {"node": self.node, "ended": self.ended, "messages": [m.to_dict() for m in self.messages],
                "output": self.output}


class Flow:
    def __init__(self, definition: FlowDef, *, source: str | None = None, state: str | None = None,
                 store: Store | None = None, base_dir: str | Path | None = None,
                 chains: RuleEngine | None = None, record: bool = True):
        self.definition = definition
        self.record = record  # every turn's reads and model/tool calls in the session's log (recording.py)
        self.source = source
        self.id = definition.id or definition.name or fallback_id(source, "flow")  # as serve lists it
        self.base_dir = Path(base_dir) if base_dir else (Path(source).parent if source else Path.cwd())
        self._state_url = state
        self._store = store
        self._own_store = store is None
        self._chains = chains  # a chainreact.chains.RuleEngine for rulechain nodes (created on first use)
        self._chain_files: dict[str, str] = {}

    # -- construction -----------------------------------------------------------------------------

    @classmethod
    def from_dict(cls, data: Any, *, source: str | None = None, **kw: Any) -> Flow:
        return cls(load_flow(data, source=source), source=source, **kw)

    @classmethod
    def load(cls, path: str | Path, **kw: Any) -> Flow:
        """Read and validate a flow document (JSON or YAML); ConfigError lists every problem."""
        from ..config.loader import read_document

        data, source = read_document(path)
        return cls.from_dict(data, source=source or str(path), **kw)

    async def store(self) -> Any:
        if self._store is None:
            from ..state import open_store

            self._store = await open_store(self._state_url, document=self.definition.state)
        return self._store

    async def aclose(self) -> None:
        if self._store is not None and self._own_store:
            await self._store.close()
            self._store = None

    async def __aenter__(self) -> Flow:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- sessions ---------------------------------------------------------------------------------

    def session_key(self, session: str) -> str:
        return f"flow:{self.id}:{session}"

    async def sessions(self, *, limit: int = 50) -> list[SessionSummary]:
        """This flow's sessions in its store, most recently active first (see list_sessions)."""
        return await list_sessions(await self.store(), self.id, self.definition.start_node.name, limit=limit,
                                   definition=self.definition)

    async def current_node(self, session: str) -> str | None:
        """The node the session's next message goes to (the start node for a new or ended session)."""
        rec = await (await self.store()).get_run(self.session_key(session))
        snap = rec.snapshot if rec is not None else None
        if not isinstance(snap, dict) or snap.get("ended"):
            return self.definition.start_node.name
        return snap.get("node")

    async def reset(self, session: str) -> None:
        """Forget a session: its current node, variables, last output and any question waiting for an
        answer, and the conversation memory under its default key (with that memory's summary), so its
        next message starts the flow afresh. Memory kept under a node's own `memoryId` (e.g. per user) and
        long-term memories stay."""
        from .memory import _state_id

        store = await self.store()
        key = self.session_key(session)
        rec = await store.get_run(key)
        pending = rec.snapshot.get("pending") if rec is not None and isinstance(rec.snapshot, dict) else None
        if isinstance(pending, dict) and isinstance(pending.get("run_id"), str):
            await store.delete_run(pending["run_id"])  # the agent run that waited for the answer
        await store.delete_run(key)
        await store.delete_session(key)
        await store.delete_run(_state_id(key))

    # -- turns ------------------------------------------------------------------------------------

    async def send(self, session: str, text: str, *, user: Mapping[str, Any] | None = None,
                   group: Mapping[str, Any] | None = None) -> TurnResult:
        """Run one turn and return its messages (see TurnResult). `group` marks a group conversation's
        message: `{"id": group id, "mentions": [names mentioned]}`."""
        turn = TurnResult(node=None, ended=False, messages=[])
        async for ev in self.stream(session, text, user=user, group=group):
            if ev.type == "message":
                turn.messages.append(FlowMessage(ev.node or "", ev.data["content"]))
            elif ev.type == "output":
                turn.output = ev.data["output"]
            elif ev.type == "warning":
                turn.warnings.append(ev.data["message"])
            elif ev.type == "turn_end":
                turn.node, turn.ended = ev.data["current"], ev.data["ended"]
        return turn

    def turn_io(self, session: str) -> LocalTurnIO:
        """The I/O of this flow's nodes for `session`, run here (durable workers call it in activities)."""
        return LocalTurnIO(self, self.session_key(session))

    async def stream(self, session: str, text: str, *,
                     user: Mapping[str, Any] | None = None,
                     group: Mapping[str, Any] | None = None,
                     agent_events: bool = False) -> AsyncIterator[FlowEvent]:
        """Run one turn, yielding its events as they happen; the session is saved before `turn_end`.

        Agent nodes' tool calls and results (and collaborators' runs) come as `tool_call` / `tool_result`
        / `agent_start` / `agent_end` events. With `agent_events`, agent nodes stream their model calls
        instead and pass on each of the agent's own events as an `agent` event (`data["agent_event"]`,
        chainreact.types.events: `text_delta` as the answer is generated, `tool_call`, `tool_result`,
        `run_start`, `final`, ...), in place of those (what `chainreact chat` shows)."""
        store = await self.store()
        key = self.session_key(session)
        tape = TurnRecording(self, store, session, text, user, group) if self.record else None
        reader = tape.reads if tape is not None else store
        rec = await reader.get_run(key)
        version = rec.version if rec is not None else 0
        start = self.definition.start_node.name
        state = Session.from_snapshot(rec.snapshot if rec is not None else None, start)
        env = turn_env(text, user, group, session, state)
        if tape is not None:
            tape.start()
        try:
            io = LocalTurnIO(self, key, cast("Store | None", reader))  # a ReadRecorder proxies the store
            async for ev in route(self.definition, self.id, session, state, env, io, agent_events):
                if tape is not None:
                    tape.see(ev)
                yield ev
            await store.save_run(key, state.to_snapshot(), status="done" if state.ended else "interrupted",
                                 agent=self.id, session=session, expect_version=version)
            end = state.end_event()
            if tape is not None:
                await tape.finish(key, end)
        finally:
            if tape is not None:
                tape.stop()
        yield end

    async def run_chain(self, node: RuleChainNode, env: dict[str, Any]) -> Any:
        if self._chains is None:
            from ..chains import RuleEngine

            self._chains = RuleEngine()
        return await run_chain_node(node, env, self._chains, flow_id=self.id, base_dir=self.base_dir,
                                    loaded=self._chain_files)


class LocalTurnIO:
    """A turn's node I/O in this process (routing.TurnIO): agent runs and rule chains called directly.
    `store`: the one the turn reads and writes through (the flow's, or a recording view of it)."""

    def __init__(self, flow: Flow, key: str, store: Store | None = None):
        self.flow = flow
        self.key = key
        self.store = store

    async def agent(self, node: AIAgentNode, env: dict[str, Any], pending: Pending | None,
                    agent_events: bool) -> AsyncIterator[FlowEvent | AgentOutcome]:
        flow = self.flow
        store = self.store if self.store is not None else await flow.store()
        async for item in run_agent_node(node, env, store, self.key, base_dir=flow.base_dir,
                                         flow=flow.definition, pending=pending, session_key=self.key,
                                         agent_events=agent_events):
            yield item

    async def chain(self, node: RuleChainNode, env: dict[str, Any]) -> Any:
        return await self.flow.run_chain(node, env)


__all__ = ["MAX_HOPS", "Flow", "FlowEvent", "FlowMessage", "LocalTurnIO", "SessionSummary", "TurnResult",
           "addressed", "list_sessions"]
