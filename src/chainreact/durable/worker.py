"""A worker: polls a task queue, runs agent workflows and their activities for the agents it serves.

    host = AgentHost([Agent.from_config("calc.json")], store=store)   # store: optional, for event logs
    async with durable_worker(client, "agents", host):
        ...                                                             # the worker polls meanwhile
    async with durable_worker(client, "flows", AgentHost(), flows=FlowHost([flow])):   # chat-flow turns

Several workers on one task queue share the work; each must serve the same agents (same names). The
workflow code is chainreact's own loop, deterministic by construction, and runs without Temporal's
sandbox: the sandbox would pass chainreact through unchecked anyway, and it costs about a tenth of the
worker's CPU per run. `sandboxed=True` (or CHAINREACT_SANDBOX=1) turns it on, chainreact passed through.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from .activities import AgentActivities
from .hosts import HOSTS, AgentHost
from .workflow import AgentWorkflow

if TYPE_CHECKING:
    from .hosts import FlowHost

PASSTHROUGH = ("chainreact", "orjson", "pydantic", "pydantic_core", "httpx", "anyio", "yaml")


def make_worker(client: Any, task_queue: str, host: AgentHost, *, max_concurrent_activities: int = 200,
                max_concurrent_workflow_tasks: int = 200, sticky_timeout: float = 5.0,
                extra_workflows: tuple[Any, ...] = (), extra_activities: tuple[Any, ...] = (),
                flows: FlowHost | None = None,
                sandboxed: bool = os.environ.get("CHAINREACT_SANDBOX", "") not in ("", "0")) -> Any:
    """A temporalio Worker for `host`'s agents (and `flows`' turns) on `task_queue` (not started: `async
    with` or `run()`)."""
    from temporalio.worker import UnsandboxedWorkflowRunner, Worker
    from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

    if flows is not None:
        from .flow_activities import FlowActivities
        from .flow_node_activities import NodeActivities
        from .flow_workflow import FlowTurnWorkflow

        extra_workflows = (FlowTurnWorkflow, *extra_workflows)
        extra_activities = (*FlowActivities(flows).activities(), *NodeActivities(flows).activities(),
                            *extra_activities)
    HOSTS[task_queue] = host  # the workflow code's loop-hook middleware (one host per queue and process)
    runner: Any = UnsandboxedWorkflowRunner()
    if sandboxed:
        runner = SandboxedWorkflowRunner(
            restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH))
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[AgentWorkflow, *extra_workflows],
        activities=[*AgentActivities(host).activities(), *extra_activities],
        workflow_runner=runner,
        max_concurrent_activities=max_concurrent_activities,
        max_concurrent_workflow_tasks=max_concurrent_workflow_tasks,
        # A worker that dies holds its runs' cached state; other workers take them over after this.
        sticky_queue_schedule_to_start_timeout=timedelta(seconds=sticky_timeout),
    )


@contextlib.asynccontextmanager
async def durable_worker(client: Any, task_queue: str, host: AgentHost, **kwargs: Any) -> AsyncIterator[Any]:
    """Run a worker in the background for the duration of the block; closes the host's agents (and
    flows) after."""
    worker = make_worker(client, task_queue, host, **kwargs)
    try:
        async with worker:
            yield worker
    finally:
        if HOSTS.get(task_queue) is host:
            del HOSTS[task_queue]
        await host.aclose()
        if kwargs.get("flows") is not None:
            await kwargs["flows"].aclose()
