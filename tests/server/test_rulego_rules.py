"""RuleGo's rule routes (rulego-server internal/controller/rule.go) as its web UI uses them: list, get,
latest, save, base, config, operate, delete; documents saved where they came from."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import yaml

from chainreact.server import Catalog, create_app

from .conftest import Served
from .rulego_shapes import PAGE, chain_shape


def doubler(chain_id: str = "echo", name: str = "Echo", **info: Any) -> dict[str, Any]:
    return {"ruleChain": {"id": chain_id, "name": name, **info},
            "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "configuration": {
                "jsScript": "msg.n = msg.n * 2; return {msg: msg, metadata: metadata, msgType: msgType};"}}],
                "connections": []}}


def test_list_and_get_in_rulegos_shapes_with_its_filters_and_paging(serve: Any) -> None:
    docs = {f"c{i}.json": doubler(f"c{i}", f"Chain {i}", root=i % 2 == 0) for i in range(5)}
    docs["secret.json"] = doubler("secret", "Secret", configuration={"secrets": {"token": "s3cret"}})
    srv = serve(docs)
    u = srv.url + "/api/v1/rules"
    page = httpx.get(u).json()
    assert set(page) == PAGE and (page["total"], page["page"], page["size"]) == (6, 1, 20)
    for item in page["items"]:
        chain_shape(item)  # today's UI bug: the items had no ruleChain ("reading 'id'")
    assert "s3cret" not in json.dumps(page)
    by_id = {i["ruleChain"]["id"]: i for i in page["items"]}
    assert by_id["secret"]["ruleChain"]["configuration"] == {"vars": {}}  # the UI reads configuration.vars

    def ids(**params: Any) -> list[str]:
        return [i["ruleChain"]["id"] for i in httpx.get(u, params=params).json()["items"]]

    assert ids(keywords="Chain 3") == ["c3"]
    assert sorted(ids(root="false")) == ["c1", "c3"]
    two = httpx.get(u, params={"page": 2, "size": 4}).json()
    assert (two["total"], two["page"], two["size"], len(two["items"])) == (6, 2, 4, 2)
    assert httpx.get(u, params={"disabled": "true"}).json()["items"] == []

    one = httpx.get(u + "/secret").json()
    chain_shape(one)
    assert one["ruleChain"]["id"] == "secret" and "s3cret" not in json.dumps(one)
    assert httpx.get(u + "/nope").status_code == 404


def test_save_writes_the_file_it_came_from_keeping_secrets_and_a_bad_dsl_changes_nothing(serve: Any,
                                                                                      tmp_path: Path) -> None:
    srv = serve({"echo.json": doubler(configuration={"secrets": {"token": "s3cret"}})})
    path = tmp_path / "served" / "echo.json"
    u = srv.url + "/api/v1/rules/echo"
    dsl = httpx.get(u).json()
    dsl["metadata"]["nodes"][0]["configuration"]["jsScript"] = (
        "msg.n = msg.n * 3; return {msg: msg, metadata: metadata, msgType: msgType};")
    dsl["metadata"]["nodes"][0]["additionalInfo"] = {"layoutX": 400, "layoutY": 200}
    r = httpx.post(u, json=dsl)
    assert (r.status_code, r.content) == (200, b"")  # RuleGo: 200, no body
    saved = json.loads(path.read_text())
    assert saved["ruleChain"]["configuration"]["secrets"] == {"token": "s3cret"}  # GET never sent them
    assert saved["metadata"]["nodes"][0]["additionalInfo"] == {"layoutX": 400, "layoutY": 200}
    assert {"createTime", "updateTime"} <= set(saved["ruleChain"]["additionalInfo"])
    assert httpx.post(u + "/execute/T", json={"n": 2}).json() == {"n": 6}
    assert not list(path.parent.glob(".echo.json.*"))  # no temp file left beside it

    before = path.read_text()
    bad = httpx.post(u, json={"ruleChain": {"id": "echo"},
                              "metadata": {"nodes": [{"id": "x", "type": "nope"}]}})
    assert bad.status_code == 400
    assert bad.json()["error"]["errors"][0]["path"] == "$.metadata.nodes[0].type"
    assert path.read_text() == before
    assert httpx.post(u + "/execute/T", json={"n": 2}).json() == {"n": 6}
    assert httpx.get(srv.url + "/api/v1/rules/x/latest").json()["ruleChain"]["id"] == "echo"


def test_a_yaml_chain_is_saved_as_yaml(serve: Any, tmp_path: Path) -> None:
    folder = tmp_path / "served"
    folder.mkdir()
    (folder / "echo.yaml").write_text(yaml.safe_dump(doubler()))
    srv = serve({})
    dsl = httpx.get(srv.url + "/api/v1/rules/echo").json()
    dsl["ruleChain"]["name"] = "Renamed"
    assert httpx.post(srv.url + "/api/v1/rules/echo", json=dsl).status_code == 200
    assert yaml.safe_load((folder / "echo.yaml").read_text())["ruleChain"]["name"] == "Renamed"


def test_a_new_chain_lives_in_the_state_store_and_survives_a_restart(tmp_path: Path, store_url: str) -> None:
    folder = tmp_path / "served"
    folder.mkdir()
    state = store_url

    def served() -> Served:
        return Served(create_app(Catalog.load([folder]), state=state))

    with served() as srv:
        u = srv.url + "/api/v1/rules/greeter"
        # RuleGo's UI creates an application with its base info only (create-app-modal.vue)
        created = httpx.post(u + "/base", json={"id": "greeter", "name": "Greeter", "root": True,
                                               "additionalInfo": {"description": "Says hello"}})
        assert (created.status_code, created.content) == (200, b"")
        empty = httpx.get(u).json()
        chain_shape(empty)
        assert empty["metadata"]["nodes"] == [] and empty["ruleChain"]["additionalInfo"]["description"] == \
            "Says hello"
        dsl = doubler("greeter", "Greeter")
        assert httpx.post(u, json=dsl).status_code == 200
        assert httpx.post(u + "/config/vars", json={"factor": 2}).status_code == 200
        assert list(folder.iterdir()) == []  # it came from no file: nothing written there
    with served() as srv:
        u = srv.url + "/api/v1/rules/greeter"
        dsl = httpx.get(u).json()
        assert dsl["ruleChain"]["configuration"]["vars"] == {"factor": 2}
        assert httpx.post(u + "/execute/T", json={"n": 4}).json() == {"n": 8}
        assert httpx.delete(u).status_code == 200
    with served() as srv:
        assert httpx.get(srv.url + "/api/v1/rules").json()["total"] == 0


def test_base_info_updates_keeping_nodes_and_merging_configuration(serve: Any, tmp_path: Path) -> None:
    srv = serve({"echo.json": doubler(configuration={"vars": {"a": 1}, "secrets": {"k": "v"}})})
    u = srv.url + "/api/v1/rules/echo"
    base = httpx.get(u).json()["ruleChain"]
    base.update(name="Doubler", debugMode=True, configuration={"vars": {"a": 2}},
                additionalInfo={**base["additionalInfo"], "description": "doubles n"})
    assert httpx.post(u + "/base", json=base).status_code == 200
    saved = json.loads((tmp_path / "served" / "echo.json").read_text())["ruleChain"]
    assert (saved["name"], saved["debugMode"], saved["additionalInfo"]["description"]) == \
        ("Doubler", True, "doubles n")
    assert saved["configuration"] == {"vars": {"a": 2}, "secrets": {"k": "v"}}
    assert httpx.post(u + "/execute/T", json={"n": 1}).json() == {"n": 2}  # its nodes kept
    assert httpx.post(u + "/base", json={"root": "yes"}).status_code == 400  # Go would not decode it


def test_operate_undeploy_refuses_messages_and_deploy_serves_again(serve: Any, tmp_path: Path) -> None:
    srv = serve({"echo.json": doubler()})
    path = tmp_path / "served" / "echo.json"
    u = srv.url + "/api/v1/rules/echo"
    assert httpx.post(u + "/operate/stop").content == b""
    assert json.loads(path.read_text())["ruleChain"]["disabled"] is True  # as RuleGo saves it
    listed = httpx.get(srv.url + "/api/v1/rules").json()["items"][0]["ruleChain"]
    assert listed["disabled"] is True
    refused = httpx.post(u + "/execute/T", json={"n": 1})
    assert refused.status_code == 400 and "stopped" in refused.text
    assert httpx.post(u + "/notify/T", json={"n": 1}).status_code == 400
    assert httpx.post(u + "/operate/set-to-main").status_code == 400  # deploy it first

    assert httpx.post(u + "/operate/start").status_code == 200
    assert json.loads(path.read_text())["ruleChain"]["disabled"] is False
    assert httpx.post(u + "/execute/T", json={"n": 1}).json() == {"n": 2}
    assert httpx.post(u + "/operate/set-to-main").status_code == 200
    bad = httpx.post(u + "/operate/dance")
    assert bad.status_code == 400 and "dance" in bad.text
    assert httpx.post(srv.url + "/api/v1/rules/nope/operate/start").status_code == 404


def test_delete_removes_the_chain_and_its_file(serve: Any, tmp_path: Path) -> None:
    srv = serve({"echo.json": doubler(), "keep.json": doubler("keep")})
    assert httpx.delete(srv.url + "/api/v1/rules/echo").content == b""
    assert sorted(p.name for p in (tmp_path / "served").iterdir()) == ["keep.json"]
    assert httpx.get(srv.url + "/api/v1/rules/echo").status_code == 404
    assert httpx.delete(srv.url + "/api/v1/rules/echo").status_code == 404
