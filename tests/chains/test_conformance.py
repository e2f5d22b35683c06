"""Every shared RuleGo case through the engine's Python API (cases derived from RuleGo's own tests)."""

from __future__ import annotations

import asyncio
import time

import pytest

from .rulego_cases import engine_for, input_msg, load_cases, match_ends

CASES = load_cases()


@pytest.mark.skipif(not CASES, reason="../shared/rulego is not there (outside CI)")
@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
async def test_rulego_case(case: dict) -> None:
    engine = engine_for(case)
    t0 = time.monotonic()
    times: list[float] = []
    ends = await engine.run(case["chain"], input_msg(case),
                            on_end=lambda e: times.append(time.monotonic() - t0), timeout=30)
    settle = case.get("settle_ms")
    if settle:  # ends that would arrive late (they must not)
        await asyncio.sleep(min(settle, 500) / 1000)
    problems = match_ends(case, ends)
    assert not problems, f"{case['name']} ({case['source']}): " + " | ".join(problems)
    for exp, got_t in zip(case["expect"]["ends"], sorted(times), strict=False):
        timing = exp.get("timing")
        if timing:
            assert timing["min_ms"] / 1000 - 0.05 <= got_t <= timing["max_ms"] / 1000 + 1.0
