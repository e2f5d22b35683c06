"""The routing of one turn: which nodes run, in what order, and where the session waits afterwards.

    state = Session.from_snapshot(snapshot, start)         # the session as stored (or a new one)
    env = turn_env(text, user, group, session_id, state)    # the names templates and conditions see
    async for event in route(definition, flow_id, session_id, state, env, io): ...
    state.to_snapshot()                                     # what the caller saves

Everything here is a decision over the session state, the flow document and the results of the nodes'
I/O; the I/O itself (an `aiagent` node's run with its memory, a rule chain) goes through a `TurnIO`. The
same routing runs in process (`Flow.stream`, whose TurnIO calls the nodes directly) and as Temporal workflow
code (chainreact.durable, whose TurnIO starts activities), so the two cannot drift apart.
"""

from __future__ import annotations

import logging
import re
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from .asking import Pending
from .errors import FlowError
from .events import FlowEvent
from .events import message as _message
from .exprs import compile_condition, evaluate, render, truthy
from .model import AIAgentNode, EndNode, FlowDef, MessageNode, RuleChainNode, TransitionDef
from .node_steps import AgentOutcome

log = logging.getLogger("chainreact.flows")

# Nodes visited in one turn without waiting for the user: more means a loop of finish:false outcomes.
MAX_HOPS = 32

LOGIN_REQUIRED_MESSAGE = "Please log in to continue."


@dataclass
class Session:
    node: str | None
    ended: bool
    output: Any
    vars: dict[str, Any]
    go_on: bool = False  # set by a step: the turn goes on at state.node
    pending: Pending | None = None  # an agent run waiting for the user's answer (askUserForToolsInput)
    # The last turn's user, kept so that views of the session know it (flows/sessions.py: whose memory)
    user: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_snapshot(cls, snap: Any, start: str) -> Session:
        """The stored session (`snap`: its checkpoint's dict, or None); a new or ended one starts at
        `start`."""
        if not isinstance(snap, dict) or snap.get("ended"):
            return cls(start, False, None, {})  # a new session, or one whose flow ended: start again
        state = cls(snap.get("node"), False, snap.get("output"), dict(snap.get("vars") or {}),
                    user=dict(snap.get("user") or {}))
        if isinstance(snap.get("pending"), dict):
            state.pending = Pending.from_dict(snap["pending"])
        return state

    def to_snapshot(self) -> dict[str, Any]:
        pending = self.pending.to_dict() if self.pending is not None and not self.ended else None
        return {"node": self.node, "ended": self.ended, "output": self.output, "vars": self.vars,
                "pending": pending, "user": self.user}

    def end_event(self) -> FlowEvent:
        """The turn's last event, once the session is saved."""
        end: dict[str, Any] = {"current": self.node, "ended": self.ended}
        if self.pending is not None and not self.ended:
            end["question"] = self.pending.current.text
        return FlowEvent("turn_end", self.node, end)


class TurnIO(Protocol):
    """The I/O of a turn's nodes."""

    def agent(self, node: AIAgentNode, env: dict[str, Any], pending: Pending | None,
              agent_events: bool) -> AsyncIterator[FlowEvent | AgentOutcome]:
        """Run an `aiagent` node (node_steps.node_turn): its events, then its AgentOutcome. It may set
        env["userInput"] (an answered question goes on with the input of the turn that asked)."""
        ...

    async def chain(self, node: RuleChainNode, env: dict[str, Any]) -> Any:
        """Run a `rulechain` node; its output."""
        ...


def turn_env(text: str, user: Mapping[str, Any] | None, group: Mapping[str, Any] | None, session: str,
             state: Session) -> dict[str, Any]:
    """The turn's template environment; the turn's user is the session's from now on (`state.user`)."""
    state.user = dict(user or {})
    return {"userInput": text, "user": dict(state.user), "session": {"id": session},
            "group": dict(group) if group is not None else None, "vars": state.vars, "output": state.output}


async def route(flow: FlowDef, flow_id: str, session: str, state: Session, env: dict[str, Any], io: TurnIO,
                agent_events: bool = False) -> AsyncIterator[FlowEvent]:
    """Run the turn's nodes from `state.node` until the session waits or the flow ends; `state` is updated
    in place (the caller saves it and yields `state.end_event()`)."""
    hops = 0
    while state.node is not None:
        hops += 1
        if hops > MAX_HOPS:
            raise FlowError(f"flow {flow_id!r}: {MAX_HOPS} nodes in one turn without waiting for the "
                            f"user (a loop of finish:false outcomes?), last at {state.node!r}")
        node = flow.node(state.node)
        if node is None:
            raise FlowError(f"flow {flow_id!r}: session {session!r} is at node {state.node!r}, which the "
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
            output = await io.chain(node, env)
            state.output = env["output"] = state.vars[node.name] = output
            yield FlowEvent("output", node.name, {"output": output})
            if node.message:
                yield _message(node.name, render(node.message, env))
            go_on = _follow(state, node.transition, node.finish)
        else:
            state.go_on = False
            async for ev in _agent_step(node, env, state, io, agent_events):
                yield ev
            go_on = state.go_on
        if not go_on:
            break


async def _agent_step(node: AIAgentNode, env: dict[str, Any], state: Session, io: TurnIO,
                      agent_events: bool) -> AsyncIterator[FlowEvent]:
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
    async for item in io.agent(node, env, pending, agent_events):
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


def _follow(state: Session, t: TransitionDef | None, finish: bool) -> bool:
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


__all__ = ["LOGIN_REQUIRED_MESSAGE", "MAX_HOPS", "Session", "TurnIO", "addressed", "route", "turn_env"]
