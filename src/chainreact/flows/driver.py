"""Driving one agent run for a node: its events passed on live as FlowEvents, the RunResult at the end.

With a store, every safe point of the run is checkpointed (chainreact.state's StoreCheckpointer), so a run
that stops to ask the user (askUserForToolsInput) can be resumed by another process from the store. This
is `run_with_store` / `resume_with_store` (state/runs.py) with the events kept: those two return only the
result, and a chat must show tool calls while they run.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from ..agent.interrupt import Resume
from ..agent.loop import ReactLoop
from ..agent.result import RunResult
from ..tools.base import ToolOutput
from .events import FlowEvent, from_agent_event


async def drive(agent: Any, node: str, input: Any = None, *, store: Any = None, session: str | None = None,
                run_id: str | None = None, answers: dict[str, Any] | None = None,
                extra: dict[str, Any] | None = None,
                agent_events: bool = False) -> AsyncIterator[FlowEvent | RunResult]:
    """Run `agent` on `input` (or, with `run_id`, resume that stored run with `answers`), yielding the
    run's FlowEvents and, last, its RunResult. A refused answer raises chainreact.state's StateError
    before anything runs. `agent_events`: the model calls stream and each agent event is passed on as it
    is, as an `agent` FlowEvent (`data["agent_event"]`), instead of the flow's own tool events."""
    from ..state.checkpoint import prepare_resume, save_snapshot
    from ..state.runs import StoreCheckpointer

    ckpt: StoreCheckpointer | None = None
    resume: Resume | None = None
    if run_id is not None:
        snap, version, checked = await prepare_resume(store, run_id, answers)
        snap.status, snap.questions = "running", []
        # Claimed before anything runs: a second process answering the same question gets RunConflictError.
        version = await save_snapshot(store, snap, expect_version=version)
        completed = {k: ToolOutput(v.content, v.is_error) for k, v in snap.completed_tool_results.items()}
        resume = Resume(snap.messages, snap.step, snap.pending_tool_calls, completed, checked, run_id)
        ckpt = StoreCheckpointer(store, session=snap.session, version=version, extra=extra)
        ckpt.last = snap
    elif store is not None:
        ckpt = StoreCheckpointer(store, session=session, extra=extra)
    plan = await agent.plan(checkpoint=ckpt)
    loop = ReactLoop(plan, streaming=agent_events, run_id=run_id)
    try:
        async for ev in loop.events(input, resume):
            fe = FlowEvent("agent", node, {"agent_event": ev}) if agent_events else from_agent_event(ev, node)
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


__all__ = ["drive"]
