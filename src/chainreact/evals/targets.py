"""What an eval runs each case on: an agent, a rule chain, or a flow (one session per case).

A case's `input` is the agent's input (text, or `{"messages": [...]}`); for a chain, the message data (a
string, or any JSON value; `{"data", "metadata"?, "type"?, "dataType"?}` sets the message's other
fields); for a flow, the user's message (or a list of them: one turn each, the last turn's answer checked).
With a store, `save` keeps the case's run there: its `io` records and, for a chain, its node events.
"""

from __future__ import annotations

import secrets
from typing import TYPE_CHECKING, Any, Protocol

from ..agent.recording import IORecorder
from .dataset import Case

if TYPE_CHECKING:
    from ..agent.agent import Agent
    from ..chains.engine import RuleEngine
    from ..state.base import Store


class Target(Protocol):
    def describe(self) -> str: ...

    def note(self, recorder: IORecorder, case: Case) -> None:
        """Called inside the case's recording, before it runs."""

    def stored_id(self, run_id: str | None, extra: Any) -> str | None: ...

    async def run(self, case: Case, run_id: str | None) -> tuple[str | None, Any]:
        """The answer and whatever `save` needs."""

    async def save(self, store: Store, run_id: str, case: Case, records: list[dict[str, Any]],
                   answer: str | None, error: str | None, extra: Any, steps: int) -> None: ...


class BaseTarget:
    """What a target does not need to do: note nothing, keep the run under the id it was given."""

    def note(self, recorder: IORecorder, case: Case) -> None:
        return None

    def stored_id(self, run_id: str | None, extra: Any) -> str | None:
        """Where the case's run is kept (`chainreact runs export` it)."""
        return run_id

    async def save(self, store: Store, run_id: str, case: Case, records: list[dict[str, Any]],
                   answer: str | None, error: str | None, extra: Any, steps: int) -> None:
        return None


async def _save_run(store: Store, run_id: str, events: list[tuple[str, Any]], *, status: str,
                    agent: str | None, messages: list[Any], extra: dict[str, Any], steps: int) -> None:
    from ..state.checkpoint import RunSnapshot, save_snapshot

    if events:
        await store.append_events(run_id, events)
    await save_snapshot(store, RunSnapshot(run_id, status, steps, messages, agent=agent, extra=extra))


class AgentTarget(BaseTarget):
    def __init__(self, agent: Agent):
        self.agent = agent

    def describe(self) -> str:
        return f"agent {self.agent.agent_id}"

    def note(self, recorder: IORecorder, case: Case) -> None:
        recorder.note_run(self.agent, case.input)

    async def run(self, case: Case, run_id: str | None) -> tuple[str | None, Any]:
        result = await self.agent.run(case.input)
        return result.content, result

    async def save(self, store: Store, run_id: str, case: Case, records: list[dict[str, Any]],
                   answer: str | None, error: str | None, extra: Any, steps: int) -> None:
        stop = getattr(extra, "stop_reason", None)
        info: dict[str, Any] = {"kind": "agent", "target": self.agent.agent_id, "eval_case": case.name}
        info.update({"content": answer, "stop_reason": stop} if error is None else {"error": error})
        await _save_run(store, run_id, [("io", r) for r in records],
                        status="done" if error is None else "failed", agent=self.agent.name,
                        messages=list(getattr(extra, "messages", None) or []),
                        extra=info, steps=steps)


def chain_message(value: Any) -> Any:
    """A case's input as the RuleMsg that enters the chain."""
    import json

    from ..chains import RuleMsg

    if isinstance(value, dict) and "data" in value and set(value) <= {"data", "metadata", "type", "dataType"}:
        data = value["data"]
        text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
        return RuleMsg(type=str(value.get("type") or ""), data=text,
                       metadata={str(k): str(v) for k, v in (value.get("metadata") or {}).items()},
                       data_type=str(value.get("dataType") or "JSON"))
    if isinstance(value, str):
        try:
            json.loads(value)
            kind = "JSON"
        except ValueError:
            kind = "TEXT"
        return RuleMsg(data=value, data_type=kind)
    return RuleMsg(data=json.dumps(value, ensure_ascii=False), data_type="JSON")


class ChainTarget(BaseTarget):
    def __init__(self, engine: RuleEngine, chain_id: str):
        self.engine = engine
        self.chain_id = chain_id

    def describe(self) -> str:
        return f"chain {self.chain_id}"

    async def run(self, case: Case, run_id: str | None) -> tuple[str | None, Any]:
        from ..replay.chains import record_chain

        events: list[dict[str, Any]] = []
        ends = await record_chain(self.engine, self.chain_id, chain_message(case.input), events.append)
        errors = [e.error for e in ends if e.error]
        if ends and len(errors) == len(ends):
            raise RuntimeError(f"every branch failed: {errors[-1]}")
        return (ends[-1].msg.data if ends else None), (ends, events)

    async def save(self, store: Store, run_id: str, case: Case, records: list[dict[str, Any]],
                   answer: str | None, error: str | None, extra: Any, steps: int) -> None:
        ends, events = extra if extra is not None else ([], [])
        logged = [(str(e["type"]), {k: v for k, v in e.items() if k != "type"}) for e in events]
        info: dict[str, Any] = {"kind": "chain", "target": self.chain_id, "eval_case": case.name,
                                "ends": [{"relation": e.relation, "error": e.error, "data": e.msg.data}
                                         for e in ends]}
        info.update({"content": answer} if error is None else {"error": error})
        await _save_run(store, run_id, logged, status="done" if error is None else "failed", agent=None,
                        messages=[], extra=info, steps=steps)


class FlowTarget(BaseTarget):
    """A flow: each case in a session of its own (`eval-<random>`). The flow records its turns in its own
    store; `kept`: that store outlives the eval (`--state`), so a case's run id is its session's,
    `flow:<flow id>:<session>` (export its last turn)."""

    def __init__(self, flow: Any, *, kept: bool = False):
        self.flow = flow
        self.kept = kept

    def describe(self) -> str:
        return f"flow {self.flow.id}"

    async def run(self, case: Case, run_id: str | None) -> tuple[str | None, Any]:
        session = f"eval-{secrets.token_hex(6)}"
        turns = case.input if isinstance(case.input, list) else [case.input]
        turn = None
        for text in turns:
            turn = await self.flow.send(session, text if isinstance(text, str) else str(text))
        assert turn is not None
        return "\n\n".join(m.content for m in turn.messages), session

    def stored_id(self, run_id: str | None, extra: Any) -> str | None:
        return self.flow.session_key(extra) if self.kept and extra else None


__all__ = ["AgentTarget", "BaseTarget", "ChainTarget", "FlowTarget", "Target", "chain_message"]
