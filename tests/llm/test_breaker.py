"""The breaker's state machine, driven by an explicit clock."""

from __future__ import annotations

from chainreact.llm.breaker import CircuitBreaker, breaker_states, get_breaker, key_fingerprint


def test_trip_cooldown_probe_success_resets() -> None:
    b = CircuitBreaker("k", 10)
    assert b.acquire(0) == ("primary", None)
    tr = b.failure(False, 0)
    assert tr is not None and (tr.previous, tr.state, tr.cooldown) == ("closed", "open", 10)
    assert b.acquire(9.9)[0] == "skip"
    d, tr = b.acquire(10)
    assert d == "probe" and tr is not None and tr.state == "half_open"
    assert b.acquire(10)[0] == "skip"  # exactly one probe
    tr = b.success(True)
    assert tr is not None and tr.state == "closed" and b.cooldown == 10
    assert b.acquire(11)[0] == "primary"


def test_failed_probes_double_cooldown_capped() -> None:
    b = CircuitBreaker("k", 200)
    b.failure(False, 0)
    now = 0.0
    cooldowns = []
    for _ in range(4):
        now += b.cooldown
        assert b.acquire(now)[0] == "probe"
        tr = b.failure(True, now)
        assert tr is not None
        cooldowns.append(tr.cooldown)
    assert cooldowns == [400, 600, 600, 600]
    now += 600
    assert b.acquire(now)[0] == "probe"
    b.success(True)
    assert b.cooldown == 200 and b.state == "closed"


def test_abandoned_probe_lets_the_next_request_probe() -> None:
    b = CircuitBreaker("k", 10)
    b.failure(False, 0)
    assert b.acquire(10)[0] == "probe"
    b.abandon(True)
    assert b.state == "open" and b.acquire(10.1)[0] == "probe"


def test_late_failure_of_a_request_admitted_before_the_trip_changes_nothing() -> None:
    b = CircuitBreaker("k", 10)
    b.failure(False, 0)
    assert b.failure(False, 5) is None and b.opened_at == 0


def test_registry_is_shared_per_configuration_and_observable() -> None:
    a = get_breaker("http://reg-test/v1/", "m", 30, key="sk-a")
    assert get_breaker("http://reg-test/v1", "m", 30, key="sk-a") is a
    assert get_breaker("http://reg-test/v1", "other", 30, key="sk-a") is not a
    assert get_breaker("http://reg-test/v1", "m", 30, key="sk-b") is not a
    assert get_breaker("http://reg-test/v1", "m", 45, key="sk-a") is not a
    assert get_breaker("http://reg-test/v1", "m", 0, key="sk-a").base_cooldown == 60  # 0 = the default
    a.failure(False, 100)
    st = breaker_states(now=110)[a.key]
    assert st["state"] == "open" and st["retry_in"] == 20 and st["trips"] == 1
    assert "sk-a" not in a.key and key_fingerprint("sk-a") in a.key
