"""Running an agent durably: the caller's side.

    durable = DurableAgent(agent, client=client, task_queue="agents")   # agent: an Agent or its name
    result = await durable.run("What is 2+3?")                           # RunResult, as agent.run()

    run = await durable.start("...", stream=True)    # a DurableRun (a workflow on the task queue)
    async for event in run.events(store): ...        # event dicts from the state store's log, live
    await run.cancel("after_tools", timeout=30)      # the agent's cancel modes
    result = await run.result()                      # at the end, or at an interrupt (stop_reason)
    await run.answer({"call_1": "yes"})              # resume an interrupted run (checked first)

The run executes in whichever worker polls the task queue and serves the agent (by name); the caller
needs nothing of the agent but its name. `client` is a temporalio Client or an address ("host:port").
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..agent.recording import IO_EVENT
from ..agent.result import RunResult
from ..errors import ChainreactError
from .codec import JSON, result_from_dict
from .options import DurableOptions

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from ..state.base import Store

STOP_EVENTS = ("final", "error", "cancelled", "interrupted")
# A model attempt's live text, and the retried attempt's `stream_reset` (activities.STREAM_RESET).
RESET_EVENTS = ("text_delta", "reasoning_delta", "stream_reset")


class DurableRunError(ChainreactError):
    """A durable run failed (the workflow failed): `error_type` names the original error's class."""

    def __init__(self, message: str, *, error_type: str = "", run_id: str = ""):
        super().__init__(message)
        self.error_type = error_type
        self.run_id = run_id


async def connect(address: str, *, namespace: str = "default", wait: float = 30.0) -> Client:
    """A temporalio Client for `address` (host:port). A frontend still starting ("not healthy yet": its
    port is open before it serves) is retried for up to `wait` seconds; other errors raise at once."""
    import asyncio

    from temporalio.client import Client

    loop = asyncio.get_running_loop()
    deadline = loop.time() + wait
    while True:
        try:
            return await Client.connect(address, namespace=namespace)
        except RuntimeError as e:
            if "not healthy yet" not in str(e) or loop.time() >= deadline:
                raise
        await asyncio.sleep(0.2)


class DurableTarget:
    """What DurableAgent, DurableChain and DurableFlow share: the Temporal client (an address is connected
    on first use), the task queue, the options and the namespace."""

    def __init__(self, *, client: Client | str, task_queue: str,
                 options: DurableOptions | None = None, namespace: str = "default"):
        self._client = client
        self.task_queue = task_queue
        self.options = options or DurableOptions()
        self.namespace = namespace

    async def client(self) -> Client:
        if isinstance(self._client, str):
            self._client = await connect(self._client, namespace=self.namespace)
        return self._client

    async def handle(self, workflow_id: str) -> WorkflowHandle[Any, Any]:
        """The temporalio handle of a workflow started earlier (by any process)."""
        return (await self.client()).get_workflow_handle(workflow_id)


class WorkflowRun:
    """A run's workflow handle and id: what the handles of agent and chain runs share."""

    def __init__(self, handle: WorkflowHandle[Any, Any], run_id: str):
        self.handle = handle
        self.run_id = run_id

    async def status(self) -> JSON:
        """What the workflow's `status` query says (each kind of run: its own fields)."""
        out: JSON = await self.handle.query("status")
        return out


