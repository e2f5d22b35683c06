"""How an agent document's retries and timeouts become Temporal activity options.

The mapping (docs/durable.md, "Retries and timeouts"):

- model call: one activity. Its retry policy takes the document's `maxRetries` (attempts = maxRetries + 1,
  -1 = one attempt) and the client's backoff (0.5 s doubling, capped at 20 s); a provider's Retry-After
  becomes the next retry's delay; an error the client calls non-retryable (400, 401...) is not retried.
  Inside one attempt the client makes one HTTP attempt per endpoint: failover and the circuit breaker
  still run in the worker. `timeouts.total` (per endpoint) bounds one attempt: start-to-close is
  total x endpoints + a margin.
- tool call: one activity. A tool failure is a result for the model (never an activity failure), so
  retries only cover a lost worker or a timed-out attempt (`tool_attempts`, default 3). A tool's
  `timeout` bounds its call inside the activity (the loop's own rule); start-to-close adds a margin.
- every activity heartbeats; a worker that dies is noticed after `heartbeat_timeout` and the activity
  runs again on another worker (at least once for the call that was in flight; completed calls are in the
  history and never run again).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta
from typing import Any

MARGIN = 30.0  # seconds on top of the document's own bounds (scheduling, event publishing)


@dataclass(frozen=True, slots=True)
class DurableOptions:
    """Options of the durable layer (the document gives the rest). Seconds unless named otherwise."""

    heartbeat_timeout: float = 30.0  # a dead worker's activity is retried after this
    tool_attempts: int = 3  # attempts of a tool activity (lost worker, timeout)
    tool_timeout: float = 3600.0  # start-to-close of a tool activity whose tool has no timeout
    plan_timeout: float = 120.0  # resolving the agent in the worker (MCP servers may connect)
    initial_interval: float = 0.5  # retry backoff of the model activity (the client's RetryPolicy)
    max_interval: float = 20.0

    def to_dict(self) -> dict[str, Any]:
        return {"heartbeat_timeout": self.heartbeat_timeout, "tool_attempts": self.tool_attempts,
                "tool_timeout": self.tool_timeout, "plan_timeout": self.plan_timeout,
                "initial_interval": self.initial_interval, "max_interval": self.max_interval}

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> DurableOptions:
        return cls(**(d or {}))


def model_activity_options(model: dict[str, Any], opts: DurableOptions) -> dict[str, Any]:
    """`workflow.execute_activity` keyword arguments for a model call (`model`: the plan snapshot's)."""
    from temporalio.common import RetryPolicy

    attempts = max(1, int(model.get("retries", 3)) + 1)
    per_attempt = float(model.get("total", 600.0)) * max(1, int(model.get("endpoints", 1))) + MARGIN
    return {
        "cancellation_type": _wait_cancelled(),
        "start_to_close_timeout": timedelta(seconds=per_attempt),
        "heartbeat_timeout": timedelta(seconds=opts.heartbeat_timeout),
        "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=opts.initial_interval),
                                    backoff_coefficient=2.0,
                                    maximum_interval=timedelta(seconds=opts.max_interval),
                                    maximum_attempts=attempts),
    }


def _wait_cancelled() -> Any:
    """An immediate cancel returns once the call in flight has really stopped (as in process)."""
    from temporalio.workflow import ActivityCancellationType

    return ActivityCancellationType.WAIT_CANCELLATION_COMPLETED


def tool_activity_options(timeout: float | None, opts: DurableOptions) -> dict[str, Any]:
    from temporalio.common import RetryPolicy

    limit = (timeout + MARGIN) if timeout else opts.tool_timeout
    return {
        "cancellation_type": _wait_cancelled(),
        "start_to_close_timeout": timedelta(seconds=limit),
        "heartbeat_timeout": timedelta(seconds=opts.heartbeat_timeout),
        "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=opts.initial_interval),
                                    maximum_attempts=max(1, opts.tool_attempts)),
    }


def plain_activity_options(seconds: float, opts: DurableOptions, attempts: int = 5) -> dict[str, Any]:
    from temporalio.common import RetryPolicy

    return {
        "start_to_close_timeout": timedelta(seconds=seconds),
        "retry_policy": RetryPolicy(initial_interval=timedelta(seconds=opts.initial_interval),
                                    maximum_attempts=attempts),
    }
