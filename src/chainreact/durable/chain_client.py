"""Running a rule chain durably: the caller's side, and the worker's wrapper.

    durable = DurableChain(chain, client=client, task_queue="chains")   # chain: a Chain or its id
    ends = await durable.run(RuleMsg(type="T", data="..."))            # list[End], as engine.run()

    run = await durable.start(msg)          # a DurableChainRun (a workflow on the task queue)
    ends = await run.result()               # run.frames: the Stream frames, after result()

    run = await durable.start(msg, stream=True)   # the workers log the Stream frames as they come
    async for frame in run.stream(store): ...     # every frame (RuleMsg), live, from the workers' store
    ends = await run.result()
    await run.cancel()                      # every branch cancelled (the node activities in flight too)

    async with durable_chain_worker(client, "chains", ChainHost(engine)):  # or `chainreact worker chain.json`
        ...

The run executes in whichever worker polls the task queue and has the chain loaded (by id).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import uuid
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

from ..chains.model import End
from ..chains.msg import RuleMsg
from .chain_plan import FRAME_EVENT, JSON, frames_log
from .client import DurableRunError, DurableTarget, WorkflowRun, run_error
from .options import DurableOptions

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from ..state.base import Store

log = logging.getLogger("chainreact.durable")

CANCELLED = "CancelledError"  # DurableRunError.error_type of a run cancelled (by anyone)


class DurableChain(DurableTarget):
    """A rule chain run as Temporal workflows on `task_queue` (see the module doc)."""

    def __init__(self, chain: Any, *, client: Client | str, task_queue: str,
                 options: DurableOptions | None = None, namespace: str = "default",
                 timeout: float | None = None):
        super().__init__(client=client, task_queue=task_queue, options=options, namespace=namespace)
        self.chain_id: str = chain if isinstance(chain, str) else chain.id
        self.timeout = timeout  # the message timeout (seconds); None: the worker engine's

    async def start(self, msg: RuleMsg | str, *, run_id: str | None = None, timeout: float | None = None,
                    stream: bool = False, record: bool = False, trace: bool = False) -> DurableChainRun:
        """Start a run (a workflow whose id is the run id) and return its handle at once. A string is the
        data of a TEXT message. `stream`: the workers append the Stream frames to their state store's log
        as the nodes tell them (read them with `DurableChainRun.stream`), instead of returning them with
        the result. `record`: `run_id` has a run record in the workers' store (the runs API's), whose end
        the workflow writes when no server follows the run any more (chain_end.py). `trace` (with
        `stream`): the run's timeline is logged too (every node's IN/OUT, its streaming agent nodes' model
        calls...: chains/trace.py), read with `DurableChainRun.stream(on_trace=)`."""
        from .chain_workflow import CHAIN_WORKFLOW

        if isinstance(msg, str):
            msg = RuleMsg(data=msg, data_type="TEXT")
        client = await self.client()
        rid = run_id or f"{self.chain_id}-{uuid.uuid4().hex[:16]}"
        limit = timeout if timeout is not None else self.timeout
        req: JSON = {"chain": self.chain_id, "msg": msg.to_dict(), "timeout": limit,
                     "options": self.options.to_dict(), "stream": stream, "record": record, "trace": trace}
        handle = await client.start_workflow(CHAIN_WORKFLOW, req, id=rid, task_queue=self.task_queue)
        return DurableChainRun(handle, rid)

    async def run(self, msg: RuleMsg | str, **kwargs: Any) -> list[End]:
        """Send `msg` through the chain durably; every ended branch, as RuleEngine.run returns them."""
        run = await self.start(msg, **kwargs)
        return await run.result()

    async def get(self, run_id: str) -> DurableChainRun:
        return DurableChainRun(await self.handle(run_id), run_id)


class DurableChainRun(WorkflowRun):
    """One durable chain run: a workflow handle with the engine's vocabulary."""

    def __init__(self, handle: WorkflowHandle[Any, Any], run_id: str):
        super().__init__(handle, run_id)
        # The Stream frames nobody consumed in the chain, after result(); of a run started with `stream`,
        # only those its workers did not log (a worker without a state store).
        self.frames: list[RuleMsg] = []
        self._ends: list[End] | None = None

    async def result(self) -> list[End]:
        """The ended branches once every branch has ended. Raises DurableRunError when the run failed
        (e.g. no worker serves the chain) or was cancelled (`error_type` CANCELLED)."""
        from temporalio.client import WorkflowFailureError
        from temporalio.exceptions import CancelledError

        if self._ends is not None:
            return list(self._ends)
        try:
            out = await self.handle.result()
        except WorkflowFailureError as e:
            cause: Any = e.cause
            if isinstance(cause, CancelledError):
                raise DurableRunError(f"run {self.run_id!r} was cancelled", error_type=CANCELLED,
                                      run_id=self.run_id) from e
            raise run_error(e, f"run {self.run_id!r}", self.run_id) from e
        self.frames = [RuleMsg.from_dict(f) for f in out.get("streams") or ()]
        self._ends = [End(e["relation"], RuleMsg.from_dict(e["msg"]), e.get("error"), e.get("nodeId", ""))
                      for e in out["ends"]]
        return list(self._ends)

    async def stream(self, store: Store, *, poll: float = 0.05,
                     on_trace: Callable[[JSON], Any] | None = None) -> AsyncIterator[RuleMsg]:
        """Every Stream frame of a run started with `stream=True`, in order, as the workers log them in
        `store` (the workers' state store), then the frames that came with the result (from workers without
        a store). Ends with the run;
        then `result()` has the ends. A failed or cancelled run raises DurableRunError after its frames.
        `on_trace` gets the timeline's events of a run started with `trace`, in the log's order."""
        log = frames_log(self.run_id)
        outcome = asyncio.ensure_future(self.result())
        after, settled = 0, False
        retried = RetriedFrames()
        try:
            while True:
                batch = await store.events(log, after=after, limit=500)
                for ev in batch:
                    after = ev.id
                    if not isinstance(ev.data, dict):
                        continue
                    if ev.type != FRAME_EVENT:
                        if on_trace is not None:
                            on_trace(ev.data)
                    elif retried.keep(ev.data):
                        yield RuleMsg.from_dict(ev.data["msg"])
                if batch:
                    continue
                if settled:
                    break
                if outcome.done():
                    settled = True  # the run's last activity logged its frames before it completed
                    continue
                await asyncio.wait((outcome,), timeout=poll)
        finally:
            if not outcome.done():
                outcome.cancel()
        if after:  # the log is a record of the store too (appending made it): not `running` forever
            await self._close_log(store, log, outcome.exception())
        await outcome
        for frame in self.frames:
            yield frame

    async def _close_log(self, store: Store, log_id: str, error: BaseException | None) -> None:
        status = "done" if error is None else \
            "cancelled" if getattr(error, "error_type", "") == CANCELLED else "failed"
        try:
            await store.save_run(log_id, {"frames_of": self.run_id}, status=status)
        except Exception as e:  # the frames were read; only the log's own status is left as it was
            log.warning("chain run %s: cannot mark its frames log %s: %s", self.run_id, status, e)

    async def cancel(self) -> None:
        """Cancel every branch at once (the node activities in flight and agent nodes' child runs too)."""
        await self.handle.cancel()

    async def status(self) -> JSON:
        """{"status": starting|running|done|failed|cancelled, "nodes": node executions started}."""
        return await super().status()