class DurableAgent(DurableTarget):
    """An agent run as Temporal workflows on `task_queue` (see the module doc)."""

    def __init__(self, agent: Any, *, client: Client | str, task_queue: str,
                 options: DurableOptions | None = None, namespace: str = "default"):
        super().__init__(client=client, task_queue=task_queue, options=options, namespace=namespace)
        self.name: str = agent if isinstance(agent, str) else agent.name

    async def start(self, input: Any = None, *, stream: bool = False,
                    metadata: Mapping[str, Any] | None = None,
                    session_values: Mapping[str, Any] | None = None,
                    run_id: str | None = None) -> DurableRun:
        """Start a run (a workflow whose id is the run id) and return its handle at once. `stream=True`
        streams the model's text into the worker's state store as it arrives (see `DurableRun.events`)."""
        from .workflow import WORKFLOW

        client = await self.client()
        rid, req = self._request(input, stream, metadata, session_values, run_id)
        handle = await client.start_workflow(WORKFLOW, req, id=rid, task_queue=self.task_queue)
        return DurableRun(handle, rid)

    def _request(self, input: Any, stream: bool, metadata: Mapping[str, Any] | None,
                 session_values: Mapping[str, Any] | None, run_id: str | None) -> tuple[str, JSON]:
        rid = run_id or f"{self.name}-{uuid.uuid4().hex[:16]}"
        return rid, {"agent": self.name, "input": input, "stream": stream, "metadata": dict(metadata or {}),
                     "session_values": dict(session_values) if session_values is not None else None,
                     "options": self.options.to_dict()}

    async def run(self, input: Any = None, *, stream: bool = False,
                  metadata: Mapping[str, Any] | None = None,
                  session_values: Mapping[str, Any] | None = None,
                  run_id: str | None = None) -> RunResult:
        """Start a run and wait until it stops (done, cancelled, or interrupted: answer it with
        `DurableRun.answer` through `self.get(result.metadata["run_id"])`)."""
        from temporalio.client import WithStartWorkflowOperation
        from temporalio.common import WorkflowIDConflictPolicy

        from .workflow import WORKFLOW

        client = await self.client()
        rid, req = self._request(input, stream, metadata, session_values, run_id)
        # One call starts the run and waits for it (update-with-start): the `wait` update reaches the
        # workflow with its first task, so waiting costs no extra workflow task and no second request.
        op: WithStartWorkflowOperation[Any, Any] = WithStartWorkflowOperation(
            WORKFLOW, req, id=rid, task_queue=self.task_queue,
            id_conflict_policy=WorkflowIDConflictPolicy.FAIL)
        try:
            stop = await client.execute_update_with_start_workflow("wait", start_workflow_operation=op,
                                                                   result_type=dict)
        except Exception:  # the run failed (the update cannot complete), or did not start: see below
            stop = None
        run = DurableRun(await op.workflow_handle(), rid)
        return await run.result(stop)

    async def get(self, run_id: str) -> DurableRun:
        """The handle of a run started earlier (by any process)."""
        return DurableRun(await self.handle(run_id), run_id)


class DurableRun(WorkflowRun):
    """One durable run: a workflow handle with the agent's vocabulary."""

    async def result(self, stop: JSON | None = None) -> RunResult:
        """The RunResult once the run stops: at its end, or at an interrupt (`stop_reason` "interrupted",
        `interruption` holding the questions). Raises DurableRunError when the run failed."""
        from temporalio.client import WorkflowFailureError

        if stop is None:
            try:
                stop = await self.handle.execute_update("wait", result_type=dict)
            except Exception:  # the workflow already ended (an update cannot reach it): read its result
                stop = None
        if stop is not None and stop.get("status") != "failed" and stop.get("result"):
            return result_from_dict(stop["result"])
        try:
            out = await self.handle.result()
        except WorkflowFailureError as e:
            raise run_error(e, f"run {self.run_id!r}", self.run_id) from e
        return result_from_dict(out["result"])

    async def cancel(self, mode: str = "immediate", *, timeout: float | None = None) -> None:
        """Stop the run at the first safe point of `mode` (immediate, after_model, after_tools; combine with
        `|`). `immediate` is a Temporal workflow cancellation; the others wait for their safe point, and
        become immediate after `timeout` seconds (a timer in the workflow: the caller may go away)."""
        from ..agent.cancel import CancelMode

        m = CancelMode.parse(mode)  # unknown names fail here, before anything is sent
        if m == CancelMode.IMMEDIATE:
            await self.handle.cancel()
        else:
            await self.handle.signal("cancel", {"mode": mode, "timeout": timeout})

    async def answer(self, answers: Mapping[str, Any]) -> None:
        """Answer an interrupted run's questions (by question id = tool call id); the run goes on.
        Checked in the workflow first: a wrong answer raises and changes nothing."""
        from temporalio.client import WorkflowUpdateFailedError

        try:
            await self.handle.execute_update("answer", dict(answers))
        except WorkflowUpdateFailedError as e:
            why = getattr(e.cause, "message", None) or e.cause
            raise DurableRunError(f"run {self.run_id!r}: answer refused: {why}", run_id=self.run_id) from e

    async def status(self) -> JSON:
        """{"status": starting|running|interrupted|done|failed|cancelled, "questions": [...], "step": n}."""
        return await super().status()

    async def events(self, store: Store, *, after: int = 0, poll: float = 0.05) -> AsyncIterator[JSON]:
        """The run's events (dicts, as `--jsonl` prints them) from `store`'s log, while the run goes on,
        until the run stops (final, error, cancelled or interrupted). The workers must have been started
        with the same store, and the run with `stream=True` for text deltas as they arrive.

        A model call retried after it streamed part of its text (a cut connection, a lost worker) starts
        again with a `stream_reset` event (`attempt`: the new attempt): drop the text and reasoning deltas
        of that step received so far. Deltas of an attempt already superseded are not yielded."""
        # keep: a superseded attempt still writing (e.g. one that timed out) is left out
        async for d in tail_log(store, self.run_id, self.handle, STOP_EVENTS, after=after, poll=poll,
                                keep=StreamAttempts().keep):
            yield d


