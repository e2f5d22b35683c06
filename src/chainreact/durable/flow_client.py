"""Chat-flow turns on Temporal: the caller's side.

    durable = DurableFlow(flow, client=client, task_queue="flows")    # flow: a Flow or its id
    turn = await durable.send("session-1", "My order 42 is late", user={"id": "u1"})   # a TurnResult

    t = await durable.start("session-1", "It arrived", stream=True)    # a DurableTurn (a workflow)
    async for event in t.events(store): ...      # event dicts (as `flow send --jsonl` prints), live
    turn = await t.result()
    async for ev in durable.stream("session-1", "Thanks", store=store): ...   # FlowEvents, as Flow.stream
                                           # (leaving it before the turn's end cancels the turn, as there)

The turn runs in whichever worker polls the task queue and hosts the flow (by id); the caller needs nothing
of the flow but its id. One session's turns run one at a time: a turn started while another of the same
session runs waits for it (the workflow id is the session key).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..flows.engine import TurnResult
from ..flows.events import FlowEvent, FlowMessage
from .client import DurableRunError, DurableTarget, run_error, tail_log
from .codec import JSON
from .options import DurableOptions

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from ..state.base import Store

log = logging.getLogger("chainreact.durable")

STOP_EVENTS = ("turn_end", "error")
_CANCELS: set[asyncio.Task[None]] = set()  # the cancels of turns left by their callers, while sent


class DurableFlow(DurableTarget):
    """A chat flow whose turns run as Temporal workflows on `task_queue` (see the module doc)."""

    def __init__(self, flow: Any, *, client: Client | str, task_queue: str,
                 options: DurableOptions | None = None, namespace: str = "default"):
        super().__init__(client=client, task_queue=task_queue, options=options, namespace=namespace)
        self.id: str = flow if isinstance(flow, str) else flow.id

    def session_key(self, session: str) -> str:
        """The session's key in the state store, and the workflow id of its turns."""
        return f"flow:{self.id}:{session}"

    async def start(self, session: str, text: str, *, user: Mapping[str, Any] | None = None,
                    group: Mapping[str, Any] | None = None, stream: bool = False,
                    wait: float = 600.0) -> DurableTurn:
        """Start a turn and return its handle once it runs. When a turn of the same session is still
        running, this one starts after it (for at most `wait` seconds, then DurableRunError). `stream`:
        agent nodes stream their model calls, each agent event an `agent` event in the log (what
        `chainreact chat` shows); without it the log has the flow's own events."""
        from temporalio.client import WorkflowFailureError
        from temporalio.exceptions import WorkflowAlreadyStartedError

        from .flow_workflow import WORKFLOW

        client = await self.client()
        wid = self.session_key(session)
        req: JSON = {"flow": self.id, "session": session, "text": text, "user": dict(user or {}),
                     "group": dict(group) if group is not None else None, "stream": stream,
                     "options": self.options.to_dict()}
        loop = asyncio.get_running_loop()
        deadline = loop.time() + wait
        while True:
            try:
                started = await client.start_workflow(WORKFLOW, req, id=wid, task_queue=self.task_queue)
                # Bound to this run: the workflow id is the session's, later turns reuse it.
                run_id = started.result_run_id
                return DurableTurn(client.get_workflow_handle(wid, run_id=run_id), wid, run_id)
            except WorkflowAlreadyStartedError:
                pass  # the session's previous turn still runs: this one comes after it
            if loop.time() >= deadline:
                raise DurableRunError(f"session {session!r} of flow {self.id!r}: the previous turn still "
                                      f"runs after {wait:g} s", error_type="SessionBusy", run_id=wid)
            try:
                await asyncio.wait_for(client.get_workflow_handle(wid).result(),
                                       max(0.1, deadline - loop.time()))
            except (WorkflowFailureError, TimeoutError):
                pass  # its failure is its caller's; here only its end matters

    async def send(self, session: str, text: str, *, user: Mapping[str, Any] | None = None,
                   group: Mapping[str, Any] | None = None) -> TurnResult:
        """Run one turn and return its messages, as Flow.send (DurableRunError when the turn failed:
        `error_type` names the flow's error, e.g. OutputValidationError)."""
        turn = await self.start(session, text, user=user, group=group)
        return await turn.result()

    async def stream(self, session: str, text: str, *, store: Store, user: Mapping[str, Any] | None = None,
                     group: Mapping[str, Any] | None = None, agent_events: bool = False,
                     keep_running: Callable[[], bool] | None = None) -> AsyncIterator[FlowEvent]:
        """One turn's FlowEvents as it happens, read from `store` (the workers' state store), as
        Flow.stream (`agent_events`: each `agent` event's `agent_event` typed, as in process). A failed turn
        raises DurableRunError after its `error` event. Leaving before the turn's end (closing the iterator:
        a client went away) cancels the turn's workflow, as closing Flow.stream stops an in-process turn:
        nothing of it is saved. Unless `keep_running()` then says True (a server shutting down): the turn
        ends, and is saved, in the workers."""
        from .codec import event_from_dict

        turn = await self.start(session, text, user=user, group=group, stream=agent_events)
        ended = False
        try:
            async for d in turn.events(store):
                if d.get("event") == "error":
                    break
                data = {k: v for k, v in d.items() if k not in ("event", "node")}
                if d.get("event") == "agent":
                    typed = event_from_dict(data.get("agent_event") or {})
                    if typed is None:
                        continue  # an event type this process does not know (a newer worker)
                    data["agent_event"] = typed
                if d.get("event") == "turn_end":
                    ended = True  # saved: nothing left to cancel
                yield FlowEvent(str(d.get("event")), d.get("node"), data)
            ended = True
        finally:
            if not ended and not (keep_running is not None and keep_running()):
                # Sent from a task of its own: the caller's task may be cancelled (a client that left) and
                # an await here cancelled with it; the cancel goes out all the same.
                task = asyncio.ensure_future(_cancel(turn))
                _CANCELS.add(task)
                task.add_done_callback(_CANCELS.discard)
                await asyncio.shield(task)
        await turn.result()