class RetriedFrames:
    """The live frames of node activities that may be retried (a lost worker: the node runs again and
    streams again). A reader cannot take frames back, so the retried attempt's frames are given only past
    those already given that it repeats (the usual case: the same model call again); frames of an attempt
    already superseded (one that timed out but still writes) are dropped."""

    def __init__(self) -> None:
        self.attempt: dict[str, int] = {}  # node activity -> the attempt streaming now
        self.shown: dict[str, list[Any]] = {}  # ... -> the frames given so far
        self.replay: dict[str, int] = {}  # ... -> how many of them the retried attempt has repeated

    def keep(self, data: JSON) -> bool:
        key = str(data.get("key") or "")
        if not key:
            return True
        attempt = int(data.get("attempt") or 1)
        current = self.attempt.setdefault(key, attempt)
        if attempt < current:
            return False
        shown = self.shown.setdefault(key, [])
        if attempt > current:
            self.attempt[key] = attempt
            self.replay[key] = 0
        m = data.get("msg") or {}
        frame = (m.get("data"), m.get("metadata"))
        pos = self.replay.get(key)
        if pos is not None:
            if pos < len(shown) and shown[pos] == frame:
                self.replay[key] = pos + 1
                return False
            del self.replay[key]  # past what was given (or departing from it): from here on, given
        shown.append(frame)
        return True


def chain_worker_extras(host: Any) -> dict[str, tuple[Any, ...]]:
    """`make_worker` / `durable_worker` keyword arguments that add the chain workflow and activities."""
    from .chain_activities import ChainActivities
    from .chain_workflow import ChainWorkflow

    return {"extra_workflows": (ChainWorkflow,),
            "extra_activities": tuple(ChainActivities(host).activities())}


@contextlib.asynccontextmanager
async def durable_chain_worker(client: Any, task_queue: str, host: Any,
                               **kwargs: Any) -> AsyncIterator[Any]:
    """`durable_worker` for a ChainHost: serves its chains (and its agents) on `task_queue`."""
    from .worker import durable_worker

    async with durable_worker(client, task_queue, host, **chain_worker_extras(host), **kwargs) as worker:
        yield worker
