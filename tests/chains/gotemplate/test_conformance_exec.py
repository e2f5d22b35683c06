"""text/template execution against cases transcribed from Go's own tests (exec_cases.json: exec_test.go,
multi_test.go), each case naming the Go test it comes from; cases that need Go types are listed with the
reason they are skipped."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact.chains.gotemplate import ExecError, GoTemplate

from .harness import FUNCS, decode, load

TABLE = load("exec_cases.json")
CASES = [c for c in TABLE["cases"] if "skip" not in c]


def run(case: dict[str, Any]) -> str:
    left, right = case.get("delims", ["", ""])
    name = case.get("name", case["go"].split("/", 1)[-1])  # Go's testExecute names it after the test
    t = GoTemplate(case["template"], name, FUNCS, left, right)
    return t.execute(decode(case.get("data"), TABLE["datasets"]), case.get("execute"))


@pytest.mark.parametrize("case", CASES, ids=[c["go"] for c in CASES])
def test_go_exec_case(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(ExecError) as ei:
            run(case)
        if case.get("exact"):
            assert str(ei.value) == case["error"]
        else:
            assert case["error"] in str(ei.value)
    else:
        assert run(case) == case["output"]


def test_every_skip_says_why_and_most_cases_run() -> None:
    skipped = [c for c in TABLE["cases"] if "skip" in c]
    assert all(c["skip"].strip() for c in skipped)
    assert len(CASES) > 2 * len(skipped)
