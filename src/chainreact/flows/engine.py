"""The turn engine: a session's current node, one user message in, the turn's messages out.

    async with Flow.load("support.json", state="sqlite:///state.db") as flow:
        turn = await flow.send("s1", "my order is late", user={"id": "u1"})
        turn.messages, turn.node, turn.ended, turn.output

The session (current node, ended flag, last output, variables) is a checkpoint in chainreact.state under
the run id `flow:<flow id>:<session>`, saved with its version expected, so two processes in a row continue
one conversation and two at once cannot both move it (the second gets RunConflictError). The
conversation memory lives in the same store, under the node's rendered `memoryId` or, without one, under
that same `flow:<flow id>:<session>` key.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .agent_node import AgentOutcome, run_agent_node
from .asking import Pending
from .chain_node import run_chain_node
from .errors import FlowError
from .events import FlowEvent, FlowMessage
from .events import message as _message
from .exprs import compile_condition, evaluate, render, truthy
from .model import AIAgentNode, EndNode, FlowDef, MessageNode, RuleChainNode, TransitionDef
from .validate import load_flow

log = logging.getLogger("chainreact.flows")

# Nodes visited in one turn without waiting for the user: more means a loop of finish:false outcomes.
MAX_HOPS = 32

LOGIN_REQUIRED_MESSAGE = "Please log in to continue."


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


@dataclass
class _Session:
    node: str | None
    ended: bool
    output: Any
    vars: dict[str, Any]
    go_on: bool = False  # set by a step: the turn goes on at state.node
    pending: Pending | None = None  # an agent run waiting for the user's answer (askUserForToolsInput)


class Flow:
    def __init__(self, definition: FlowDef, *, source: str | None = None, state: str | None = None,
                 store: Any = None, base_dir: str | Path | None = None, chains: Any = None):
        self.definition = definition
        self.source = source
        self.id = definition.id or definition.name or "flow"
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
        rec = await store.get_run(key)
        version = rec.version if rec is not None else 0
        snap = rec.snapshot if rec is not None and isinstance(rec.snapshot, dict) else None
        if snap is None or snap.get("ended"):
            # A new session, or one whose flow ended: the message starts the flow again.
            state = _Session(self.definition.start_node.name, False, None, {})
        else:
            state = _Session(snap.get("node"), False, snap.get("output"), dict(snap.get("vars") or {}))
            if isinstance(snap.get("pending"), dict):
                state.pending = Pending.from_dict(snap["pending"])
        env: dict[str, Any] = {"userInput": text, "user": dict(user or {}), "session": {"id": session},
                               "group": dict(group) if group is not None else None,
                               "vars": state.vars, "output": state.output}
        hops = 0
        while state.node is not None:
            hops += 1
            if hops > MAX_HOPS:
                raise FlowError(f"flow {self.id!r}: {MAX_HOPS} nodes in one turn without waiting for the "
                                f"user (a loop of finish:false outcomes?), last at {state.node!r}")
            node = self.definition.node(state.node)
            if node is None:
                raise FlowError(f"flow {self.id!r}: session {session!r} is at node {state.node!r}, which the "
                                "flow no longer has")
            yield FlowEvent("node", node.name)
            go_on = False
            if isinstance(node, EndNode):
                if node.message:
                    yield _message(node.name, render(node.message, env))
                state.node, state.ended = None, True
            elif isinstance(node, MessageNode):
                yield _message(node.name, render(node.message, env))
                go_on = _follow(state, node.transition, node.finish)
            elif isinstance(node, RuleChainNode):
                output = await self._run_chain(node, env)
                state.output = env["output"] = state.vars[node.name] = output
                yield FlowEvent("output", node.name, {"output": output})
                if node.message:
                    yield _message(node.name, render(node.message, env))
                go_on = _follow(state, node.transition, node.finish)
            else:
                state.go_on = False
                async for ev in self._agent_step(node, env, state, key, agent_events):
                    yield ev
                go_on = state.go_on
            if not go_on:
                break
        pending = state.pending.to_dict() if state.pending is not None and not state.ended else None
        await store.save_run(key, {"node": state.node, "ended": state.ended, "output": state.output,
                                   "vars": state.vars, "pending": pending},
                             status="done" if state.ended else "interrupted", agent=self.id, session=session,
                             expect_version=version)
        end = {"current": state.node, "ended": state.ended}
        if pending is not None:
            end["question"] = state.pending.current.text if state.pending is not None else None
        yield FlowEvent("turn_end", state.node, end)

    async def _agent_step(self, node: AIAgentNode, env: dict[str, Any], state: _Session,
                          key: str, agent_events: bool = False) -> AsyncIterator[FlowEvent]:
        group = env.get("group")
        if group is not None and node.groupConfig is not None and node.groupConfig.directMessageOnly \
                and not addressed(node.name, env["userInput"], group):
            # Not for this agent: no answer, nothing remembered, the session stays where it is.
            yield FlowEvent("ignored", node.name, {"reason": "directMessageOnly: not addressed"})
            return
        if node.loginRequired and not _authenticated(env["user"]):
            yield FlowEvent("login_required", node.name)
            yield _message(node.name, LOGIN_REQUIRED_MESSAGE)
            return  # the session stays on this node until a logged-in user writes
        pending = state.pending if state.pending is not None and state.pending.node == node.name else None
        result: AgentOutcome | None = None
        async for item in run_agent_node(node, env, await self.store(), key, base_dir=self.base_dir,
                                         flow=self.definition, pending=pending, session_key=key,
                                         agent_events=agent_events):
            if isinstance(item, FlowEvent):
                yield item
            else:
                result = item
        assert result is not None
        state.pending = result.asked
        if result.asked is not None:
            return  # the session waits on this node for the answer
        state.output = env["output"] = state.vars[node.name] = result.output
        yield FlowEvent("output", node.name, {"output": result.output, "attempts": result.attempts})
        if result.text is not None:
            yield _message(node.name, result.text)
        for i, oc in enumerate(node.agentOutcomes):
            try:
                matched = truthy(evaluate(compile_condition(oc.condition), env))
            except Exception as e:  # an expression error at run time skips the outcome, never the turn
                msg = f"node {node.name!r}: agentOutcomes[{i}].condition {oc.condition!r} failed: {e}"
                log.warning(msg)
                yield FlowEvent("warning", node.name, {"message": msg})
                continue
            if not matched:
                continue
            if oc.finish and oc.answerAfterFinish and node.answerMessage:
                yield _message(node.name, render(node.answerMessage, env))
            state.go_on = _follow(state, oc.transition, oc.finish)
            return
        # No outcome matched: the node's own transition, if any, finishes the agent (then answerMessage).
        t = node.transition
        if t is not None and (t.end or t.targetId) and node.answerAfterFinish and node.answerMessage:
            yield _message(node.name, render(node.answerMessage, env))
        _follow(state, t, True)

    async def _run_chain(self, node: RuleChainNode, env: dict[str, Any]) -> Any:
        if self._chains is None:
            from ..chains import RuleEngine

            self._chains = RuleEngine()
        return await run_chain_node(node, env, self._chains, flow_id=self.id, base_dir=self.base_dir,
                                    loaded=self._chain_files)


def addressed(name: str, text: str, group: Mapping[str, Any]) -> bool:
    """Whether a group message is for the agent `name`: mentioned (`group["mentions"]` holds the name),
    `@name` in the text, or the text starts with the name followed by `,` or `:` ("support: my order")."""
    mentions = group.get("mentions") or []
    if isinstance(mentions, list | tuple) and any(str(m).lstrip("@").lower() == name.lower()
                                                  for m in mentions):
        return True
    if re.search(r"(?<![\w@])@" + re.escape(name) + r"(?!\w)", text, re.IGNORECASE):
        return True
    return re.match(re.escape(name) + r"\s*[,:]", text.lstrip(), re.IGNORECASE) is not None


def _authenticated(user: Any) -> bool:
    return isinstance(user, dict) and bool(user.get("id"))


def _follow(state: _Session, t: TransitionDef | None, finish: bool) -> bool:
    """Apply a transition to the session; True when the turn goes on at the new node."""
    if t is None:
        return False  # the session stays on this node
    if t.end:
        state.node, state.ended = None, True
        return False
    if t.targetId:
        state.node = t.targetId
        return not finish
    return False


__all__ = ["MAX_HOPS", "Flow", "FlowEvent", "FlowMessage", "TurnResult"]
