"""What a failed activity or child workflow was, from under Temporal's wrappers (workflow code).

Temporal hands a workflow an ActivityError (or ChildWorkflowError) whose `cause` chain ends at the error
the activity raised: an ApplicationError carrying the original error's class name as its `type`, or a
timeout or cancellation. The workflows report that one, never the wrappers.
"""

from __future__ import annotations

import asyncio

from temporalio.exceptions import ActivityError, ApplicationError, ChildWorkflowError
from temporalio.exceptions import CancelledError as TemporalCancelledError


def root(e: BaseException) -> BaseException:
    """The error at the bottom of Temporal's wrapper chain."""
    while isinstance(e, ActivityError | ChildWorkflowError) and e.cause is not None:
        e = e.cause
    return e


def failure(e: BaseException) -> tuple[str, str]:
    """(type, message) of the root error: an activity's ApplicationError gives its `type` (the original
    class name, "" when none) and message."""
    r = root(e)
    if isinstance(r, ApplicationError):
        return r.type or "", r.message
    return type(r).__name__, str(r)


def cause_text(e: BaseException) -> str:
    """The root error's message, without the wrappers' ("activity task failed: ...")."""
    return failure(e)[1]


def cancelled(e: BaseException) -> bool:
    """Whether an activity or child workflow failed because it was cancelled (its run was)."""
    return isinstance(getattr(e, "cause", None), TemporalCancelledError)


def reraise_cancel(e: ActivityError) -> None:
    """An activity cancelled because the run was: the loop must see a cancellation, not a failure."""
    if cancelled(e):
        raise asyncio.CancelledError()
