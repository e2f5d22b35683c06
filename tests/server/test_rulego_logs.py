"""RuleGo's logs (rulego-server internal/controller/run_log.go, internal/router/websocket.go, the shapes of
internal/service/debug_data.go and api/types RuleChainRunSnapshot) from the state store: a debug-mode
message's run log and node debug items, the live debug websocket."""

from __future__ import annotations

import json
import threading
from typing import Any

import httpx
from websockets.sync.client import connect

from .rulego_shapes import (
    DEBUG_DATA,
    DEBUG_PAGE,
    NODE_RUN_LOG,
    RULE_MSG,
    RUN_SNAPSHOT,
    WS_EVENT,
    chain_shape,
    has_shape,
)


def filter_chain() -> dict[str, Any]:
    return {"ruleChain": {"id": "hot", "name": "Hot"},
            "metadata": {"nodes": [
                {"id": "f", "type": "jsFilter", "configuration": {"jsScript": "return msg.t > 50;"}},
                {"id": "x", "type": "jsTransform", "configuration": {"jsScript":
                    "msg.alarm = true; return {msg: msg, metadata: metadata, msgType: msgType};"}}],
                "connections": [{"fromId": "f", "toId": "x", "type": "True"}]}}


def test_a_debug_message_leaves_a_run_log_in_rulegos_shape(serve: Any, store_url: str) -> None:
    srv = serve({"hot.json": filter_chain()}, state=store_url)
    u = srv.url + "/api/v1"
    # without debug mode nothing is logged (nor paid for)
    assert httpx.post(u + "/rules/hot/execute/T", json={"t": 60}).json() == {"t": 60, "alarm": True}
    assert httpx.get(u + "/logs/runs", params={"chainId": "hot"}).json()["total"] == 0

    r = httpx.post(u + "/rules/hot/execute/T?debugMode=true&msgId=m1", json={"t": 60})  # as RuleGo's UI sends
    assert r.json() == {"t": 60, "alarm": True}
    httpx.post(u + "/rules/hot/execute/T?_debugMode=true&_msgId=m2", json={"t": 10})
    page = httpx.get(u + "/logs/runs", params={"chainId": "hot"}).json()
    assert set(page) == {"page", "size", "total", "items"} and page["total"] == 2
    newest, older = page["items"]
    assert has_shape(newest, RUN_SNAPSHOT, {"additionalInfo"})
    assert newest["additionalInfo"]["msg"]["id"] == "m2" and older["additionalInfo"]["msg"]["id"] == "m1"
    chain_shape({"ruleChain": newest["ruleChain"], "metadata": newest["metadata"]})
    assert newest["startTs"] <= newest["endTs"]
    logs = older["logs"]
    assert [(log["nodeId"], log["relationType"]) for log in logs] == [("f", "True"), ("x", "Success")]
    for log in logs:
        assert has_shape(log, NODE_RUN_LOG)
        assert has_shape(log["inMsg"], RULE_MSG) and has_shape(log["outMsg"], RULE_MSG)
    assert json.loads(logs[1]["outMsg"]["data"]) == {"t": 60, "alarm": True}
    assert [log["relationType"] for log in newest["logs"]] == ["False"]  # 10 is not hot: f alone

    one = httpx.get(u + "/logs/runs", params={"id": older["id"], "chainId": "hot"}).json()
    assert one["id"] == older["id"] and one["logs"] == logs
    assert httpx.get(u + "/logs/runs", params={"id": older["id"]}).json()["id"] == older["id"]
    assert httpx.get(u + "/logs/runs", params={"id": "nope"}).status_code == 404

    # the playground lists it with the chain's past runs (one store, one run list)
    runs = httpx.get(srv.url + "/playground/api/chains/hot/runs").json()["items"]
    assert len(runs) == 2 and {r["status"] for r in runs} == {"done"}

    assert httpx.delete(u + "/logs/runs", params={"id": older["id"], "chainId": "hot"}).status_code == 200
    assert httpx.get(u + "/logs/runs", params={"chainId": "hot"}).json()["total"] == 1
    assert httpx.delete(u + "/logs/runs").status_code == 400  # neither id nor chainId
    assert httpx.delete(u + "/logs/runs", params={"chainId": "hot"}).status_code == 200
    assert httpx.get(u + "/logs/runs").json()["total"] == 0


def test_node_debug_items_newest_first_paged(serve: Any) -> None:
    srv = serve({"hot.json": filter_chain()})
    u = srv.url + "/api/v1"
    for t in (60, 70, 80):
        httpx.post(u + "/rules/hot/execute/T?_debugMode=true", json={"t": t})
    page = httpx.get(u + "/logs/debug", params={"chainId": "hot", "nodeId": "x", "page": 1, "size": 4}).json()
    assert set(page) == DEBUG_PAGE and (page["total"], page["current"], page["pageSize"]) == (6, 1, 4)
    items = page["items"]
    assert len(items) == 4 and all(has_shape(i, DEBUG_DATA, {"chainId"}) for i in items)
    assert [i["flowType"] for i in items] == ["OUT", "IN", "OUT", "IN"]
    assert json.loads(items[0]["msg"]["data"])["t"] == 80  # newest first
    assert items[0]["relationType"] == "Success" and items[0]["err"] == ""
    rest = httpx.get(u + "/logs/debug", params={"chainId": "hot", "nodeId": "x", "page": 2, "size": 4}).json()
    assert len(rest["items"]) == 2
    assert httpx.get(u + "/logs/debug", params={"chainId": "hot"}).json()["total"] == 0


def test_the_debug_websocket_sends_each_nodes_in_and_out(serve: Any) -> None:
    srv = serve({"hot.json": filter_chain()})
    ws_url = srv.url.replace("http://", "ws://") + "/api/v1/logs/ws/hot/client-1"
    got: list[dict[str, Any]] = []
    with connect(ws_url, open_timeout=10) as ws:
        def send() -> None:
            httpx.post(srv.url + "/api/v1/rules/hot/execute/T?debugMode=true", json={"t": 99})

        threading.Thread(target=send).start()
        while len(got) < 4:
            got.append(json.loads(ws.recv(timeout=10)))
    assert [(e["nodeId"], e["flowType"], e["relationType"]) for e in got] == \
        [("f", "IN", ""), ("f", "OUT", "True"), ("x", "IN", ""), ("x", "OUT", "Success")]
    for e in got:
        assert has_shape(e, WS_EVENT) and has_shape(e["msg"], RULE_MSG) and e["chainId"] == "hot"
    assert got[0]["ts"] > 1_600_000_000_000  # milliseconds
