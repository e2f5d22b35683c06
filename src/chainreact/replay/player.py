"""The replayer: a plan hook (agent/plan.py) that answers every planned agent's model calls from a cassette.

Each agent planned while it is installed is matched to one of the cassette's recorded agents when it makes
its first model call: same name, same parent tool call (a sub-agent), and the recorded first request that
agrees longest with the one it sends now. Then its n-th model call gets the n-th recorded response (matched
by step), after the request it sends is compared with the recorded one: every difference is a Diff.

Tool calls get their recorded results (by call id), or, with `live_tools`, run for real and their results
are compared with the recorded ones. A tool call the loop refused before running it (the tool is gone, its
arguments no longer fit its schema) shows in the next request's tool message: compared there.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from typing import Any

from ..agent.plan import RunPlan
from ..agent.recording import current_call, message_dict
from ..errors import ChainreactError, ModelError
from ..tools.base import Tool, ToolContext, ToolOutput
from ..tools.interrupt import ToolInterrupt
from ..types import Message, ModelResponse, ReasoningChunk, TextChunk, ToolCall, ToolCallChunk, Usage
from .diff import Diff, Diffs, compare_messages, compare_tools

IGNORABLE = ("system", "tools")


class ReplayMismatch(ChainreactError):
    """The replayed agent asked for a model call the cassette does not have (its run ends here)."""


class Tape:
    """One recorded agent and how far its replay got."""

    def __init__(self, data: dict[str, Any]):
        self.data = data
        self.slot = str(data.get("slot") or "")
        self.agent = data.get("agent")
        self.parent = tuple(data["parent"]) if data.get("parent") else None
        self.steps: list[dict[str, Any]] = data.get("steps") or []
        resumed = data.get("resumed") or []  # calls run before its first model call (a resumed run's)
        tools = [(0, t) for t in resumed] + [(s.get("step"), t) for s in self.steps
                                              for t in s.get("tools") or []]
        self.results = {t["id"]: t for _, t in tools}
        self.step_of = {t["id"]: step for step, t in tools}
        self.bound = False
        self.made = 0  # model calls made
        self.executed: set[str] = set()  # tool call ids run (or answered from the cassette)
        self.seen: set[str] = set()  # tool call ids whose result the agent sent back


class Replayer:
    def __init__(self, cassette: dict[str, Any], *, live_tools: bool = False, ignore: tuple[str, ...] = ()):
        bad = [i for i in ignore if i not in IGNORABLE]
        if bad:
            raise ChainreactError(f"replay: cannot ignore {', '.join(bad)} (ignorable: "
                                  f"{', '.join(IGNORABLE)})")
        self.tapes = [Tape(a) for a in cassette.get("agents") or []]
        self.live_tools = live_tools
        self.ignore = frozenset(ignore)
        self.diffs = Diffs()

    def __call__(self, plan: RunPlan) -> RunPlan:
        player = _Player(self, plan.agent)
        return plan.replace(model=player.model, call_tool=player.call_tool(plan.call_tool))

    def bind(self, agent: str, messages: list[dict[str, Any]]) -> Tape | None:
        parent = current_call.get()
        free = [t for t in self.tapes if not t.bound and t.agent == agent]
        if parent is not None:
            free = [t for t in free if t.parent == parent] or free
        if not free:
            return None
        tape = max(free, key=lambda t: (_agreement(t, messages), -self.tapes.index(t)))
        tape.bound = True
        return tape

    def bind_call(self, agent: str, call_id: str) -> Tape | None:
        """The tape of an agent whose first act is a tool call (a resumed run's pending call): the free
        one that recorded that call."""
        free = (t for t in self.tapes if not t.bound and t.agent == agent and call_id in t.results)
        tape = next(free, None)
        if tape is not None:
            tape.bound = True
        return tape

    def finish(self) -> list[Diff]:
        """The diffs, with what the replay left undone: recorded model calls not made, tool calls not run."""
        for t in self.tapes:
            if not t.bound:
                if t.parent is None:
                    self.diffs.add(Diff("agent", "recorded, but the replay never called its model",
                                        agent=t.agent))
                continue
            if t.made < len(t.steps):
                self.diffs.add(Diff("steps", "model calls", agent=t.agent, expected=len(t.steps), got=t.made))
            for cid, rec in t.results.items():
                if cid not in t.executed and cid not in t.seen and (t.step_of.get(cid) or 0) <= t.made:
                    self.diffs.add(Diff("tool", "recorded, but not run", step=t.step_of.get(cid),
                                        agent=t.agent, tool=rec.get("name"), call_id=cid))
        return self.diffs.items


def _agreement(tape: Tape, messages: list[dict[str, Any]]) -> int:
    if not tape.steps:
        return -1
    recorded = tape.steps[0]["request"].get("messages") or []
    n = 0
    for e, g in zip(recorded, messages, strict=False):
        if e != g:
            break
        n += 1
    return n


class _Player:
    """One planned agent's replay."""

    def __init__(self, replayer: Replayer, agent: str):
        self.r = replayer
        self.agent = agent
        self.tape: Tape | None = None

    async def model(self, messages: list[Message], tools: list[dict[str, Any]] | None, *, stream: bool,
                    on_event: Callable[[Any], None]) -> AsyncGenerator[Any, None]:
        sent = [message_dict(m) for m in messages]
        if self.tape is None:
            self.tape = self.r.bind(self.agent, sent)
            if self.tape is None:
                self.r.diffs.add(Diff("agent", "made a model call, but the cassette has no recording of it",
                                      agent=self.agent))
                raise ReplayMismatch(f"replay: the cassette has no recorded agent {self.agent!r} (left)")
        tape = self.tape
        tape.made += 1
        n = tape.made
        if n > len(tape.steps):
            self.r.diffs.add(Diff("steps", "model calls: the agent asks for one more", step=n,
                                  agent=tape.agent, expected=len(tape.steps), got=n))
            raise ReplayMismatch(f"replay: agent {tape.agent!r} made model call {n}; the recording has "
                                 f"{len(tape.steps)}")
        rec = tape.steps[n - 1]
        self._compare(tape, n, rec["request"], sent, tools)
        if "response" not in rec:
            err = rec.get("error") or {}
            raise ModelError(f"(replayed) {err.get('type', 'Error')}: {err.get('message', '')}",
                             status=err.get("status"))
        resp = rec["response"]
        msg = Message.from_openai(resp["message"])
        if stream:
            if msg.reasoning:
                yield ReasoningChunk(msg.reasoning)
            if msg.text:
                yield TextChunk(msg.text)
            for i, c in enumerate(msg.tool_calls or ()):
                yield ToolCallChunk(i, c.id, c.name, c.arguments)
        yield ModelResponse(msg, resp.get("finish_reason"), _usage(resp.get("usage")), resp.get("model"),
                            "replay")

    def _compare(self, tape: Tape, n: int, req: dict[str, Any], sent: list[dict[str, Any]],
                 tools: list[dict[str, Any]] | None) -> None:
        diffs = self.r.diffs
        changed, first = compare_messages(req.get("messages") or [], sent,
                                          ignore_system="system" in self.r.ignore)
        for _, e, g in changed:
            cid = str(e.get("tool_call_id"))
            tape.seen.add(cid)
            rec = tape.results.get(cid) or {}
            diffs.add(Diff("tool", "result", step=tape.step_of.get(cid), agent=tape.agent,
                           tool=rec.get("name"), call_id=cid, expected=e.get("content"),
                           got=g.get("content")))
        for m in sent:
            if m.get("role") == "tool":
                tape.seen.add(str(m.get("tool_call_id")))
        if first is not None:
            first.step, first.agent = n, tape.agent
            diffs.add(first)
        if "tools" not in self.r.ignore:
            d = compare_tools(req.get("tools"), tools)
            if d is not None:
                d.step, d.agent = n, tape.agent
                diffs.add(d)

    def call_tool(self, inner: Any) -> Any:
        async def call_tool(call: ToolCall, tool: Tool, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
            if self.tape is None:
                self.tape = self.r.bind_call(self.agent, call.id)
            tape = self.tape
            rec = tape.results.get(call.id) if tape is not None else None
            name = tape.agent if tape is not None else self.agent
            step = tape.made if tape is not None else None
            if tape is not None:
                tape.executed.add(call.id)
            diffs = self.r.diffs
            if rec is not None and (rec.get("name"), rec.get("arguments")) != (call.name, call.arguments):
                diffs.add(Diff("tool", "call", step=step, agent=name, tool=call.name, call_id=call.id,
                               expected=f"{rec.get('name')}({rec.get('arguments')})",
                               got=f"{call.name}({call.arguments})"))
            if not self.r.live_tools:
                if rec is None:
                    diffs.add(Diff("tool", "this call is not in the recording", step=step, agent=name,
                                   tool=call.name, call_id=call.id))
                    return ToolOutput("Error: replay: this tool call is not in the cassette", is_error=True)
                ask = rec.get("interrupt")
                if isinstance(ask, dict):  # it stopped to ask: the run stops as the recorded one did
                    return ToolOutput("", data=ToolInterrupt(str(ask.get("question") or ""),
                                                             kind=str(ask.get("kind") or "ask_user"),
                                                             schema=ask.get("schema"), data=ask.get("data")))
                return ToolOutput(str(rec.get("content") or ""), bool(rec.get("is_error")))
            token = current_call.set((tape.slot if tape is not None else "", call.id))
            try:
                out: ToolOutput = await inner(call, tool, args, ctx)
            finally:
                current_call.reset(token)
            if rec is None:
                diffs.add(Diff("tool", "this call is not in the recording", step=step, agent=name,
                               tool=call.name, call_id=call.id, got=out.content))
            elif (out.content, out.is_error) != (rec.get("content"), bool(rec.get("is_error"))):
                what = "result" if out.is_error == bool(rec.get("is_error")) else \
                    ("result (an error now)" if out.is_error else "result (no error now)")
                diffs.add(Diff("tool", what, step=step, agent=name, tool=call.name, call_id=call.id,
                               expected=rec.get("content"), got=out.content))
            return out

        return call_tool


def _usage(d: Any) -> Usage | None:
    if not isinstance(d, dict):
        return None
    return Usage(int(d.get("prompt_tokens") or 0), int(d.get("completion_tokens") or 0),
                 int(d.get("total_tokens") or 0), int(d.get("cached_tokens") or 0))


__all__ = ["IGNORABLE", "ReplayMismatch", "Replayer", "Tape"]
