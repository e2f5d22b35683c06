"""RuleGo's component, shared-node, marketplace and locale routes (rulego-server internal/controller
node.go, marketplace.go, locale.go): every chainreact component as a RuleGo ComponentForm whose fields come
from its configuration model."""

from __future__ import annotations

from typing import Any

import httpx

from chainreact.chains.catalog import builtin_components
from chainreact.config import AgentConfig

from .rulego_shapes import COMPONENT_FORM, COMPONENTS, FORM_FIELD, PAGE, has_shape


def fields_of(form: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["name"]: f for f in form["fields"]}


def test_components_are_every_component_in_rulegos_form_shape(serve: Any) -> None:
    srv = serve({})
    body = httpx.get(srv.url + "/api/v1/components").json()
    assert set(body) == COMPONENTS and body["endpoints"] == [] and body["tools"] is None
    assert set(body["builtins"]) >= {"endpoints", "nodePool"}
    forms = {f["type"]: f for f in body["nodes"]}
    assert set(forms) == set(builtin_components())  # ai/agent and ai/llm included
    for form in forms.values():
        assert has_shape(form, COMPONENT_FORM)
        for field in form["fields"]:
            assert has_shape(field, FORM_FIELD), field
    # sorted as RuleGo's ComponentFormList.Values: category, then type
    assert [(f["category"], f["type"]) for f in body["nodes"]] == \
        sorted((f["category"], f["type"]) for f in body["nodes"])

    agent = fields_of(forms["ai/agent"])
    assert set(agent) == set(AgentConfig.model_fields)  # the agent document's fields
    assert "tools" not in fields_of(forms["ai/llm"])
    assert (agent["url"]["type"], agent["maxStep"]["type"], agent["parallelToolCalls"]["type"]) == \
        ("string", "int", "bool")
    assert agent["maxStep"]["defaultValue"] == 50 and agent["maxRetries"]["component"]["min"] == -1
    assert (agent["params"]["type"], agent["tools"]["type"], agent["failover"]["type"]) == \
        ("struct", "array", "array")
    assert "temperature" in {f["name"] for f in agent["params"]["fields"]}
    assert [o["value"] for o in agent["streamRetryMode"]["component"]["options"]] == ["off", "full"]
    assert forms["ai/agent"]["category"] == "ai" and "Stream" in forms["ai/agent"]["relationTypes"]

    js = fields_of(forms["jsFilter"])["jsScript"]
    assert (js["type"], js["required"]) == ("string", False)
    assert forms["jsFilter"]["relationTypes"] == ["True", "False", "Failure"]  # RuleGo's filter rule
    assert forms["switch"]["relationTypes"] == []  # a switch's relations are its own
    assert forms["restApiCall"]["relationTypes"] == ["Success", "Failure"]
    assert fields_of(forms["restApiCall"])["headers"]["defaultValue"] == {"Content-Type": "application/json"}
    assert fields_of(forms["exprTransform"])["mapping"]["type"] == "map"
    assert (forms["jsFilter"]["category"], forms["jsTransform"]["category"],
            forms["restApiCall"]["category"]) == ("filter", "transform", "external")


def test_shared_nodes_marketplace_and_dynamic_components_are_empty(serve: Any) -> None:
    srv = serve({})
    u = srv.url + "/api/v1"
    assert httpx.get(u + "/shared-nodes").json() == {}
    for path in ("/marketplace/components", "/marketplace/chains", "/dynamic-components"):
        page = httpx.get(u + path, params={"page": 2, "size": 5}).json()
        assert set(page) == PAGE and page == {"total": 0, "page": 2, "size": 5, "items": []}
    assert httpx.get(u + "/dynamic-components/x").status_code == 404


def test_locales_are_saved_and_read_back(serve: Any) -> None:
    srv = serve({})
    u = srv.url + "/api/v1/locales"
    assert httpx.get(u).json() == {}  # RuleGo: {} when there is no language pack
    pack = {"component": {"nodes": {"ai/agent": {"label": "AI agent"}}}}
    r = httpx.post(u, params={"lang": "en"}, json=pack)
    assert (r.status_code, r.content) == (200, b"")
    assert httpx.get(u, params={"lang": "en"}).json() == pack
    assert httpx.get(u).json() == {}  # zh_cn, RuleGo's default, untouched
    assert httpx.post(u, json=[1, 2]).status_code == 400
    assert httpx.get(u, params={"lang": "../x"}).status_code == 400
