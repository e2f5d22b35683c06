"""The rate limiter's memory is bounded: past MAX_BUCKETS callers, the buckets of idle callers are dropped,
never the state of a caller still limited (issue 22: mutations of the cap survived the suite)."""

from __future__ import annotations

from chainreact.server.ratelimit import MAX_BUCKETS, Rate, RateLimiter

from .test_ops_http import Clock


def test_past_the_cap_idle_buckets_are_dropped_and_a_limited_caller_stays_limited() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    hourly = Rate(1, 3600.0)
    assert limiter.take("spent", hourly) == 0.0 and limiter.take("spent", hourly) > 0  # used up for an hour
    many = Rate(100, 60.0)
    for i in range(MAX_BUCKETS - 1):  # a flood of addresses, each making one request
        assert limiter.take(f"addr:{i}", many) == 0.0
    assert len(limiter) == MAX_BUCKETS
    clock.now += 61  # the flood's buckets are idle and (nearly) full: nothing worth keeping
    assert limiter.take("newcomer", many) == 0.0
    assert len(limiter) == 2  # "spent" and "newcomer"
    assert limiter.take("spent", hourly) > 3000  # still limited: the flood did not reset it


def test_below_the_cap_nothing_is_dropped() -> None:
    clock = Clock()
    limiter = RateLimiter(clock=clock)
    rate = Rate(5, 60.0)
    for i in range(100):
        limiter.take(f"addr:{i}", rate)
    clock.now += 3600
    limiter.take("late", rate)
    assert len(limiter) == 101
