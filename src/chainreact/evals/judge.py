"""The judge of `judge` checks: any model document (`--judge DOC`) asked whether an answer meets a rubric.

The judge agent gets one user message with the rubric, the case's input and the answer, and is asked for
`{"verdict": "pass" | "fail", "reason": "..."}`. A reply that is not that JSON is read leniently (a JSON
object anywhere in it, or a first word PASS/FAIL); one that says neither fails the check, its text kept as
the reason. The judge's own system prompt (from its document) is kept.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..agent.agent import Agent

PROMPT = """You are grading an AI agent's answer against a rubric.

Rubric:
{rubric}

The agent was given:
{input}

The agent answered:
{answer}

Does the answer satisfy the rubric? Reply with only a JSON object:
{{"verdict": "pass" or "fail", "reason": "one sentence"}}"""

_OBJECT = re.compile(r"\{.*\}", re.DOTALL)
_WORD = re.compile(r"^\W*(pass|fail)\b", re.IGNORECASE)


@dataclass
class Verdict:
    passed: bool
    verdict: str  # pass | fail | unclear | error
    reason: str


def parse_verdict(text: str) -> Verdict:
    found = _OBJECT.search(text or "")
    if found:
        try:
            data = json.loads(found.group(0))
        except ValueError:
            data = None
        if isinstance(data, dict):
            v = data.get("verdict", data.get("pass"))
            reason = str(data.get("reason") or "")
            if isinstance(v, bool):
                return Verdict(v, "pass" if v else "fail", reason)
            if isinstance(v, str) and v.strip().lower() in ("pass", "fail"):
                return Verdict(v.strip().lower() == "pass", v.strip().lower(), reason)
    word = _WORD.match(text or "")
    if word:
        v = word.group(1).lower()
        return Verdict(v == "pass", v, (text or "").strip()[:500])
    return Verdict(False, "unclear", f"the judge gave no verdict: {(text or '').strip()[:300]!r}")


class Judge:
    """A judge over an Agent (built from `--judge DOC`)."""

    def __init__(self, agent: Agent):
        self.agent = agent

    async def score(self, rubric: str, case_input: Any, answer: str) -> Verdict:
        shown = case_input if isinstance(case_input, str) else json.dumps(case_input, ensure_ascii=False)
        try:
            result = await self.agent.run(PROMPT.format(rubric=rubric, input=shown, answer=answer))
        except Exception as e:  # the judge's failure fails the check, not the eval
            return Verdict(False, "error", f"the judge failed: {type(e).__name__}: {e}")
        return parse_verdict(result.content)

    async def aclose(self) -> None:
        await self.agent.aclose()


__all__ = ["PROMPT", "Judge", "Verdict", "parse_verdict"]