async def tail_log(store: Store, log_id: str, handle: WorkflowHandle[Any, Any], stop: tuple[str, ...], *,
                   after: int = 0, poll: float = 0.05,
                   keep: Callable[[str, Any], bool] | None = None) -> AsyncIterator[JSON]:
    """The events of log `log_id` in `store` (their data), as the workers append them, until one of type
    in `stop`, or until the workflow behind `handle` has ended and the log has nothing more (a run that
    failed before it could write its last event: Temporal is asked about once a second while the log is
    quiet). `keep(type, data)` False leaves an event out."""
    import asyncio

    from temporalio.client import WorkflowExecutionStatus

    idle = 0.0
    ended = False
    while True:
        batch = await store.events(log_id, after=after, limit=500)
        for ev in batch:
            after = ev.id
            if ev.type == IO_EVENT or (keep is not None and not keep(ev.type, ev.data)):
                continue  # an `io` event is the run's recording (durable/recording.py), not an event of it
            yield ev.data
            if ev.type in stop:
                return
        if batch:
            idle = 0.0
            continue
        if ended:
            return
        await asyncio.sleep(poll)
        idle += poll
        if idle >= 1.0:
            idle = 0.0
            ended = (await handle.describe()).status != WorkflowExecutionStatus.RUNNING


def run_error(e: Any, what: str, run_id: str) -> DurableRunError:
    """A failed workflow (temporalio's WorkflowFailureError `e`) as the caller's DurableRunError: the
    message and type of the error it failed with, not Temporal's wrappers."""
    cause: Any = e.cause
    while getattr(cause, "cause", None) is not None and not getattr(cause, "type", None):
        cause = cause.cause
    return DurableRunError(f"{what} failed: {getattr(cause, 'message', None) or cause}",
                           error_type=getattr(cause, "type", "") or "", run_id=run_id)


class StreamAttempts:
    """Which model attempt of each step streams now, from the event log's live deltas and `stream_reset`
    events: `keep(type, data)` is False for a delta (or reset) of an attempt already superseded. Shared by
    `DurableRun.events()` and the server's durable runs (server/durable_runs.py)."""

    def __init__(self) -> None:
        self.attempts: dict[tuple[Any, ...], int] = {}  # (path, step) -> the model attempt streaming now

    @staticmethod
    def key(data: Mapping[str, Any]) -> tuple[Any, ...]:
        return (tuple(data.get("path") or ()), data.get("step"))

    def keep(self, type: str, data: Any) -> bool:
        if type not in RESET_EVENTS or not isinstance(data, Mapping):
            return True
        key = self.key(data)
        attempt = int(data.get("attempt") or 1)
        if attempt < self.attempts.get(key, 1):
            return False
        self.attempts[key] = attempt
        return True
