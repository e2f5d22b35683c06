"""Fault cases of issue 23 for hostile input outside the tools: a schema `pattern` that backtracks on a
model's argument (`(a+)+$` on 24 characters took 1.05 s, doubling per character, GIL held), and
expression errors that quoted a 100,000-character expression whole. Each failed before its fix."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"
CHILD_LIMIT = 60.0  # seconds; RE2 answers at once, Python's re needed 2^40 steps


def test_a_schema_pattern_cannot_stall_argument_validation() -> None:
    code = textwrap.dedent("""
        from chainreact.agent.tool_exec import validate_arguments
        schema = {"type": "object", "properties": {"code": {"type": "string", "pattern": "^(a+)+$"}}}
        print(validate_arguments(schema, {"code": "a" * 40 + "!"}))
        print(validate_arguments(schema, {"code": "a" * 40}))
    """)
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    try:
        done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                              timeout=CHILD_LIMIT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"validation did not finish within {CHILD_LIMIT:g} s (backtracking)")
    assert done.returncode == 0, done.stderr
    bad, good = done.stdout.splitlines()
    assert bad.startswith("$.code: ") and "does not match pattern '^(a+)+$'" in bad
    assert good == "None"


def _error(f: Callable[[], Any]) -> str:
    try:
        f()
    except Exception as e:
        return str(e)
    pytest.fail("no error")


BIG = "1 + " * 2000 + "'" + "x" * 5000 + "'"  # 13,000 characters


def _cases() -> dict[str, Callable[[], Any]]:
    from chainreact import template as T
    from chainreact.chains import RuleEngine
    from chainreact.chains.exprs import Expr, Template
    from chainreact.expr import compile_expr

    def chain_load() -> None:
        RuleEngine().load({"ruleChain": {"id": "c"}, "metadata": {"nodes": [
            {"id": "f", "type": "exprFilter", "configuration": {"expr": BIG + " +"}}]}})

    return {
        "template syntax": lambda: T.render("Hi ${" + BIG + " + (}", T.TemplateContext()),
        "template undefined": lambda: T.render("${nosuch.x + " + BIG + "}", T.TemplateContext(), strict=True),
        "template runtime": lambda: T.render("${1 / 'a' + " + BIG + "}", T.TemplateContext()),
        "chain expression": lambda: Expr(BIG + " + )"),
        "chain template": lambda: Template("${" + BIG + " + )}"),
        "chain load": chain_load,
        "runtime error": lambda: compile_expr("x.y + " + BIG).run({"x": 1}),
        "number literal": lambda: compile_expr("1" * 9000 + "e"),
        "date()": lambda: compile_expr("date(s)").run({"s": "z" * 9000}),
        "duration()": lambda: compile_expr("duration(s)").run({"s": "z" * 9000}),
        "regex": lambda: compile_expr("'a' matches p").run({"p": "(" * 3000}),
    }


@pytest.mark.parametrize("name", list(_cases()))
def test_expression_errors_quote_at_most_a_few_hundred_characters(name: str) -> None:
    text = _error(_cases()[name])
    assert len(text) < 700, f"{name}: {len(text)} characters: {text[:300]}"
    assert " characters)" in text or len(text) < 200, text
