from __future__ import annotations

import logging
import re
import subprocess
import sys
from datetime import datetime
from pathlib import Path

import pytest

from chainreact.errors import ConfigError
from chainreact.template import (
    TemplateContext,
    TemplateError,
    format_session,
    has_template,
    render,
    render_obj,
)

GLOBALS = {
    "root_dir": "/srv/agent",
    "models": {
        "providers": {"default": {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-1", "model": "m"}}
    },
    "items": "not-a-method",
    "n": 3,
}


@pytest.fixture
def ctx(tmp_path: Path) -> TemplateContext:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "IDENTITY.md").write_text("I am the agent.", encoding="utf-8")
    (tmp_path / "a}b.md").write_text("brace-file", encoding="utf-8")
    (tmp_path / "rel.txt").write_text("relative ✓", encoding="utf-8")
    return TemplateContext(
        globals={**GLOBALS, "root_dir": str(tmp_path)},
        rule_chain={"id": "rc-42", "name": "main"},
        metadata={"user": "ann"},
        base_dir=tmp_path,
        vars={"extra": "X"},
    )


def test_globals_dotted_access(ctx: TemplateContext) -> None:
    assert render("${global.models.providers.default.base_url}", ctx) == "http://127.0.0.1:9/v1"
    assert render("k=${global.models.providers.default.api_key};", ctx) == "k=sk-1;"
    # dotted access on a dict means the key, not the dict method of the same name
    assert render("${global.items}", ctx) == "not-a-method"
    assert render("${global['n'] + 1}", ctx) == "4"


def test_spec_system_prompt_example(ctx: TemplateContext) -> None:
    text = (
        "${include(global.root_dir+'/workspace/IDENTITY.md')}\n"
        "${include(global.root_dir+'/workspace/AGENTS.md')}\n"
        "Current time: ${now()}\nAgent ID: ${ruleChain.id}"
    )
    out = render(text, ctx)
    lines = out.split("\n")
    assert lines[0] == "I am the agent."
    assert lines[1] == ""  # AGENTS.md does not exist -> empty string
    assert lines[3] == "Agent ID: rc-42"
    stamp = lines[2].removeprefix("Current time: ")
    parsed = datetime.fromisoformat(stamp)
    assert parsed.tzinfo is not None  # ISO 8601 with offset
    assert abs((datetime.now().astimezone() - parsed).total_seconds()) < 3600


def test_names_and_functions(ctx: TemplateContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CHAINREACT_TEST_KEY", "secret-7")
    assert render("${env('CHAINREACT_TEST_KEY')}", ctx) == "secret-7"
    assert render("${env('CHAINREACT_TEST_UNSET_VAR', 'dflt')}", ctx) == "dflt"
    assert render("${env('CHAINREACT_TEST_UNSET_VAR')}", ctx) == ""
    assert render("${metadata.user}/${ruleChain.name}/${extra}", ctx) == "ann/main/X"
    assert render("${include('rel.txt')}", ctx) == "relative ✓"
    assert render("${fileExists('rel.txt')}|${fileExists('nope.txt')}", ctx) == "true|false"
    assert render("${now('%Y')}", ctx) == str(datetime.now().year)
    assert render("${fileExists('rel.txt') ? 'a' : 'b'}", ctx) == "a"


def test_braces_and_quotes_inside_expression(ctx: TemplateContext) -> None:
    assert render("<${include(global.root_dir+'/a}b.md')}>", ctx) == "<brace-file>"
    assert render('<${include(global.root_dir+"/a}b.md")}>', ctx) == "<brace-file>"
    assert render("${ {'k': 'v}'}['k'] }", ctx) == "v}"
    assert render("${'it\\'s }'}", ctx) == "it's }"


def test_escape_and_plain_dollars(ctx: TemplateContext) -> None:
    out = render("cost $5, literal $${global.n}, real ${global.n}", ctx)
    assert out == "cost $5, literal ${global.n}, real 3"
    assert render("$${", ctx) == "${"
    assert render("no templates here {x} $", ctx) == "no templates here {x} $"


def test_result_conversion(ctx: TemplateContext) -> None:
    assert render("${nil}", ctx) == ""
    assert render("${undefinedName}", ctx) == ""
    assert render("${1 == 1}", ctx) == "true"
    assert render("${2.0} ${7 / 2} ${[1, 2.5]}", ctx) == "2 3.5 [1,2.5]"  # Go's number forms
    # maps print as compact JSON with sorted keys (Go's json.Marshal, as RuleGo's str.ToString)
    assert render("${global.models.providers.default}", ctx) == (
        '{"api_key":"sk-1","base_url":"http://127.0.0.1:9/v1","model":"m"}'
    )


def test_missing_key_is_empty_with_warning(ctx: TemplateContext, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="chainreact.template"):
        assert render("[${global.models.providers.backup.base_url}]", ctx) == "[]"
        assert render("${(global.no_such_root_dir_zz ?? '') + '/x'}", ctx) == "/x"
    assert any("backup" in r.getMessage() for r in caplog.records)
    # expr-lang does not add nil to a string: the error names the nil operand
    with pytest.raises(TemplateError, match="invalid operation: nil \\+ string") as ei:
        render("${global.no_such_root_dir_zz + '/x'}", ctx)
    assert "is global.no_such_root_dir_zz defined?" in str(ei.value)


def test_missing_include_is_empty(ctx: TemplateContext) -> None:
    assert render("a${include('does/not/exist.md')}b", ctx) == "ab"


@pytest.mark.parametrize(
    "expr",
    [
        "${''.__class__}",
        "${''.__class__.__mro__[1].__subclasses__()}",
        "${now.__globals__}",
        "${global.__class__}",
        "${include.__code__}",
        "${global.items.__self__}",
        "${include.__globals__['os'].environ}",
        "${metadata.get('user')}",
    ],
)
def test_no_python_internals(ctx: TemplateContext, expr: str) -> None:
    # Only map keys, list items and a few time methods are reachable: the rest is nil or an error.
    try:
        out = render(expr, ctx)
    except TemplateError:
        return
    assert out == ""


def test_no_mutation_and_no_huge_results(ctx: TemplateContext) -> None:
    render("${global.models.clear()}", ctx)  # `clear` is a missing key, not dict.clear
    assert "providers" in ctx.globals["models"]
    with pytest.raises(TemplateError, match="too large"):
        render("${repeat('x', 1000000000)}", ctx)
    with pytest.raises(TemplateError, match="invalid operation: string \\* int"):
        render("${'x' * 1000}", ctx)


def test_syntax_error_names_expression_and_position(ctx: TemplateContext) -> None:
    with pytest.raises(TemplateError) as ei:
        render("abc ${1 +} def", ctx)
    assert ei.value.position == 4
    assert ei.value.expression == "1 +"
    assert "position 4" in str(ei.value) and "1 +" in str(ei.value)
    assert isinstance(ei.value, ConfigError)


def test_unterminated_and_empty(ctx: TemplateContext) -> None:
    with pytest.raises(TemplateError, match="unterminated"):
        render("x ${global.n", ctx)
    with pytest.raises(TemplateError, match="unterminated string"):
        render("${'abc}", ctx)
    with pytest.raises(TemplateError, match="empty"):
        render("${ }", ctx)


def test_unknown_function_is_error(ctx: TemplateContext) -> None:
    with pytest.raises(TemplateError, match="nosuchfn"):
        render("${nosuchfn('x')}", ctx)


def test_source_in_message(tmp_path: Path) -> None:
    c = TemplateContext(source="agents/main.json")
    with pytest.raises(TemplateError, match=re.escape("agents/main.json")):
        render("${(}", c)


def test_render_obj_walks_nested(ctx: TemplateContext) -> None:
    cfg = {
        "globalDirs": ["${global.root_dir}/skills"],
        "nested": {"workDir": "${global.root_dir}/workspace", "timeout": 60000, "flag": True},
        "plain": "no template",
        "${keys}": "left alone",
    }
    out = render_obj(cfg, ctx)
    root = ctx.globals["root_dir"]
    assert out == {
        "globalDirs": [f"{root}/skills"],
        "nested": {"workDir": f"{root}/workspace", "timeout": 60000, "flag": True},
        "plain": "no template",
        "${keys}": "left alone",
    }
    assert cfg["globalDirs"] == ["${global.root_dir}/skills"]  # input not mutated


def test_has_template() -> None:
    assert has_template("a ${b}")
    assert not has_template("a $b {c}")


def test_plain_strings_do_not_import_the_engine(tmp_path: Path) -> None:
    code = (
        "import sys\n"
        "from chainreact.template import render, render_obj\n"
        "assert render('plain text {x} $y') == 'plain text {x} $y'\n"
        "render_obj({'a': ['b', 1]})\n"
        "assert 'chainreact.expr' not in sys.modules, 'expr imported for plain strings'\n"
        "assert render('${1+1}') == '2'\n"
        "assert 'chainreact.expr' in sys.modules\n"
        "assert 'jinja2' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- strict rendering, typed values (issue 9 items 4 and 6) ----------------------------------------------


def test_strict_names_the_variable_and_the_field(ctx: TemplateContext) -> None:
    with pytest.raises(TemplateError) as ei:
        render("${global.models.providers.backup.base_url}", ctx, strict=True, field="failover[0].url")
    assert ei.value.variable == "global.models.providers.backup"
    assert "global.models.providers.backup" in str(ei.value) and "failover[0].url" in str(ei.value)
    with pytest.raises(TemplateError) as ei:
        render("k=${nosuch}", ctx, strict=True, field="key")
    assert ei.value.variable == "nosuch" and "key" in str(ei.value)
    with pytest.raises(TemplateError, match=r"global\.nokey"):
        render("${global.nokey}", TemplateContext(globals={}, strict=True))
    # defined values render as usual; `??` is how to say "optional" even in strict mode
    assert render("${global.n}/${global.nokey ?? 'd'}", ctx, strict=True) == "3/d"


def test_render_obj_keeps_type_of_whole_expressions(ctx: TemplateContext) -> None:
    cfg = {"timeout": "${global.n}", "label": "${global.n}s", "cfg": "${global.models.providers.default}",
           "flag": " ${global.n > 2} ", "list": ["${global.n * 2}"], "missing": "${global.nothing}"}
    out = render_obj(cfg, ctx)
    assert out["timeout"] == 3
    assert out["label"] == "3s"
    assert out["cfg"] == GLOBALS["models"]["providers"]["default"]  # type: ignore[index]
    assert out["flag"] is True
    assert out["list"] == [6]
    assert out["missing"] == ""  # nil: an empty string, as before


def test_render_obj_strict_names_the_json_path(ctx: TemplateContext) -> None:
    with pytest.raises(TemplateError) as ei:
        render_obj({"config": {"workDir": "${global.nope}/w"}}, ctx, strict=True, field="tools[0]")
    assert ei.value.field == "tools[0].config.workDir"
    assert "tools[0].config.workDir" in str(ei.value)


# --- format_session --------------------------------------------------------------------------------------


def test_format_session_fills_keys() -> None:
    out = format_session("Hello {Name}, you are {Age}.", {"Name": "Ann", "Age": 30})
    assert out == "Hello Ann, you are 30."
    assert format_session("{ Name }", {"Name": "Ann"}) == "Ann"
    assert format_session("no braces", {}) == "no braces"


def test_format_session_escapes() -> None:
    assert format_session('JSON: {{"a": {V}}}', {"V": 1}) == 'JSON: {"a": 1}'
    assert format_session("{{Name}}", {"Name": "x"}) == "{Name}"


def test_format_session_unknown_key_names_it() -> None:
    with pytest.raises(TemplateError, match="'Missing'") as ei:
        format_session("a {Missing} b", {"Name": "x"})
    assert "Name" in str(ei.value)  # lists the known keys


@pytest.mark.parametrize("text", ["a { b", "a } b", "{a{b}}"])
def test_format_session_malformed(text: str) -> None:
    with pytest.raises(TemplateError):
        format_session(text, {"a": 1, "b": 2})


def test_format_session_no_attribute_access() -> None:
    # str.format would resolve this; the session format only looks keys up.
    with pytest.raises(TemplateError, match="unknown session key"):
        format_session("{x.__class__}", {"x": 1})


def test_format_session_leaves_expressions_alone() -> None:
    from chainreact.template import TemplateContext, format_session, render

    text = "Hi {name}! ${global.greeting} $${literal} {{braces}} cost $5"
    filled = format_session(text, {"name": "Ada"})
    assert filled == "Hi Ada! ${global.greeting} $${literal} {braces} cost $5"
    assert render(filled, TemplateContext(globals={"greeting": "Welcome {x}"})) == \
        "Hi Ada! Welcome {x} ${literal} {braces} cost $5"
