"""RuleGo's execute and notify routes (rulego-server internal/controller/rule.go Execute, PostMsg; its
query parameters from rulego server/internal/constants): the answer is the out message's data, failures
are 400 with the error text, RuleGo's own parameters steer the message and never reach its metadata."""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from .rulego_shapes import RULE_MSG, has_shape


def path_chain() -> dict[str, Any]:
    """a -> b -> c, each appending its id to msg.p and echoing the metadata it saw into msg.meta."""
    def step(nid: str) -> dict[str, Any]:
        return {"id": nid, "type": "jsTransform", "configuration": {"jsScript":
                f"msg.p = (msg.p || '') + '{nid}'; msg.meta = metadata; "
                "return {msg: msg, metadata: metadata, msgType: msgType};"}}
    return {"ruleChain": {"id": "path", "name": "Path"},
            "metadata": {"nodes": [step("a"), step("b"), step("c"),
                                   {"id": "fail", "type": "jsTransform", "configuration": {
                                       "jsScript": "throw new Error('no way: ' + msg.p);"}}],
                         "connections": [{"fromId": "a", "toId": "b", "type": "Success"},
                                         {"fromId": "b", "toId": "c", "type": "Success"}]}}


def test_execute_answers_the_out_message_data_as_json(serve: Any) -> None:
    srv = serve({"path.json": path_chain()})
    r = httpx.post(srv.url + "/api/v1/rules/path/execute/T?room=kitchen", json={"n": 1})
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    out = r.json()
    assert (out["p"], out["n"], out["meta"]) == ("abc", 1, {"room": "kitchen"})

    # a body that is not JSON is TEXT data: the script sees a string, and RuleGo's answer is its data
    script = "return {msg: msg + '!', metadata: metadata, msgType: dataType};"
    echo = {"ruleChain": {"id": "echo"}, "metadata": {"nodes": [{"id": "e", "type": "jsTransform",
                                                                 "configuration": {"jsScript": script}}]}}
    assert httpx.post(srv.url + "/api/v1/rules/echo", json=echo).status_code == 200
    text = httpx.post(srv.url + "/api/v1/rules/echo/execute/T?_ends=true", content=b"plain words").json()
    assert (text["ends"][0]["msg"]["data"], text["ends"][0]["msg"]["type"]) == ("plain words!", "TEXT")


def test_a_failure_is_400_with_the_error_text(serve: Any) -> None:
    srv = serve({"path.json": path_chain()})
    r = httpx.post(srv.url + "/api/v1/rules/path/execute/T?_fromNodeId=fail", json={"p": "x"})
    assert (r.status_code, r.text) == (400, "Error: no way: x")
    assert r.headers["content-type"].startswith("text/plain")
    assert httpx.post(srv.url + "/api/v1/rules/nope/execute/T", json={}).status_code == 404
    unknown = httpx.post(srv.url + "/api/v1/rules/path/execute/T?_fromNodeId=zz", json={})
    assert unknown.status_code == 400 and "node id=zz not found" in unknown.text


def test_ends_opt_in_gives_every_branch(serve: Any) -> None:
    srv = serve({"path.json": path_chain()})
    r = httpx.post(srv.url + "/api/v1/rules/path/execute/T?_ends=true&x=1", json={})
    (end,) = r.json()["ends"]
    assert end["relation"] == "Success" and end["error"] is None
    assert has_shape(end["msg"], RULE_MSG)
    assert end["msg"]["metadata"] == {"x": "1"}  # `_ends` is no metadata either


def test_rulegos_query_parameters_are_honoured_and_never_metadata(serve: Any) -> None:
    srv = serve({"path.json": path_chain()})
    u = srv.url + "/api/v1/rules/path/execute/T"
    params = {"_msgId": "m-42", "_fromNodeId": "b", "_headersToMetadata": "true", "_debugMode": "true",
              "room": "lab", "_ends": "true"}
    (end,) = httpx.post(u, params=params, json={}, headers={"X-Device": "d1", "Authorization": "Bearer k",
                                                            "Cookie": "c=1"}).json()["ends"]
    msg = end["msg"]
    assert msg["id"] == "m-42"
    out = json.loads(msg["data"])
    assert out["p"] == "bc"  # entered at b
    meta = out["meta"]
    assert meta["room"] == "lab" and meta["X-Device"] == "d1"  # Go's canonical header names
    assert not [k for k in meta if k.startswith("_")]
    assert "Authorization" not in meta and "Cookie" not in meta  # credentials never become metadata

    only = httpx.post(u, params={"_onlyNodeId": "b"}, json={"p": ">"}).json()
    assert only["p"] == ">b"  # b alone: its Success ended the branch
    plain = httpx.post(u, params={"room": "x"}, json={}, headers={"X-Device": "d1"}).json()
    assert "X-Device" not in plain["meta"]  # headers only when asked

    # The parameter names of RuleGo's server of the UI's generation: msgId, headersToMetadata (kept in
    # the metadata, as that server kept them)
    (old,) = httpx.post(u, params={"msgId": "m-7", "headersToMetadata": "true", "_ends": "true"}, json={},
                        headers={"X-Device": "d2"}).json()["ends"]
    assert old["msg"]["id"] == "m-7"
    assert json.loads(old["msg"]["data"])["meta"]["X-Device"] == "d2"


def test_notify_answers_at_once_and_runs_the_message(serve: Any) -> None:
    marker = {"ruleChain": {"id": "mark", "name": "Mark"},
              "metadata": {"nodes": [{"id": "d", "type": "delay", "configuration": {"delayMs": 5000}},
                                     {"id": "log", "type": "log",
                                      "configuration": {"jsScript": "return 'x';"}}],
                           "connections": [{"fromId": "d", "toId": "log", "type": "Success"}]}}
    srv = serve({"mark.json": marker})
    r = httpx.post(srv.url + "/api/v1/rules/mark/notify/T?_debugMode=true&_msgId=bg-1", json={})
    assert (r.status_code, r.content) == (200, b"")
    # answered while the message still waits in its 5 s delay: its run log (written at its end) is not there
    assert httpx.get(srv.url + "/api/v1/logs/runs", params={"chainId": "mark"}).json()["total"] == 0
    deadline = time.monotonic() + 30
    while True:  # its run log appears once it ended (test_rulego_logs.py has the log's shape)
        logs = httpx.get(srv.url + "/api/v1/logs/runs", params={"chainId": "mark"}).json()
        if logs["total"]:
            break
        assert time.monotonic() < deadline, "the notified message never ran"
        time.sleep(0.1)
    assert logs["items"][0]["additionalInfo"]["msg"]["id"] == "bg-1"
    assert [log["nodeId"] for log in logs["items"][0]["logs"]] == ["d", "log"]
