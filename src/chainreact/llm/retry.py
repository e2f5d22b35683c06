"""Retries of one endpoint: backoff with jitter, Retry-After, and the two streaming retry modes.

streamRetryMode "off": items go to the caller as they arrive; a failure is retried only inside the
probe window, i.e. before the first item (text, reasoning or tool-call delta) reached the caller: the
HTTP status and headers, keep-alive comments and role-only/empty deltas. After that a failure is raised
(the caller already showed part of the answer; replaying would duplicate it).
streamRetryMode "full": the whole attempt is buffered and released only once it completed, so a failure
mid-stream is retried (and may fail over) invisibly, at the price of no real-time output.
Each retry is reported (`report`) and followed by a `Reported` item before the wait, so that the caller
hands the event on when the failure happens.
"""

from __future__ import annotations

import logging
import random
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace

from chainreact.errors import ModelError
from chainreact.types import REPORTED, ClientEvent, ModelResponse, RetryEvent, StreamItem

from .request import ModelRequest

log = logging.getLogger("chainreact.llm")

ModelFn = Callable[[ModelRequest], AsyncIterator[StreamItem]]
Sleep = Callable[[float], Awaitable[None]]
Report = Callable[[ClientEvent], None]


@dataclass(slots=True)
class RetryPolicy:
    """Backoff: attempt n waits base_delay * 2**(n-1), capped at max_delay, minus up to `jitter` of it
    at random (so clients that failed together do not retry together). A Retry-After (or retry-after-ms)
    from the provider replaces the computed delay, capped at max_retry_after."""

    base_delay: float = 0.5
    max_delay: float = 20.0
    max_retry_after: float = 60.0
    jitter: float = 0.5

    def delay(self, attempt: int, err: ModelError, rng: Callable[[], float]) -> float:
        if err.retry_after is not None:
            return min(max(err.retry_after, 0.0), self.max_retry_after)
        d = min(self.max_delay, self.base_delay * (2 ** (attempt - 1)))
        return d * (1.0 - self.jitter * rng())


def _interrupted(e: ModelError, items: int) -> ModelError:
    msg = (f"{e} (the stream failed after {items} item(s) were delivered; streamRetryMode 'off' retries "
           "only before the first chunk: set streamRetryMode to 'full' to retry mid-stream failures)")
    out = type(e)(msg, status=e.status, endpoint=e.endpoint, retryable=False, body=e.body)
    out.__cause__ = e
    return out


def _out_of_time(e: ModelError, why: str) -> ModelError:
    out = type(e)(f"{e} ({why})", status=e.status, endpoint=e.endpoint, retryable=e.retryable,
                  retry_after=e.retry_after, body=e.body)
    out.__cause__ = e
    return out


async def with_retries(
    fn: ModelFn,
    req: ModelRequest,
    *,
    max_retries: int,
    mode: str = "off",
    policy: RetryPolicy | None = None,
    sleep: Sleep,
    rng: Callable[[], float] = random.random,
    report: Report | None = None,
    should_retry: Callable[[ModelError], bool] | None = None,
    deadline: float | None = None,
    clock: Callable[[], float] | None = None,
) -> AsyncGenerator[StreamItem, None]:
    """Run `fn` (one attempt) up to 1 + max_retries times; yield its items per the stream retry mode.

    should_retry(error) replaces the default decision (`error.retryable`) for each failed attempt.
    deadline (read from `clock`) bounds every attempt (`req.timeout`) and the waits: a wait that would
    end past it (a long Retry-After) fails at once instead of sleeping."""
    policy = policy or RetryPolicy()
    buffered = mode == "full" and req.stream
    attempt = 0
    while True:
        attempt += 1
        r = req if attempt == 1 else replace(req, attempt=attempt)
        if deadline is not None and clock is not None and attempt > 1:
            r.timeout = max(0.0, deadline - clock())
        delivered = 0
        buf: list[StreamItem] = []
        response: ModelResponse | None = None
        try:
            async for item in fn(r):
                if isinstance(item, ModelResponse):
                    # Keep iterating to the end, so wrap_model middleware runs its code after the stream
                    # (timing, logging) before the caller sees the response.
                    response = item
                    continue
                if response is not None:
                    continue
                if buffered:
                    buf.append(item)
                else:
                    delivered += 1
                    yield item
            if response is not None:
                for b in buf:
                    yield b
                yield response
                return
            raise ModelError(f"{req.endpoint}: the model call ended without a response (a wrap_model "
                             "middleware returned no ModelResponse?)", endpoint=req.endpoint)
        except ModelError as e:
            if delivered:
                raise _interrupted(e, delivered) from e
            retry = e.retryable if should_retry is None else should_retry(e)
            if not retry or attempt > max_retries:
                raise
            delay = policy.delay(attempt, e, rng)
            if deadline is not None and clock is not None:
                left = deadline - clock()
                if e.retry_after is not None and e.retry_after >= left:
                    raise _out_of_time(e, f"Retry-After {e.retry_after:g}s is beyond the {max(left, 0):.3g}s "
                                          "left of timeouts.total: not waiting") from e
                if delay >= left:
                    raise _out_of_time(e, "no time left in timeouts.total for another attempt") from e
            log.warning("model endpoint %s: attempt %d/%d failed: %s; retrying in %.2fs",
                        req.endpoint, attempt, max_retries + 1, e, delay)
            if report is not None:
                report(RetryEvent(endpoint=req.endpoint, attempt=attempt, delay=delay, error=str(e),
                                  status=e.status, error_type=type(e).__name__))
                yield REPORTED  # the caller passes the event on now, not after the wait and the next attempt
            await sleep(delay)
