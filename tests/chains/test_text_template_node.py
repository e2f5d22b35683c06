"""The `text/template` node in a chain: Go's text/template over RuleGo's env, with Go's types (JSON numbers
are float64, metadata is map[string]string), Go's output and Go's errors. The language itself is checked
case by case against Go's own tests in tests/chains/gotemplate/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from chainreact.chains import ChainLoadError, RuleEngine, RuleMsg
from chainreact.chains.engine import End


def chain(template: str, chain_id: str = "c") -> dict[str, Any]:
    return {"ruleChain": {"id": chain_id}, "metadata": {"nodes": [
        {"id": "n", "type": "text/template", "configuration": {"template": template}}]}}


def render(template: str, data: str = "{}", metadata: dict[str, str] | None = None, **msg: Any) -> End:
    engine = RuleEngine()
    engine.load(chain(template))
    ends = engine.tell_and_wait("c", RuleMsg(data=data, metadata=metadata or {}, **msg))
    assert len(ends) == 1
    return ends[0]


def out(template: str, data: str = "{}", **kw: Any) -> str:
    end = render(template, data, **kw)
    assert end.relation == "Success", end.error
    return end.msg.data


def clean(s: str) -> str:
    return re.sub(r"\s", "", s)  # RuleGo's assert.EqualCleanString


RULEGO_TEMPLATE = """
id:{{ .id}}
ts:{{ .ts}}
type:{{ .type}}
msgType:{{ .msgType}}
data:{{ .data}}
msg.name:{{ .msg.name}}
dataType:{{ .dataType}}
productType:{{ .metadata.productType}}
nameList:
{{- range .msg.nameList }}
  - {{ . }}
{{- end }}
"""
RULEGO_MSG = {"id": "226a05f1-9464-43b6-881e-b1629f1b030d", "ts": 1719024872741, "type": "ACTIVITY_EVENT",
              "data": '{"name":"aa","nameList":["aa","bb"],"temperature":60,"humidity":30}',
              "metadata": {"productType": "test"}}
RULEGO_RESULT = """id:226a05f1-9464-43b6-881e-b1629f1b030d ts:1719024872741 type:ACTIVITY_EVENT
msgType:ACTIVITY_EVENT data:{"name":"aa","nameList":["aa","bb"],"temperature":60,"humidity":30}
msg.name:aa dataType:JSON productType:test nameList: - aa - bb"""


def test_rulego_template_node_test_inline_and_from_a_file(tmp_path: Path) -> None:
    """rulego components/transform/template_node_test.go OnMsg: the same template inline and as `file:`."""
    path = tmp_path / "template_node_test.tpl"
    path.write_text(RULEGO_TEMPLATE.lstrip("\n"), encoding="utf-8")
    for template in (RULEGO_TEMPLATE, f"file:{path}"):
        assert clean(out(template, **RULEGO_MSG)) == clean(RULEGO_RESULT)


def test_the_issue_items() -> None:
    """Issue 24: printf verbs, else if, sorted map keys, non-ASCII literals, pipelines into printf,
    every builtin loads."""
    assert out('{{printf "%.2f" .msg.pi}}', '{"pi": 3.14159}') == "3.14"
    assert out("{{if .msg.a}}A{{else if .msg.b}}B{{else}}C{{end}}", '{"a": false, "b": true}') == "B"
    assert out("{{range $k, $v := .msg}}{{$k}}={{$v}};{{end}}", '{"b": 2, "c": 3, "a": 1}') == "a=1;b=2;c=3;"
    assert out("{{.msg}}", '{"b": 2, "a": {"y": 1, "x": 0}}') == "map[a:map[x:0 y:1] b:2]"
    assert out("Grüße, {{.msg.who}} ✓ {{\"日本語\"}}", '{"who": "Zoë"}') == "Grüße, Zoë ✓ 日本語"
    assert out('{{.msg.n | printf "%05.1f"}}|{{.msg.s | printf "%q"}}', '{"n": 2.5, "s": "x"}') == '002.5|"x"'
    every = ('{{and 1 2}} {{or 0 "x"}} {{not false}} {{len .msg.l}} {{index .msg.l 1}} {{slice .msg.l 1}} '
             '{{print 1 2}} {{println "a"}} {{printf "%d" 3}} {{html "<b>"}} {{js "it\'s"}} '
             '{{urlquery "a b"}} {{eq 1 1}} {{ne 1 2}} {{lt 1 2}} {{le 2 2}} {{gt 3 2}} {{ge 2 3}}')
    assert out(every, '{"l": ["p", "q", "r"]}') == ("2 x true 3 q [q r] 1 2 a\n 3 &lt;b&gt; it\\'s a+b "
                                                    "true true true true true false")


def test_json_numbers_are_float64_as_in_go() -> None:
    """RuleGo decodes the message with encoding/json: every number is a float64, printed as Go prints it,
    compared only with floats, and `%d` is a bad verb for it."""
    data = '{"n": 42, "big": 1000000, "small": 0.00001, "half": 2.5}'
    assert out("{{.msg.n}} {{.msg.big}} {{.msg.small}} {{.msg.half}}", data) == "42 1e+06 1e-05 2.5"
    assert out('{{printf "%T %v %d" .msg.n .msg.n .msg.n}}', data) == "float64 42 %!d(float64=42)"
    assert out("{{if gt .msg.n 40.0}}hot{{end}}", data) == "hot"
    end = render("{{if gt .msg.n 40}}hot{{end}}", data)
    assert end.relation == "Failure"
    assert "error calling gt: incompatible types for comparison: float64 and int" in (end.error or "")
    assert out('{{.ts}} {{printf "%T %d" .ts .ts}} {{gt .ts 5}}', ts=1719024872741) == \
        "1719024872741 int64 1719024872741 true"
    assert "incompatible types for comparison: int64 and float64" in (render("{{gt .ts 5.0}}").error or "")


def test_missing_keys_nulls_and_metadata() -> None:
    data = '{"nul": null, "list": [1, null]}'
    assert out("{{.msg.nope}}|{{.msg.nul}}|{{.metadata.nope}}|{{print .msg.nope}}|{{.msg.list}}", data) == \
        "<no value>|<no value>|<no value>|<nil>|[1 <nil>]"
    # metadata is a map[string]string: index gives its zero, ""; a JSON object gives no value
    assert out('[{{index .metadata "nope"}}] [{{index .msg "nope"}}]', data) == "[] [<no value>]"
    assert out("{{.metadata}}", metadata={"b": "2", "a": "1"}) == "map[a:1 b:2]"


def test_type_msgtype_datatype_and_text_messages() -> None:
    got = out("{{.type}}/{{.msgType}}/{{.dataType}}/{{.msg}}", "plain words", type="EV", data_type="TEXT")
    assert got == "EV/EV/TEXT/plain words"
    assert out("{{.msg}}", "not json {", type="EV") == "not json {"
    # what encoding/json makes of a JSON string and of an integer past 64 bits
    assert out("{{.msg}}", '"quoted"') == "quoted"
    assert out("{{.msg}}", "123456789012345678901234") == "1.2345678901234569e+23"


def test_an_upstream_nodes_output() -> None:
    doc = {"ruleChain": {"id": "refs"}, "metadata": {"nodes": [
        {"id": "first", "type": "exprTransform", "configuration": {"mapping": {"v": "msg.v + 1"}}},
        {"id": "t", "type": "text/template",
         "configuration": {"template": "{{.first.msg.v}} {{printf \"%T\" .first.msg.v}} {{.msg.v}}"}}],
        "connections": [{"fromId": "first", "toId": "t", "type": "Success"}]}}
    engine = RuleEngine()
    engine.load(doc)
    ends = engine.tell_and_wait("refs", RuleMsg(data='{"v": 1}'))
    assert ends[0].msg.data == "2 float64 2"


def test_a_template_that_does_not_parse_fails_to_load_with_its_position() -> None:
    with pytest.raises(ChainLoadError) as ei:
        RuleEngine().load(chain("line one\n{{if .msg.a}}\nthree {{ .msg.b | nosuch }}{{end}}"))
    assert ei.value.errors == [("$.metadata.nodes[0].configuration.template",
                                'template: template:3: function "nosuch" not defined (text/template)')]
    with pytest.raises(ChainLoadError, match=r"template: template:1: unexpected EOF"):
        RuleEngine().load(chain("{{range .msg.l}}"))


def test_a_template_that_fails_fails_the_node_and_keeps_the_data() -> None:
    end = render("ok {{index .msg.l 5}}", '{"l": [1]}')
    assert end.relation == "Failure"
    assert end.error == ('template: template:1:5: executing "template" at <index .msg.l 5>: '
                         "error calling index: index out of range: 5")
    assert end.msg.data == '{"l": [1]}'


def test_file_templates_are_named_after_the_file(tmp_path: Path) -> None:
    path = tmp_path / "alert.tpl"
    path.write_text("{{.msg.a.b}}", encoding="utf-8")
    end = render(f"file:{path}", '{"a": "text"}')
    assert end.error == ('template: alert.tpl:1:6: executing "alert.tpl" at <.msg.a.b>: '
                         "can't evaluate field b in type interface {}")
    with pytest.raises(ChainLoadError) as ei:
        RuleEngine().load(chain(f"file:{tmp_path / 'missing.tpl'}"))
    path_, message = ei.value.errors[0]
    assert path_ == "$.metadata.nodes[0].configuration.template"
    assert message.startswith(f"open {tmp_path / 'missing.tpl'}: No such file or directory")


def test_define_template_block_and_rulego_escape() -> None:
    tmpl = ('{{define "row"}}<{{.}}>{{end}}{{range .msg.l}}{{template "row" .}}{{end}}'
            '{{block "tail" .msg.n}}[{{.}}]{{end}} "{{.data | escape}}"')
    assert out(tmpl, '{"l": ["a", "b"], "n": 1}') == '<a><b>[1] "{\\"l\\": [\\"a\\", \\"b\\"], \\"n\\": 1}"'
