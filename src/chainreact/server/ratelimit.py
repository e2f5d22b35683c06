"""Per-key rate limits: a token bucket per API key (or per client address when no keys are configured).

A rate is "N/period" with period second|minute|hour|day (also s, sec, m, min, h, hr, d), or "unlimited".
A bucket holds up to N requests and refills at N per period, so a key may burst N requests and then
goes at the steady rate. A refused request gets 429 with `Retry-After` (whole seconds until the next
request is allowed), in OpenAI's error shape on /v1 (the response is made in server/ops.py).

Where the rate comes from: the key's `rateLimit` in the keys file, else the server default
(`--rate-limit`), else none. Without a keys file the default applies per client address.
Time comes from `clock` (monotonic seconds), so tests drive it without sleeping.
"""

from __future__ import annotations

import math
import re
import time
from collections.abc import Callable
from dataclasses import dataclass

from starlette.requests import Request

from ..errors import ConfigError

_PERIODS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0,
            "h": 3600.0, "hr": 3600.0, "hour": 3600.0, "d": 86400.0, "day": 86400.0}
_RATE = re.compile(r"^\s*(\d+)\s*/\s*([a-z]+?)s?\s*$")
MAX_BUCKETS = 10_000  # past this, full (idle) buckets are dropped: addresses must not grow memory for ever


@dataclass(frozen=True, slots=True)
class Rate:
    count: int  # 0 = unlimited
    period: float  # seconds

    def __str__(self) -> str:
        return "unlimited" if self.count == 0 else f"{self.count}/{self.period:g}s"


UNLIMITED = Rate(0, 1.0)


def parse_rate(text: object, where: str = "rate limit") -> Rate:
    """'60/minute' -> Rate(60, 60.0); 'unlimited' -> UNLIMITED. ConfigError names `where` otherwise."""
    if isinstance(text, str) and text.strip().lower() in ("unlimited", "none", "off"):
        return UNLIMITED
    m = _RATE.match(text.lower()) if isinstance(text, str) else None
    period = _PERIODS.get(m.group(2)) if m else None
    if m is None or period is None or int(m.group(1)) < 1:
        raise ConfigError(f"{where}: expected 'N/second', 'N/minute', 'N/hour', 'N/day' (N >= 1) or "
                          f"'unlimited', got {text!r}")
    return Rate(int(m.group(1)), period)


class _Bucket:
    __slots__ = ("stamp", "tokens")

    def __init__(self, tokens: float, stamp: float):
        self.tokens = tokens
        self.stamp = stamp


class RateLimiter:
    def __init__(self, default: Rate | None = None, *, clock: Callable[[], float] = time.monotonic):
        self.default = default
        self.clock = clock
        self._buckets: dict[str, _Bucket] = {}

    def __len__(self) -> int:
        """How many callers' buckets are held (past MAX_BUCKETS, idle full ones are dropped first)."""
        return len(self._buckets)

    def take(self, who: str, rate: Rate) -> float:
        """Take one request from `who`'s bucket: 0.0 if allowed, else the seconds until one is."""
        now = self.clock()
        per_second = rate.count / rate.period
        b = self._buckets.get(who)
        if b is None:
            if len(self._buckets) >= MAX_BUCKETS:
                self._prune(now)
            b = self._buckets[who] = _Bucket(float(rate.count), now)
        else:
            b.tokens = min(float(rate.count), b.tokens + (now - b.stamp) * per_second)
            b.stamp = now
        if b.tokens >= 1.0:
            b.tokens -= 1.0
            return 0.0
        return (1.0 - b.tokens) / per_second

    def _prune(self, now: float) -> None:
        # A bucket that would be full by now carries no state worth keeping.
        for who, b in list(self._buckets.items()):
            if now - b.stamp > 86400.0 or (b.tokens >= 1.0 and now - b.stamp > 60.0):
                del self._buckets[who]

    def refuse(self, request: Request) -> tuple[Rate, int] | None:
        """None to let the request go on; else its rate and the seconds to wait (for Retry-After)."""
        key = getattr(request.state, "key", None)
        if key is not None:
            rate, who = key.rate_limit or self.default, f"key:{key.name}"
        else:
            rate, who = self.default, f"addr:{request.client.host if request.client else '?'}"
        if rate is None or rate.count == 0:
            return None
        wait = self.take(who, rate)
        return None if wait == 0.0 else (rate, max(1, math.ceil(wait)))