async def _cancel(turn: DurableTurn) -> None:
    try:
        await turn.cancel()
    except Exception as e:  # ended meanwhile, or Temporal unreachable
        log.warning("turn %s: cannot cancel its workflow: %s", turn.turn_id, e)


class DurableTurn:
    """One turn running (or run) as a workflow."""

    def __init__(self, handle: WorkflowHandle[Any, Any], workflow_id: str, run_id: str | None):
        from .flow_workflow import turn_log_id

        self.handle = handle
        self.workflow_id = workflow_id
        self.run_id = run_id or ""
        self.turn_id = turn_log_id(workflow_id, self.run_id)  # its event log in the state store

    async def result(self) -> TurnResult:
        from temporalio.client import WorkflowFailureError

        try:
            out = await self.handle.result()
        except WorkflowFailureError as e:
            raise run_error(e, f"turn {self.turn_id!r}", self.turn_id) from e
        return TurnResult(node=out["node"], ended=bool(out["ended"]),
                          messages=[FlowMessage(m["node"], m["content"], m.get("role", "assistant"))
                                    for m in out["messages"]],
                          output=out.get("output"), warnings=list(out.get("warnings") or []))

    async def cancel(self) -> None:
        """Stop the turn at once (the call in flight learns it at its next heartbeat); nothing is saved."""
        await self.handle.cancel()

    async def status(self) -> JSON:
        """{"status": starting|running|done|failed, "node": the node it is at, "turn": the turn id}."""
        out: JSON = await self.handle.query("status")
        return out

    async def events(self, store: Store, *, after: int = 0, poll: float = 0.05) -> AsyncIterator[JSON]:
        """The turn's events (dicts, as `chainreact flow send --jsonl` prints them) from `store`'s log while
        the turn goes on, until `turn_end` (or `error`). The workers must use the same store."""
        async for d in tail_log(store, self.turn_id, self.handle, STOP_EVENTS, after=after, poll=poll):
            yield d
