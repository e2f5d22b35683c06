"""`chainreact run --temporal` waiting for a worker: never silent (issue 25).

A durable run is a workflow on a task queue; with no `chainreact worker` polling that queue it waits there
without a word. The command asks Temporal who polls the queue (DescribeTaskQueue's pollers) a few seconds
after the start and says so when nobody does, then keeps waiting (a worker started later takes the run),
or gives up when no worker took the run within `--wait SECONDS` (exit 5; the run stays queued).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from .common import EXIT_NOT_DONE, write

FIRST_CHECK = 2.0  # seconds after the start: a worker that polls takes a new run well within this
RECHECK = 2.0
# A poller is listed for minutes after its worker stopped; a live one polls again at least this often
# (Temporal's long poll lasts about a minute).
LIVE_POLL = 90.0


async def live_pollers(client: Any, task_queue: str) -> int:
    """How many workers polled `task_queue` for workflow tasks lately."""
    from temporalio.api.enums.v1 import TaskQueueType
    from temporalio.api.taskqueue.v1 import TaskQueue
    from temporalio.api.workflowservice.v1 import DescribeTaskQueueRequest

    resp = await client.workflow_service.describe_task_queue(DescribeTaskQueueRequest(
        namespace=client.namespace, task_queue=TaskQueue(name=task_queue),
        task_queue_type=TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW))
    now = time.time()
    return sum(1 for p in resp.pollers
               if not p.HasField("last_access_time") or now - p.last_access_time.ToSeconds() < LIVE_POLL)


def _worker_came(args: argparse.Namespace, run_id: str) -> None:
    write(f"a worker polls task queue {args.task_queue!r} now: run {run_id} goes on\n", sys.stderr)


async def warn_while_no_worker(client: Any, args: argparse.Namespace, run_id: str,
                               waiting: list[bool] | None = None) -> None:
    """Say on stderr when no worker polls the run's task queue (and when one comes). `waiting[0]` is True
    while the "no worker" line stands unanswered (follow() says the worker came if the run ends first)."""
    await asyncio.sleep(FIRST_CHECK)
    said = False
    waiting = waiting if waiting is not None else [False]
    while True:
        try:
            n = await live_pollers(client, args.task_queue)
        except Exception as e:  # asking is a courtesy: never fail the run over it
            write(f"warning: could not ask Temporal who polls task queue {args.task_queue!r}: {e}\n",
                  sys.stderr)
            return
        if n and said:
            waiting[0] = False
            _worker_came(args, run_id)
        if n:
            return
        if not said:
            give_up = (f"for one up to --wait {args.wait:g} s" if args.wait else
                       "until one does (Ctrl-C stops waiting; the run stays queued)")
            write(f"waiting: no worker polls task queue {args.task_queue!r} at {args.temporal}: run {run_id} "
                  f"is queued until one starts, e.g. `chainreact worker {args.config} --temporal "
                  f"{args.temporal} --task-queue {args.task_queue}`; waiting {give_up}\n", sys.stderr)
            said = waiting[0] = True
        await asyncio.sleep(RECHECK)


async def taken_within(handle: Any, seconds: float) -> bool:
    """Whether a worker took the run (its first workflow task started) within `seconds`. Short requests in a
    loop: nothing to cancel when the time is up."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while True:
        d = await handle.describe()
        if d.history_length > 2 or d.close_time is not None:  # started, scheduled, then a worker's start
            return True
        left = deadline - loop.time()
        if left <= 0:
            return False
        await asyncio.sleep(min(0.5, left))


async def follow(client: Any, args: argparse.Namespace, run: Any, work: Callable[[], Awaitable[int]]) -> int:
    """`work()` (following the run to its end), with the worker watch beside it; with `--wait`, only once a
    worker took the run within that many seconds."""
    waiting = [False]
    watch = asyncio.create_task(warn_while_no_worker(client, args, run.run_id, waiting))
    try:
        if args.wait and not await taken_within(run.handle, args.wait):
            ns = "" if args.namespace == "default" else f" --namespace {args.namespace}"
            write(f"error: no worker took run {run.run_id} within --wait {args.wait:g} s; it stays queued on "
                  f"task queue {args.task_queue!r} and a worker started later runs it: see `chainreact "
                  f"durable status {run.run_id} --temporal {args.temporal}{ns}` (or `durable cancel`)\n",
                  sys.stderr)
            return EXIT_NOT_DONE
        code = await work()
        if waiting[0]:  # a worker came and ended the run between two checks: say so still
            watch.cancel()
            waiting[0] = False
            _worker_came(args, run.run_id)
        return code
    finally:
        watch.cancel()
