"""Running a dataset's cases against an agent, a rule chain or a flow, a few at a time, and checking each.

    result = await run_eval(cases, AgentTarget(agent), concurrency=4, judge=judge, store=store)
    result.pass_rate, result.to_dict()

Every case runs with a recorder (agent/recording.py) installed: its model calls and tool calls give the
checks their facts (tools called, model calls, tokens) whatever the target, and with a `store` the case's
run is kept there like any recorded run, so a failing case can be exported (`chainreact runs export`) and
replayed. `on_done(result, done, total)` is called as each case ends (the CLI's progress bar).
"""

from __future__ import annotations

import asyncio
import json
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..agent.plan import plan_hook
from ..agent.recording import IORecorder
from .checks import Outcome, run_checks
from .dataset import Case
from .judge import Judge
from .targets import Target

if TYPE_CHECKING:
    from ..state.base import Store

DEFAULT_CONCURRENCY = 4


@dataclass
class CaseResult:
    name: str
    passed: bool
    checks: list[dict[str, Any]]
    answer: str | None
    tokens: int
    ms: float
    steps: int = 0
    error: str | None = None
    run_id: str | None = None
    input: Any = None

    def to_dict(self) -> dict[str, Any]:
        out = {"name": self.name, "passed": self.passed, "checks": self.checks, "answer": self.answer,
               "tokens": self.tokens, "ms": round(self.ms, 1), "steps": self.steps, "input": self.input}
        if self.error is not None:
            out["error"] = self.error
        if self.run_id is not None:
            out["run_id"] = self.run_id
        return out


@dataclass
class EvalResult:
    results: list[CaseResult] = field(default_factory=list)
    target: str = ""

    @property
    def cases(self) -> int:
        return len(self.results)

    @property
    def passed(self) -> int:
        return sum(1 for r in self.results if r.passed)

    @property
    def pass_rate(self) -> float:
        return self.passed / self.cases if self.results else 0.0

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form of `chainreact eval`."""
        return {"cases": self.cases, "passed": self.passed, "pass_rate": round(self.pass_rate, 4),
                "target": self.target, "results": [r.to_dict() for r in self.results]}


def outcome_of(records: list[dict[str, Any]], answer: str | None, error: str | None, ms: float) -> Outcome:
    """The facts the checks use, from a case's recorded I/O."""
    top = {r["slot"] for r in records if r.get("kind") == "slot" and r.get("parent") is None}
    out = Outcome(answer, ms=ms, error=error)
    for r in records:
        if r.get("kind") != "model":
            continue
        if r.get("slot") in top:
            out.steps += 1
        resp = r.get("response") or {}
        out.tokens += int((resp.get("usage") or {}).get("total_tokens") or 0)
        for call in (resp.get("message") or {}).get("tool_calls") or []:
            fn = call.get("function") or {}
            try:
                args = json.loads(fn.get("arguments") or "{}")
            except ValueError:
                args = fn.get("arguments")
            out.tool_calls.append((str(fn.get("name")), args))
    return out


async def run_case(case: Case, target: Target, *, judge: Judge | None = None,
                   store: Store | None = None) -> CaseResult:
    recorder = IORecorder()
    run_id = f"eval-{secrets.token_hex(6)}" if store is not None else None
    answer: str | None = None
    error: str | None = None
    extra: Any = None
    start = time.perf_counter()
    with plan_hook(recorder):
        target.note(recorder, case)
        try:
            answer, extra = await target.run(case, run_id)
        except Exception as e:  # the case fails; the eval goes on
            error = f"{type(e).__name__}: {e}"
    ms = (time.perf_counter() - start) * 1000
    recorder.close()
    records = recorder.take()
    outcome = outcome_of(records, answer, error, ms)
    if store is not None and run_id is not None:
        await target.save(store, run_id, case, records, answer, error, extra, outcome.steps)
    run_id = target.stored_id(run_id, extra)
    checks = await run_checks(case.expect, case.input, outcome, judge)
    passed = error is None and all(c["passed"] for c in checks)
    return CaseResult(case.name, passed, checks, answer, outcome.tokens, ms, outcome.steps, error, run_id,
                      case.input)


async def run_eval(cases: Sequence[Case], target: Target, *, concurrency: int = DEFAULT_CONCURRENCY,
                   judge: Judge | None = None, store: Store | None = None,
                   on_done: Callable[[CaseResult, int, int], None] | None = None) -> EvalResult:
    """Every case, at most `concurrency` at a time; the results in the dataset's order."""
    sem = asyncio.Semaphore(max(1, concurrency))
    done = 0
    total = len(cases)

    async def one(case: Case) -> CaseResult:
        nonlocal done
        async with sem:
            result = await run_case(case, target, judge=judge, store=store)
        done += 1
        if on_done is not None:
            on_done(result, done, total)
        return result

    results = await asyncio.gather(*(one(c) for c in cases))
    return EvalResult(list(results), target.describe())


__all__ = ["DEFAULT_CONCURRENCY", "CaseResult", "EvalResult", "outcome_of", "run_case", "run_eval"]
