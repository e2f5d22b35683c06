"""Medians and spreads over interleaved rounds: how every published figure of the suite is summarised.

A figure is measured once per round; rounds interleave the variants (A B A B ...), so the machine's drift
hits each alike. The published value is the median over rounds and its spread the lowest and highest
round: `1.23 [1.10-1.31]`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from typing import Any


def spread(values: Iterable[float | None]) -> dict[str, Any] | None:
    """{"median", "min", "max", "n", "rounds"} of the values that were measured (None: none was)."""
    vals = [float(v) for v in values if v is not None]
    if not vals:
        return None
    return {"median": statistics.median(vals), "min": min(vals), "max": max(vals), "n": len(vals),
            "rounds": [round(v, 6) for v in vals]}


def fmt(s: dict[str, Any] | None, digits: int = 2, unit: str = "", sign: bool = False) -> str:
    """`median [min-max]` (just the median when there was one round); n/a when nothing was measured."""
    if not s:
        return "n/a"
    f = f"{{:{'+' if sign else ''}.{digits}f}}"
    med = f.format(s["median"]) + unit
    if s["n"] < 2:
        return med
    return f"{med} [{f.format(s['min'])}–{f.format(s['max'])}]"


def ratios(pairs: Iterable[tuple[float | None, float | None]]) -> dict[str, Any] | None:
    """The spread of per-round ratios a/b (each round's pair measured side by side)."""
    return spread(a / b for a, b in pairs if a is not None and b)
