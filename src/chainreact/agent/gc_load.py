"""The cyclic garbage collector under many runs in flight: the library adjusts it while they last.

Why: CPython's collector starts a young-generation collection every 700 net container allocations and,
from time to time, a full one that walks every tracked object of the process. With thousands of agent runs
in flight, each run's live objects (its messages, its request, its task and frames) survive the young
collections, are promoted, and every full collection walks all of them plus everything loaded at import
time; its work per model request grows with the number of runs in flight (docs/performance.md, "Scale").

What: while at least `ENGAGE_AT` runs are in flight in the process (counted by every run's loop,
`ReactLoop.events`), the collector's young-generation threshold is raised to `YOUNG_THRESHOLD` (fewer
collections, each finding mostly dead objects), and the objects alive when that happens (the imported
modules, the loaded documents, ...) are frozen (`gc.freeze()`), so full collections stop walking them;
each time the runs in flight double again (512, 1,024, ...) what is alive is frozen again, so the
objects of the runs started since (mostly alive until their run ends) do not make one full collection
walk them all (a stall of a second or more at 10,000 in flight). Cyclic garbage among frozen objects
waits for the release below.
Objects are still freed by reference counting as before, frozen or not. When the runs in flight fall to
`RELEASE_AT` or fewer, both are undone: the threshold the process had is put back and the frozen objects
are unfrozen (into the oldest generation, as if never frozen).

Reversible and polite: a process that manages the collector itself is left alone. Nothing is changed
when the collector is disabled; the threshold only when it is Python's default (`PYTHON_DEFAULTS`: a
process that set its own, as `chainreact serve` does, keeps it); nothing is frozen when the process froze
objects itself (`chainreact serve` does); a threshold the process changes while engaged is left as it set
it. Switch it off with the environment variable `CHAINREACT_GC_TUNING=0` or `gc_tuning(False)`.
"""

from __future__ import annotations

import gc
import os
from dataclasses import dataclass

ENGAGE_AT = 256  # runs in flight at once in this process
RELEASE_AT = 32
YOUNG_THRESHOLD = 50_000
PYTHON_DEFAULTS = (700, 2000)  # CPython's young-generation threshold (3.13 made it 2000)


@dataclass
class _State:
    in_flight: int = 0
    engaged: bool = False
    saved: tuple[int, int, int] | None = None  # the thresholds to put back, when we changed them
    froze: bool = False  # we called gc.freeze(): unfreeze on release
    next_freeze: int = 0  # runs in flight at which to freeze again
    freezes: int = 0  # gc.freeze() calls since engaged
    enabled: bool | None = None  # None: read CHAINREACT_GC_TUNING


_S = _State()


def gc_tuning(enabled: bool | None = None) -> bool:
    """Whether the library adjusts the collector under many runs in flight (see the module's doc); with
    an argument, switch it on or off (off releases an adjustment in force now). None: read the
    environment again (`CHAINREACT_GC_TUNING`, on unless "0", "false", "no" or "off")."""
    _S.enabled = enabled
    if not _enabled():
        _release()
    return _enabled()


def _enabled() -> bool:
    if _S.enabled is not None:
        return _S.enabled
    return os.environ.get("CHAINREACT_GC_TUNING", "1").strip().lower() not in ("0", "false", "no", "off")


def runs_in_flight() -> int:
    """Agent runs in flight in this process now (the counter this module keeps)."""
    return _S.in_flight


def engaged() -> bool:
    """Whether the adjustment is in force now."""
    return _S.engaged


def run_started() -> None:
    _S.in_flight += 1
    if not _S.engaged:
        if _S.in_flight >= ENGAGE_AT and _enabled():
            _engage()
    elif _S.froze and _S.in_flight >= _S.next_freeze:
        _freeze()


def run_ended() -> None:
    _S.in_flight = max(0, _S.in_flight - 1)
    if _S.engaged and _S.in_flight <= RELEASE_AT:
        _release()


def _engage() -> None:
    _S.engaged = True
    if not gc.isenabled():
        return  # the process manages the collector itself
    current = gc.get_threshold()
    if current[0] in PYTHON_DEFAULTS:
        _S.saved = current
        gc.set_threshold(YOUNG_THRESHOLD, *current[1:])
    if gc.get_freeze_count() == 0:
        _S.froze = True
        _freeze()


def _freeze() -> None:
    gc.freeze()
    _S.freezes += 1
    _S.next_freeze = max(_S.in_flight, ENGAGE_AT) * 2


def _release() -> None:
    if not _S.engaged:
        return
    _S.engaged = False
    if _S.saved is not None:
        if gc.get_threshold()[0] == YOUNG_THRESHOLD:  # else the process set its own meanwhile: keep it
            gc.set_threshold(*_S.saved)
        _S.saved = None
    if _S.froze:
        gc.unfreeze()
        _S.froze = False
        _S.freezes = 0
