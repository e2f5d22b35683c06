"""config.resolve: the one path from a document to the runtime configuration (issue 9 items 1, 4, 6, 17)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.config import load_document, resolve_agent_config, uses_embedded_model
from chainreact.errors import ConfigError


def node(**cfg: Any) -> dict[str, Any]:
    return {"id": "n1", "type": "ai/agent", "name": "A", "configuration": cfg}


G = {"p": {"url": "http://primary/v1", "key": "kp", "model": "mp"},
     "b": {"url": "http://backup/v1", "key": "kb", "model": "mb", "temp": "0.2"}}


def test_failover_endpoints_are_rendered_like_the_primary() -> None:
    doc = resolve_agent_config(node(
        url="${global.p.url}", key="${global.p.key}", model="${global.p.model}",
        failover=[{"url": "${global.b.url}", "key": "${global.b.key}", "model": "${global.b.model}",
                   "params": {"temperature": 0.2, "stop": ["${global.b.model}"]}},
                  {"url": "http://third/v1", "key": "k3"}],
    ), G)
    c = doc.config
    assert (c.url, c.key, c.model) == ("http://primary/v1", "kp", "mp")
    f0, f1 = c.failover
    assert (f0.url, f0.key, f0.model) == ("http://backup/v1", "kb", "mb")
    assert f0.params is not None and f0.params.temperature == 0.2 and f0.params.stop == ["mb"]
    # only the fields given are set, so the failover params still inherit the primary's others
    assert f0.params.model_fields_set == {"temperature", "stop"}
    assert (f1.url, f1.key) == ("http://third/v1", "k3")


def test_params_extra_fields_and_images_are_rendered() -> None:
    doc = resolve_agent_config(node(
        url="http://x/v1",
        params={"extraFields": {"reasoning_effort": "${global.effort}", "n": 1}, "jsonSchema": "${global.s}"},
        images=["${global.img}", "plain.png"],
    ), {"effort": "high", "s": '{"type": "object"}', "img": "http://img/cat.png"})
    c = doc.config
    assert c.params.extraFields == {"reasoning_effort": "high", "n": 1}
    assert c.params.jsonSchema == '{"type": "object"}'
    assert c.images == ["http://img/cat.png", "plain.png"]


@pytest.mark.parametrize("field", ["url", "key", "model"])
def test_undefined_variable_in_an_endpoint_field_is_an_error_naming_it(field: str, tmp_path: Path) -> None:
    cfg = {"url": "http://x/v1", "key": "k", "model": "m", field: "${global.models.nope}"}
    p = tmp_path / "agent.json"
    p.write_text(json.dumps(node(**cfg)))
    with pytest.raises(ConfigError) as e:
        resolve_agent_config(p, {"models": {"other": 1}})
    msg = str(e.value)
    assert "global.models.nope" in msg
    assert f"$.configuration.{field}" in msg and str(p) in msg
    assert e.value.errors[0][0] == f"$.configuration.{field}"


def test_undefined_variable_in_a_failover_key_is_an_error() -> None:
    with pytest.raises(ConfigError) as e:
        resolve_agent_config({"url": "http://x/v1", "failover": [{"url": "http://y/v1",
                                                                   "key": "${global.backup_key}"}]}, {})
    assert e.value.errors == [("$.failover[0].key", e.value.errors[0][1])]
    assert "global.backup_key" in e.value.errors[0][1]


def test_an_undefined_url_no_longer_falls_back_to_the_embedded_model() -> None:
    with pytest.raises(ConfigError, match=r"global\.url"):
        resolve_agent_config({"url": "${global.url}"}, {})


@pytest.mark.parametrize("where", ["url", "failover"])
def test_a_url_template_that_renders_empty_is_an_error_not_the_embedded_model(
        where: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CHAINREACT_TEST_LLM_URL", raising=False)
    template = "${env('CHAINREACT_TEST_LLM_URL')}"
    doc = ({"url": template} if where == "url"
           else {"url": "http://x/v1", "failover": [{"url": template}]})
    with pytest.raises(ConfigError) as e:
        resolve_agent_config(doc, {"url": ""})
    path = "$.url" if where == "url" else "$.failover[0].url"
    assert e.value.errors[0][0] == path
    assert "rendered empty" in e.value.errors[0][1] and template in e.value.errors[0][1]
    with pytest.raises(ConfigError, match="rendered empty"):
        resolve_agent_config({"url": "${global.url}"}, {"url": " "})  # a global given as nothing
    monkeypatch.setenv("CHAINREACT_TEST_LLM_URL", "http://127.0.0.1:9/v1")
    resolved = resolve_agent_config(doc).config
    assert "http://127.0.0.1:9/v1" in [resolved.url, *(f.url for f in resolved.failover)]
    # a template that says where to go when the variable is unset is followed
    fallback = resolve_agent_config({"url": "${env('CHAINREACT_TEST_NOPE', 'local')}"})
    assert uses_embedded_model(fallback.config)


@pytest.mark.parametrize("url", ["", "local", " LOCAL "])
def test_absent_or_local_url_means_the_embedded_model(url: str) -> None:
    assert uses_embedded_model(resolve_agent_config({"url": url}).config)
    assert not uses_embedded_model(resolve_agent_config({"url": "http://x/v1"}).config)


def test_a_resolved_document_is_not_rendered_twice() -> None:
    # A global's value that looks like a template is data: rendering it again would evaluate it.
    doc = resolve_agent_config({"url": "http://x/v1", "key": "${global.k}"}, {"k": "${env('HOME')}"})
    assert doc.config.key == "${env('HOME')}"
    assert resolve_agent_config(doc, {"k": "other"}).config.key == "${env('HOME')}"


def test_a_value_that_is_wholly_one_template_keeps_its_type() -> None:
    extra = {"thinking.budget_tokens": "${global.budget}", "flags": "${global.flags}",
             "label": "n=${global.budget}"}
    g = {"budget": 1024, "flags": [True, None], "schema": {"type": "object"}}
    doc = resolve_agent_config({"url": "http://x/v1",
                                "params": {"extraFields": extra, "jsonSchema": "${global.schema}"}}, g)
    assert doc.config.params.extraFields == {"thinking.budget_tokens": 1024, "flags": [True, None],
                                             "label": "n=1024"}
    assert doc.config.params.jsonSchema == {"type": "object"}


def test_a_typed_value_that_does_not_fit_its_field_is_an_error_with_the_path() -> None:
    with pytest.raises(ConfigError) as e:
        resolve_agent_config({"url": "http://x/v1", "failover": [{"url": "http://y/v1",
                                                                   "params": {"stop": ["${global.n}"]}}]},
                             {"n": 5})
    assert e.value.errors[0][0] == "$.failover[0].params.stop[0]"


def test_an_undefined_top_level_name_is_named_too() -> None:
    with pytest.raises(ConfigError, match="globl"):
        resolve_agent_config({"url": "${globl.url}"}, {"url": "http://x/v1"})


def test_a_template_syntax_error_names_the_field() -> None:
    with pytest.raises(ConfigError) as e:
        resolve_agent_config({"url": "http://x/v1", "model": "${global.}"}, {})
    assert e.value.errors[0][0] == "$.model"


def test_cli_says_once_that_the_embedded_model_is_used(tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    from chainreact.cli.agent_cmds import resolve_document

    p = tmp_path / "a.json"
    p.write_text(json.dumps({"url": "local"}))
    doc, _ = resolve_document(argparse.Namespace(config=str(p), globals=[], globals_file=[]))
    err = capsys.readouterr().err
    assert err.count("using the embedded local model") == 1
    assert uses_embedded_model(doc.config)
    p.write_text(json.dumps({"url": "http://x/v1"}))
    resolve_document(argparse.Namespace(config=str(p), globals=[], globals_file=[]))
    assert capsys.readouterr().err == ""


def test_loaded_document_records_its_json_prefix(tmp_path: Path) -> None:
    assert load_document(node()).json_prefix == "$.configuration"
    assert load_document({"url": "x"}).json_prefix == "$"
