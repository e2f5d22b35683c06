"""Driving one agent run for a node: its events passed on live as FlowEvents, the RunResult at the end.

With a store, every safe point of the run is checkpointed (chainreact.state's StoreCheckpointer), so a run
that stops to ask the user (askUserForToolsInput) can be resumed by another process from the store. This
is `run_with_store` / `resume_with_store` (state/runs.py) with the events kept: those two return only the
result, and a chat must show tool calls while they run. A stored run is claimed as they claim it
(state/runs.py `claim`).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

from ..agent.interrupt import Resume
from ..agent.loop import ReactLoop
from ..agent.result import RunResult
from ..types import Event
from .events import FlowEvent, from_agent_event

if TYPE_CHECKING:
    from ..agent.agent import Agent
    from ..state.base import Store


async def drive(agent: Agent, node: str, input: Any = None, *, store: Store | None = None,
                session: str | None = None,
                run_id: str | None = None, answers: dict[str, Any] | None = None,
                extra: dict[str, Any] | None = None,
                agent_events: bool = False) -> AsyncIterator[FlowEvent | RunResult]:
    """Run `agent` on `input` (or, with `run_id`, resume that stored run with `answers`), yielding the
    run's FlowEvents and, last, its RunResult. A refused answer raises chainreact.state's StateError
    before anything runs. `agent_events`: the model calls stream and each agent event is passed on as it
    is, as an `agent` FlowEvent (`data["agent_event"]`), instead of the flow's own tool events."""
    from ..state.runs import StoreCheckpointer, claim

    ckpt: StoreCheckpointer | None = None
    resume: Resume | None = None
    if run_id is not None:
        snap, version, resume = await claim(store, run_id, answers)
        ckpt = StoreCheckpointer(store, session=snap.session, version=version, extra=extra)
        ckpt.last = snap
    elif store is not None:
        ckpt = StoreCheckpointer(store, session=session, extra=extra)
    plan = await agent.plan(checkpoint=ckpt)
    loop = ReactLoop(plan, streaming=agent_events, run_id=run_id)
    try:
        async for ev in loop.events(input, resume):
            fe = flow_event(ev, node, agent_events)
            if fe is not None:
                yield fe
    except Exception as e:
        if ckpt is not None:
            await ckpt.finish(None, run_id, agent.name, e)
        raise
    result = loop.result
    assert result is not None
    if ckpt is not None:
        await ckpt.finish(result, run_id, agent.name)
    yield result


def flow_event(ev: Event, node: str, agent_events: bool) -> FlowEvent | None:
    """An agent event of a node's run as the turn shows it: as is (`agent_events`: an `agent` FlowEvent
    carrying it) or in the flow's own form (events.from_agent_event; None for those a turn does not
    show)."""
    return FlowEvent("agent", node, {"agent_event": ev}) if agent_events else from_agent_event(ev, node)


__all__ = ["drive", "flow_event"]
