"""Schema `pattern`s are ECMA-262 regular expressions run on RE2 (issue 23): the same answers as
JavaScript's own RegExp (QuickJS, the chains' engine, is the reference here), linear time whatever the
pattern, and a pattern RE2 cannot run is a SchemaError when the schema is compiled."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact.tools.ecma_regex import ecma_to_re2
from chainreact.tools.jsonschema_lite import SchemaError, SchemaValidator, is_valid

PATTERNS = [
    "^[a-z]+$", "^\\d{3}-\\d{4}$", "^\\s*$", "\\S+", "^.$", "a$", "^a", "\\bword\\b",
    "^[\\w.-]+@[\\w-]+\\.\\w+$",
    "^\\u00e9$", "^[\\u4e00-\\u9fa5]+$", "^\\uD83D\\uDE00$", "^\\u{1F600}$", "^[^]$", "^[\\s\\S]{2}$",
    "^\\cJ$", "^\\0$", "^[\\b]$", "^a\\/b$", "^(?<year>\\d{4})-(?<m>\\d{2})$", "^[^\\s]+$", "^\\p{L}+$",
    "^(a|b)*c$", "[\\d\\s]", "^\\x41$", "^\\t\\n\\v\\f\\r$", "^[A-Z]{2}\\d+$", "(a+)+$",
]
STRINGS = [
    "", "a", "abc", "ABC", "123-4567", " \t", "\u00a0", "\u2028", "\ufeff", "\u3000", "x\ny", "a\n", "\r",
    "\n",
    "word", "a word here", "swordfish", "me@example.com", "é", "中文", "\U0001F600", "\u2028\u2029", "ab",
    "\x0a", "\x00", "\x08", "a/b", "2024-05", "ölçü", "ababc", "1 ", "A", "\t\n\x0b\f\r", "DE123",
    "aaaaaaaaaaaaaaaaaaaaaaaa!", "\u1680", "\u2009", "\u0085",
]


def _js_answers() -> dict[tuple[str, str], bool]:
    qjs = pytest.importorskip("_quickjs")
    ctx = qjs.Context()
    ctx.set_time_limit(30)
    test = ctx.eval("(function (p, s) { return new RegExp(p, 'u').test(s); })")
    return {(p, s): bool(test(p, s)) for p in PATTERNS for s in STRINGS}


def test_patterns_answer_as_javascript_does() -> None:
    expected = _js_answers()
    wrong = []
    for p in PATTERNS:
        v = SchemaValidator({"type": "string", "pattern": p})
        for s in STRINGS:
            if v.is_valid(s) != expected[(p, s)]:
                wrong.append((p, s, expected[(p, s)], ecma_to_re2(p)))
    assert wrong == []


def test_pattern_properties_use_the_same_engine() -> None:
    schema = {"type": "object", "patternProperties": {"^\\s*x-\\u00e9$": {"type": "integer"}},
              "additionalProperties": False}
    assert is_valid({"\u00a0x-é": 1}, schema)
    assert not is_valid({"x-e": 1}, schema)
    assert not is_valid({"x-é": "1"}, schema)


@pytest.mark.parametrize("pattern,why", [
    ("^(a)\\1$", "backreferences"), ("(?<n>a)\\k<n>", "backreferences"), ("^(?=a)", "lookaround"),
    ("a(?!b)", "lookaround"), ("(?<=a)b", "lookaround"), ("(?<!a)b", "lookaround"), ("(", "not a regular"),
])
def test_a_pattern_re2_cannot_run_is_an_error_at_compile(pattern: str, why: str) -> None:
    with pytest.raises(SchemaError, match=why) as ei:
        SchemaValidator({"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}})
    assert "RE2" in str(ei.value) and "rewrite the pattern" in str(ei.value)
    with pytest.raises(SchemaError, match="patternProperties"):
        SchemaValidator({"patternProperties": {pattern: {}}})


def test_an_http_tool_with_such_a_pattern_fails_to_load() -> None:
    from chainreact.errors import ConfigError
    from chainreact.tools.http import create_http_tool

    d: dict[str, Any] = {"type": "http", "name": "lookup", "execution": {"endpoint": "http://127.0.0.1:9/x"},
                         "parameters": {"type": "object", "properties": {
                             "id": {"type": "string", "pattern": "^(?!admin).+$"}}}}
    with pytest.raises(ConfigError, match="lookaround"):
        create_http_tool(d)


def test_a_schema_that_cannot_be_checked_is_an_error_result_not_a_crash() -> None:
    from chainreact.agent.tool_exec import validate_arguments

    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(?=x)"}}}
    problem = validate_arguments(schema, {"a": "x"})
    assert problem is not None and "parameter schema cannot check them" in problem and "lookaround" in problem
