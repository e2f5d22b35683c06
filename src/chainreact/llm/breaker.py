"""The primary endpoint's circuit breaker, one per agent configuration, shared process-wide.

Keyed by (url, model, a fingerprint of the key, base cooldown): clients built from equal configurations
(an agent created per request) share one breaker, so its state survives them; an agent whose key the
endpoint refuses (401) trips only its own breaker, never that of agents with valid keys; and each
configuration keeps its own `circuitCooldownSec`. The key itself is never stored, only a short SHA-256
fingerprint (it appears in `breaker_states()`).

closed --(retries exhausted / 401 / 403)--> open --(cooldown elapsed, one request)--> half_open
half_open --(probe succeeds)--> closed (cooldown reset to the base)
half_open --(probe fails)--> open with the cooldown doubled (capped at 600 s)

While open, and while the single half-open probe is in flight, requests go straight to the backups.
Time comes from the caller (`now`), so tests drive it with a fake clock and never sleep.
A thread lock guards state: agents may run in several event loops of one process.
"""

from __future__ import annotations

import hashlib
import threading
from dataclasses import dataclass
from typing import Literal

CLOSED, OPEN, HALF_OPEN = "closed", "open", "half_open"
MAX_COOLDOWN = 600.0
DEFAULT_COOLDOWN = 60.0

Decision = Literal["primary", "probe", "skip"]


@dataclass(frozen=True, slots=True)
class Transition:
    previous: str
    state: str
    cooldown: float


class CircuitBreaker:
    def __init__(self, key: str, base_cooldown: float = DEFAULT_COOLDOWN) -> None:
        self.key = key
        self.base_cooldown = base_cooldown or DEFAULT_COOLDOWN
        self.cooldown = self.base_cooldown
        self.state = CLOSED
        self.opened_at = 0.0
        self.trips = 0
        self._probing = False
        self._lock = threading.Lock()

    def _cap(self) -> float:
        return max(MAX_COOLDOWN, self.base_cooldown)

    def acquire(self, now: float) -> tuple[Decision, Transition | None]:
        """How this request treats the primary: use it, be the one half-open probe, or skip it."""
        with self._lock:
            if self.state == CLOSED:
                return "primary", None
            if self.state == OPEN and now - self.opened_at >= self.cooldown and not self._probing:
                self.state = HALF_OPEN
                self._probing = True
                return "probe", Transition(OPEN, HALF_OPEN, self.cooldown)
            return "skip", None

    def success(self, probe: bool) -> Transition | None:
        with self._lock:
            if probe and self.state == HALF_OPEN:
                self._probing = False
                self.state = CLOSED
                self.cooldown = self.base_cooldown
                return Transition(HALF_OPEN, CLOSED, self.cooldown)
            return None

    def failure(self, probe: bool, now: float) -> Transition | None:
        with self._lock:
            if probe and self.state == HALF_OPEN:
                self._probing = False
                self.state = OPEN
                self.opened_at = now
                self.cooldown = min(self.cooldown * 2, self._cap())
                self.trips += 1
                return Transition(HALF_OPEN, OPEN, self.cooldown)
            if self.state == CLOSED:
                self.state = OPEN
                self.opened_at = now
                self.cooldown = self.base_cooldown
                self.trips += 1
                return Transition(CLOSED, OPEN, self.cooldown)
            return None  # a request admitted before the trip failing late: already open

    def abandon(self, probe: bool) -> Transition | None:
        """The probe ended without a verdict (cancelled, or a request-specific 4xx): back to open with
        the cooldown already elapsed, so the next request probes again."""
        with self._lock:
            if probe and self.state == HALF_OPEN:
                self._probing = False
                self.state = OPEN
                self.opened_at = -1e18
                return Transition(HALF_OPEN, OPEN, self.cooldown)
            return None

    def snapshot(self, now: float | None = None) -> dict[str, object]:
        with self._lock:
            out: dict[str, object] = {"key": self.key, "state": self.state, "cooldown": self.cooldown,
                                      "trips": self.trips, "probing": self._probing}
            if now is not None and self.state == OPEN:
                out["retry_in"] = max(0.0, self.opened_at + self.cooldown - now)
            return out


_REGISTRY: dict[tuple[str, str, str, float], CircuitBreaker] = {}
_REGISTRY_LOCK = threading.Lock()


def key_fingerprint(key: str) -> str:
    """A short, non-reversible tag of an API key ("none" without one), for breaker keys and logs."""
    if not key:
        return "none"
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).hexdigest()[:12]


def get_breaker(url: str, model: str, base_cooldown: float = DEFAULT_COOLDOWN, *, key: str = ""
                ) -> CircuitBreaker:
    """The process-wide breaker of one configuration's primary (url, model, key, cooldown); created
    closed on first use. `base_cooldown` 0 means the default (60 s)."""
    cooldown = float(base_cooldown or DEFAULT_COOLDOWN)
    fp = key_fingerprint(key)
    rkey = (url.rstrip("/"), model, fp, cooldown)
    with _REGISTRY_LOCK:
        b = _REGISTRY.get(rkey)
        if b is None:
            name = f"{rkey[0]} {model} key:{fp} cooldown:{cooldown:g}s"
            b = _REGISTRY[rkey] = CircuitBreaker(name, cooldown)
        return b


def breaker_states(now: float | None = None) -> dict[str, dict[str, object]]:
    """Every breaker's state, for logs and metrics."""
    with _REGISTRY_LOCK:
        breakers = list(_REGISTRY.values())
    return {b.key: b.snapshot(now) for b in breakers}


def reset_breakers() -> None:
    """Forget all breakers (tests; a config reload)."""
    with _REGISTRY_LOCK:
        _REGISTRY.clear()
