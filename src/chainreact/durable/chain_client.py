"""Running a rule chain durably: the caller's side, and the worker's wrapper.

    durable = DurableChain(chain, client=client, task_queue="chains")   # chain: a Chain or its id
    ends = await durable.run(RuleMsg(type="T", data="..."))            # list[End], as engine.run()

    run = await durable.start(msg)          # a DurableChainRun (a workflow on the task queue)
    ends = await run.result()               # run.frames: the Stream frames, after result()
    await run.cancel()                      # every branch cancelled (the node activities in flight too)

    async with durable_chain_worker(client, "chains", ChainHost(engine)):  # or `chainreact worker chain.json`
        ...

The run executes in whichever worker polls the task queue and has the chain loaded (by id).
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import AsyncIterator
from typing import Any

from ..chains.model import End
from ..chains.msg import RuleMsg
from .chain_plan import JSON
from .client import DurableRunError, DurableTarget
from .options import DurableOptions


class DurableChain(DurableTarget):
    """A rule chain run as Temporal workflows on `task_queue` (see the module doc)."""

    def __init__(self, chain: Any, *, client: Any, task_queue: str, options: DurableOptions | None = None,
                 namespace: str = "default", timeout: float | None = None):
        super().__init__(client=client, task_queue=task_queue, options=options, namespace=namespace)
        self.chain_id: str = chain if isinstance(chain, str) else chain.id
        self.timeout = timeout  # the message timeout (seconds); None: the worker engine's

    async def start(self, msg: RuleMsg | str, *, run_id: str | None = None,
                    timeout: float | None = None) -> DurableChainRun:
        """Start a run (a workflow whose id is the run id) and return its handle at once. A string is the
        data of a TEXT message."""
        from .chain_workflow import CHAIN_WORKFLOW

        if isinstance(msg, str):
            msg = RuleMsg(data=msg, data_type="TEXT")
        client = await self.client()
        rid = run_id or f"{self.chain_id}-{uuid.uuid4().hex[:16]}"
        limit = timeout if timeout is not None else self.timeout
        req: JSON = {"chain": self.chain_id, "msg": msg.to_dict(), "timeout": limit,
                     "options": self.options.to_dict()}
        handle = await client.start_workflow(CHAIN_WORKFLOW, req, id=rid, task_queue=self.task_queue)
        return DurableChainRun(handle, rid)

    async def run(self, msg: RuleMsg | str, **kwargs: Any) -> list[End]:
        """Send `msg` through the chain durably; every ended branch, as RuleEngine.run returns them."""
        run = await self.start(msg, **kwargs)
        return await run.result()

    async def get(self, run_id: str) -> DurableChainRun:
        client = await self.client()
        return DurableChainRun(client.get_workflow_handle(run_id), run_id)


class DurableChainRun:
    """One durable chain run: a workflow handle with the engine's vocabulary."""

    def __init__(self, handle: Any, run_id: str):
        self.handle = handle
        self.run_id = run_id
        self.frames: list[RuleMsg] = []  # the Stream frames nobody consumed in the chain, after result()

    async def result(self) -> list[End]:
        """The ended branches once every branch has ended. Raises DurableRunError when the run failed
        (e.g. no worker serves the chain) or was cancelled."""
        from temporalio.client import WorkflowFailureError

        try:
            out = await self.handle.result()
        except WorkflowFailureError as e:
            cause: Any = e.cause
            while getattr(cause, "cause", None) is not None and not getattr(cause, "type", None):
                cause = cause.cause
            raise DurableRunError(f"run {self.run_id!r} failed: {getattr(cause, 'message', None) or cause}",
                                  error_type=getattr(cause, "type", "") or "", run_id=self.run_id) from e
        self.frames = [RuleMsg.from_dict(f) for f in out.get("streams") or ()]
        return [End(e["relation"], RuleMsg.from_dict(e["msg"]), e.get("error"), e.get("nodeId", ""))
                for e in out["ends"]]

    async def cancel(self) -> None:
        await self.handle.cancel()

    async def status(self) -> JSON:
        """{"status": starting|running|done|failed|cancelled, "nodes": node executions started}."""
        out: JSON = await self.handle.query("status")
        return out


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
