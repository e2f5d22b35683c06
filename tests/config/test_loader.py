"""Loading agent documents: the spec's examples, YAML, defaults, unknown fields, error paths."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

from chainreact.config import AgentConfig, ToolDescriptor, UnknownFieldWarning, json_schema, load_document
from chainreact.errors import ConfigError

EXAMPLES = Path(__file__).parent / "spec_examples"


@pytest.mark.parametrize("name", ["basic", "workspace", "multi_tool", "failover"])
def test_spec_examples_load_unchanged(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no unknown-field warnings either
        doc = load_document(EXAMPLES / f"{name}.json")
    raw = json.loads((EXAMPLES / f"{name}.json").read_text())
    body = raw.get("configuration", raw)
    assert doc.config.model_dump(include=set(body)) == AgentConfig.model_validate(body).model_dump(
        include=set(body))
    assert doc.config.model == body["model"]
    assert doc.source is not None and doc.source.endswith(f"{name}.json")


def test_basic_example_values() -> None:
    doc = load_document(EXAMPLES / "basic.json")
    c = doc.config
    assert (doc.id, doc.name) == ("node_agent", "Assistant")
    assert (c.url, c.model, c.maxStep) == ("https://ai.gitee.com/v1", "deepseek-chat", 100)
    assert c.tools == ["bash", "read", "write"]
    assert (c.params.temperature, c.params.topP) == (0.7, 0.9)
    # defaults from the node's table
    assert (c.maxToolOutputLength, c.maxRetries, c.streamRetryMode, c.streamToolCallCheck) == (
        50000, 3, "off", "")
    assert (c.circuitCooldownSec, c.params.frequencyPenalty, c.params.presencePenalty) == (60, 0.5, 0.5)
    assert (c.params.maxTokens, c.params.responseFormat, c.params.keepThink) == (0, "text", False)


def test_mixed_tools_and_failover() -> None:
    multi = load_document(EXAMPLES / "multi_tool.json").config
    kinds = [t.type if isinstance(t, ToolDescriptor) else t for t in multi.tools]
    assert kinds == ["builtin", "builtin", "builtin", "builtin", "mcp", "agent"]
    assert multi.tools[0].config == {"workDir": "${global.root_dir}/project", "timeout": 60000}
    fo = load_document(EXAMPLES / "failover.json").config
    assert [f.url for f in fo.failover] == ["https://api.backup1.com/v1", "https://api.backup2.com/v1"]
    assert fo.failover[1].model == "" and fo.failover[1].params is None
    assert fo.maxRetries == 2


def test_explicit_zero_is_zero(tmp_path: Path) -> None:
    p = tmp_path / "a.yaml"
    p.write_text("url: http://x/v1\nparams:\n  temperature: 0\n  topP: 0\n  frequencyPenalty: 0\n")
    c = load_document(p).config
    assert (c.params.temperature, c.params.topP, c.params.frequencyPenalty) == (0.0, 0.0, 0.0)
    assert "temperature" in c.params.model_fields_set


def test_yaml_node_document(tmp_path: Path) -> None:
    p = tmp_path / "agent.yml"
    p.write_text("id: n1\ntype: ai/agent\nname: Y\nconfiguration:\n  model: m\n  tools: [bash]\n")
    doc = load_document(p)
    assert (doc.id, doc.name, doc.config.model, doc.config.tools) == ("n1", "Y", "m", ["bash"])


_FOREIGN = {"id": "x", "type": "ai/agent", "configuration": {
    "model": "m", "futureThing": 1, "maxSteps": 3, "params": {"temprature": 0.1},
    "tools": [{"type": "builtin", "name": "bash", "sandbox": True}]}, "extra": 1}


def test_unknown_fields_are_errors_with_their_paths_and_the_closest_field() -> None:
    with pytest.raises(ConfigError) as e:
        load_document(_FOREIGN)
    assert e.value.errors == [
        ("$.configuration.futureThing", "unknown field"),
        ("$.configuration.maxSteps", "unknown field (did you mean 'maxStep'?)"),
        ("$.configuration.params.temprature", "unknown field (did you mean 'temperature'?)"),
        ("$.configuration.tools[0].sandbox", "unknown field"),
        ("$.extra", "unknown field"),
    ]
    assert "unknownFields" in str(e.value)  # the way out, for documents that carry foreign fields


@pytest.mark.parametrize("how", ["loader", "document"])
def test_lenient_unknown_fields_warn_with_their_paths(how: str) -> None:
    data = json.loads(json.dumps(_FOREIGN))
    if how == "document":
        data["configuration"]["unknownFields"] = "warn"
    with pytest.warns(UnknownFieldWarning) as rec:
        doc = load_document(data, lenient=how == "loader")
    msg = str(rec[0].message)
    for path in ("$.configuration.futureThing", "$.configuration.params.temprature",
                 "$.configuration.tools[0].sandbox", "$.extra"):
        assert path in msg
    assert doc.config.model == "m" and doc.config.maxStep == 50


def test_errors_name_file_path_and_expectation(tmp_path: Path) -> None:
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"id": "n", "type": "ai/agent", "configuration": {
        "maxStep": "many", "params": {"temperature": 5}, "streamRetryMode": "sometimes",
        "tools": ["bash", {"type": "teleport"}]}}))
    with pytest.raises(ConfigError) as ei:
        load_document(p)
    err = ei.value
    paths = dict(err.errors)
    assert set(paths) == {"$.configuration.maxStep", "$.configuration.params.temperature",
                          "$.configuration.streamRetryMode", "$.configuration.tools[1].type"}
    assert "less than or equal to 2" in paths["$.configuration.params.temperature"]
    assert "'off' or 'full'" in paths["$.configuration.streamRetryMode"]
    assert str(p) in str(err)


def test_invalid_json_reports_line(tmp_path: Path) -> None:
    p = tmp_path / "broken.json"
    p.write_text('{\n  "model": "m",\n  "maxStep": ,\n}')
    with pytest.raises(ConfigError, match=r"broken.json: invalid JSON at line 3"):
        load_document(p)


def test_missing_file_and_wrong_node_type(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such file"):
        load_document(tmp_path / "nope.json")
    with pytest.raises(ConfigError, match=r"\$.type: expected 'ai/agent'"):
        load_document({"type": "ai/llm", "configuration": {}})


def test_json_schema_validates_the_examples() -> None:
    import jsonschema  # a dev dependency: a missing one must fail here, not skip

    schema = json_schema()
    for name in ("basic", "workspace", "multi_tool", "failover"):
        jsonschema.validate(json.loads((EXAMPLES / f"{name}.json").read_text()), schema)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"configuration": {"maxStep": "x"}, "type": "ai/agent"}, schema)


def test_is_local_url() -> None:
    from chainreact.config import is_local_url

    assert is_local_url("") and is_local_url(None) and is_local_url(" Local ")
    assert not is_local_url("http://127.0.0.1:8080/v1")


def test_yaml_skill_names_that_yaml_1_1_reads_as_booleans_load_as_names() -> None:
    from chainreact.config import load_document

    doc = load_document("model: m\nskills: [no, yes, on, off]\nparams:\n  keepThink: yes\n")
    assert doc.config.skills == ["no", "yes", "on", "off"]
    assert doc.config.params.keepThink is True  # typed booleans still take the YAML 1.1 words
