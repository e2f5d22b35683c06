"""`parse_template`: RuleGo's `${...}` strings over the expression language."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact.expr import ExprError, ExprSyntaxError, parse_template

ENV: dict[str, Any] = {"name": "Ann", "n": 3, "f": 2.0, "m": {"b": 1, "a": [1, 2.5]}, "none": None,
                       "ok": True}


@pytest.mark.parametrize(("text", "want"), [
    ("Hi ${name}, ${1+2}", "Hi Ann, 3"),
    ("plain", "plain"),
    ("", ""),
    ("cost $5, $${name} is literal, ${name}", "cost $5, ${name} is literal, Ann"),
    ("$${", "${"),
    ("${none}|${missing}", "|"),  # nil prints as "" (RuleGo str.ToString)
    ("${ok} ${!ok}", "true false"),
    ("${f} ${f / 4} ${1e21} ${n / 0}", "2 0.5 1000000000000000000000 +Inf"),  # Go's FormatFloat 'f', -1
    ("${m}", '{"a":[1,2.5],"b":1}'),  # compact JSON, sorted keys
    ("${['<a&b>']}", '["\\u003ca\\u0026b\\u003e"]'),  # Go's json.Marshal escapes HTML characters
    ("${ {'k': 'v}'}['k'] }", "v}"),
    ("${'it\\'s }'}", "it's }"),
    ("${`raw }`}", "raw }"),
    ("a${name}b${name}c", "aAnnbAnnc"),
])
def test_render(text: str, want: str) -> None:
    assert parse_template(text).render(ENV) == want


def test_value_keeps_type_of_a_whole_expression() -> None:
    assert parse_template("${n}").value(ENV) == 3
    assert parse_template("  ${n * 2}  ").value(ENV) == 6  # RuleGo trims spaces around a whole expression
    assert parse_template("${m}").value(ENV) == {"b": 1, "a": [1, 2.5]}
    assert parse_template("${none}").value(ENV) is None
    assert parse_template("${n}x").value(ENV) == "3x"
    assert parse_template("${n}${n}").value(ENV) == "33"
    assert parse_template("no expr").value(ENV) == "no expr"


def test_has_expr() -> None:
    assert parse_template("a ${b}").has_expr
    assert not parse_template("a $${b}").has_expr
    assert not parse_template("a {b} $c").has_expr


def test_undefined_modes() -> None:
    t = parse_template("${global.k}/${vars.x}/${msg.temperature}")
    env = {"global": {"k": "G"}, "vars": {"x": 1}}
    assert t.render(env, optional=True) == "G/1/"  # msg undefined: nil, and nil.temperature nil too
    with pytest.raises(ExprError, match="cannot fetch temperature from nil"):  # as expr-lang
        t.render(env)
    assert t.render(env, undefined="keep") == "G/1/${msg.temperature}"
    with pytest.raises(ExprError, match="undefined variable 'msg'"):
        t.render(env, undefined="error")
    assert parse_template("${msg.x > 5}").value({}, undefined="keep") == "${msg.x > 5}"
    assert parse_template("${msg.x}").value({"msg": {"x": 7}}, undefined="keep") == 7


def test_syntax_errors_give_template_positions() -> None:
    with pytest.raises(ExprSyntaxError) as ei:
        parse_template("abc ${1 +} def")
    assert ei.value.position == 4 and ei.value.expression == "1 +"
    with pytest.raises(ExprSyntaxError, match="unterminated '\\$\\{'"):
        parse_template("x ${name")
    with pytest.raises(ExprSyntaxError, match="unterminated string"):
        parse_template("${'abc}")
    with pytest.raises(ExprSyntaxError, match="empty expression"):
        parse_template("${ }")


def test_parse_is_cached() -> None:
    assert parse_template("x ${name}") is parse_template("x ${name}")
