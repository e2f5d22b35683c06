"""Running one case's checks (dataset.py lists them) over what its run did (`Outcome`).

Each check gives `{"kind", "passed", "expected", "got"?, "detail"}`; a judge's also `verdict` and `reason`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .judge import Judge


@dataclass
class Outcome:
    """What a case's run did: its answer, its tool calls (name and parsed arguments), model calls of the
    agent itself (`steps`), tokens, time, and the error that ended it, if any."""

    answer: str | None
    tool_calls: list[tuple[str, Any]] = field(default_factory=list)
    steps: int = 0
    tokens: int = 0
    ms: float = 0.0
    error: str | None = None
    run_id: str | None = None


def _json(text: str | None) -> tuple[bool, Any]:
    if text is None:
        return False, None
    try:
        return True, json.loads(text)
    except ValueError:
        stripped = text.strip()
        if stripped.startswith("```"):  # a fenced answer: the JSON inside
            body = stripped.strip("`")
            body = body[body.find("\n") + 1:] if "\n" in body else body
            try:
                return True, json.loads(body)
            except ValueError:
                pass
        return False, None


def _subset(want: Any, got: Any) -> bool:
    if isinstance(want, dict):
        return isinstance(got, dict) and all(k in got and _subset(v, got[k]) for k, v in want.items())
    return bool(want == got)


def check(kind: str, spec: Any, out: Outcome) -> dict[str, Any]:
    """One non-judge check."""
    answer = out.answer or ""
    if kind == "contains":
        want = spec if isinstance(spec, list) else [spec]
        missing = [s for s in want if s not in answer]
        return {"kind": kind, "passed": not missing, "expected": spec,
                "detail": f"missing {', '.join(map(repr, missing))}" if missing else "found"}
    if kind == "equals":
        if isinstance(spec, str):
            ok = answer == spec
        else:
            parsed, value = _json(out.answer)
            ok = parsed and value == spec
        return {"kind": kind, "passed": ok, "expected": spec, "got": out.answer,
                "detail": "equal" if ok else "the answer differs"}
    if kind == "matches":
        from ..tools.builtin.linear_re import compile_linear

        ok = compile_linear(spec).search(answer) is not None
        return {"kind": kind, "passed": ok, "expected": spec,
                "detail": "a match" if ok else "no match in the answer"}
    if kind == "json_schema":
        from ..tools.jsonschema_lite import compile_schema

        parsed, value = _json(out.answer)
        if not parsed:
            return {"kind": kind, "passed": False, "expected": spec, "detail": "the answer is not JSON"}
        errors = compile_schema(spec).errors(value)
        return {"kind": kind, "passed": not errors, "expected": spec,
                "detail": "; ".join(errors[:3]) if errors else "valid"}
    if kind == "tool_called":
        return _tool_called(spec, out)
    if kind == "max_steps":
        return {"kind": kind, "passed": out.steps <= spec, "expected": spec, "got": out.steps,
                "detail": f"{out.steps} model call(s)"}
    if kind == "max_tokens":
        return {"kind": kind, "passed": out.tokens <= spec, "expected": spec, "got": out.tokens,
                "detail": f"{out.tokens} token(s)"}
    raise ValueError(f"unknown check {kind!r}")


def _tool_called(spec: Any, out: Outcome) -> dict[str, Any]:
    missing = []
    for want in spec if isinstance(spec, list) else [spec]:
        name = want if isinstance(want, str) else want["name"]
        args = {} if isinstance(want, str) else want.get("arguments") or {}
        if not any(n == name and _subset(args, a) for n, a in out.tool_calls):
            missing.append(name + (json.dumps(args, ensure_ascii=False) if args else ""))
    called = [n for n, _ in out.tool_calls]
    detail = "called"
    if missing:
        detail = f"not called: {', '.join(missing)} (called: {', '.join(called) or 'none'})"
    return {"kind": "tool_called", "passed": not missing, "expected": spec, "got": called, "detail": detail}


async def run_checks(expect: dict[str, Any], case_input: Any, out: Outcome,
                     judge: Judge | None) -> list[dict[str, Any]]:
    """Every check of a case, in the order the case lists them. A run that failed fails each check."""
    results: list[dict[str, Any]] = []
    for kind, spec in expect.items():
        if out.error is not None and kind not in ("max_steps", "max_tokens"):
            results.append({"kind": kind, "passed": False, "expected": spec,
                            "detail": f"the run failed: {out.error}"})
        elif kind == "judge":
            rubric = spec["rubric"] if isinstance(spec, dict) else spec
            if judge is None:
                results.append({"kind": kind, "passed": False, "expected": rubric,
                                "detail": "no judge: give --judge DOCUMENT (a model document)"})
                continue
            verdict = await judge.score(rubric, case_input, out.answer or "")
            results.append({"kind": kind, "passed": verdict.passed, "expected": rubric,
                            "verdict": verdict.verdict, "reason": verdict.reason,
                            "detail": f"{verdict.verdict}: {verdict.reason}"})
        else:
            results.append(check(kind, spec, out))
    return results


__all__ = ["Outcome", "check", "run_checks"]
