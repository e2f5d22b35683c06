"""Many runs in flight: the library adjusts the cyclic garbage collector while they last and puts it back
afterwards (agent/gc_load.py). Each case runs in a subprocess (the collector's settings are the process's)
against a scripted model in the test process: 300 runs at once (above gc_load.ENGAGE_AT), each with one
tool call, which records the collector's settings while the other runs are in flight."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

from chainreact.testing import FakeLLM, tool_steps_responder

CHILD = textwrap.dedent('''
    import asyncio, gc, json, sys
    from chainreact.agent import Agent
    from chainreact.agent import gc_load
    from chainreact.tools import tool

    seen = []
    freezes = []

    @tool(thread=False)
    def add(a: int, b: int) -> int:
        """Add two integers."""
        seen.append((gc.get_threshold()[0], gc.get_freeze_count() > 0, gc_load.runs_in_flight()))
        freezes.append(gc_load._S.freezes)
        return a + b

    if sys.argv[3] == "tuned":  # the process tuned the collector itself (as `chainreact serve` does)
        gc.freeze()
        gc.set_threshold(10_000)
    before = (gc.get_threshold(), gc.get_freeze_count() > 0)

    async def main(url, n):
        agent = Agent(name="a", url=url, model="m", key="x", tools=[add])
        out = await asyncio.gather(*(agent.run("go") for _ in range(n)))
        await agent.aclose()
        return [r.content for r in out]

    answers = asyncio.run(main(sys.argv[1], int(sys.argv[2])))
    after = (gc.get_threshold(), gc.get_freeze_count() > 0)
    print(json.dumps({"answers": answers, "seen": seen, "before": before, "after": after, "freezes": freezes,
                      "in_flight_after": gc_load.runs_in_flight()}))
''')


def _run(url: str, n: int, mode: str = "", env: dict[str, str] | None = None) -> dict:
    cp = subprocess.run([sys.executable, "-c", CHILD, url, str(n), mode], capture_output=True, text=True,
                        timeout=120, env={**os.environ, **(env or {})})
    assert cp.returncode == 0, cp.stderr
    out: dict = json.loads(cp.stdout.strip().splitlines()[-1])
    assert len(out["answers"]) == n and all(a.startswith("All 1 tool steps are done") for a in out["answers"])
    assert out["in_flight_after"] == 0
    return out


def _server() -> FakeLLM:
    # every answer after 0.2 s: the 300 runs are all started before the first tool call
    return FakeLLM(tool_steps_responder(1), latency=0.2, record=False, backlog=1024)


def test_many_runs_in_flight_raise_the_threshold_and_freeze_and_it_is_undone_after() -> None:
    with _server() as srv:
        out = _run(srv.url, 300)
    (t0, _, _), frozen = out["before"]
    assert t0 == 700 and not frozen  # Python's defaults in the child
    busy = [s for s in out["seen"] if s[2] >= 256]
    assert busy, out["seen"][:5]
    assert all(threshold == 50_000 and froze for threshold, froze, _ in busy), busy[:5]
    assert out["after"] == out["before"]  # thresholds back, nothing left frozen
    assert set(out["freezes"]) == {1}  # 300 runs: frozen once, at 256


def test_what_is_alive_is_frozen_again_each_time_the_runs_in_flight_double() -> None:
    with _server() as srv:
        out = _run(srv.url, 1100)
    assert max(s[2] for s in out["seen"]) >= 1024
    assert max(out["freezes"]) == 3  # at 256, 512 and 1,024 runs in flight
    assert out["after"] == out["before"]


def test_a_few_runs_leave_the_collector_alone() -> None:
    with _server() as srv:
        out = _run(srv.url, 20)
    assert all(threshold == 700 and not froze for threshold, froze, _ in out["seen"])
    assert out["after"] == out["before"]


def test_switched_off_by_the_environment() -> None:
    with _server() as srv:
        out = _run(srv.url, 300, env={"CHAINREACT_GC_TUNING": "0"})
    assert all(threshold == 700 and not froze for threshold, froze, _ in out["seen"])
    assert out["after"] == out["before"]


def test_a_process_that_tuned_the_collector_itself_is_left_alone() -> None:
    with _server() as srv:
        out = _run(srv.url, 300, "tuned")
    busy = [s for s in out["seen"] if s[2] >= 256]
    assert busy and all(threshold == 10_000 and froze for threshold, froze, _ in busy)
    assert out["before"] == [[10_000, 10, 10], True] and out["after"] == out["before"]  # still frozen
