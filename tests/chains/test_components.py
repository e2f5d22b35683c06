"""Components beyond the RuleGo cases: restApiCall against a local server, text/template, join with a
failing branch, for over a sub-chain, log, delay limits."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from chainreact.chains import RuleEngine, RuleMsg
from chainreact.testing import FakeLLM


def one_node(node_type: str, config: dict[str, Any], chain_id: str = "c") -> dict[str, Any]:
    return {"ruleChain": {"id": chain_id}, "metadata": {"nodes": [
        {"id": "n", "type": node_type, "configuration": config}]}}


async def test_rest_api_call_success_failure_stream_and_templates() -> None:
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}]})
    async with FakeLLM([{"text": "hello"}, {"text": "a b c", "chunks": 3}], model="m") as srv:
        engine = RuleEngine()
        engine.load(one_node("restApiCall", {
            "restEndpointUrlPattern": srv.url + "/chat/completions", "requestMethod": "POST",
            "headers": {"Content-Type": "application/json", "Token": "${metadata.token}"}}, "ok"))
        ok = await engine.run("ok", RuleMsg(type="T", data=body, metadata={"token": "t1"}))
        engine.load(one_node("restApiCall", {"restEndpointUrlPattern": srv.url + "/${metadata.path}",
                                             "requestMethod": "GET"}, "missing"))
        missing = await engine.run("missing", RuleMsg(type="T", data="", metadata={"path": "nothing"}))
        engine.load(one_node("restApiCall", {
            "restEndpointUrlPattern": srv.url + "/chat/completions",
            "headers": {"Content-Type": "application/json", "Accept": "text/event-stream"}}, "sse"))
        stream_body = json.dumps({**json.loads(body), "stream": True})
        sse = await engine.run("sse", RuleMsg(type="T", data=stream_body))
    assert [e.relation for e in ok] == ["Success"]
    assert json.loads(ok[0].msg.data)["choices"][0]["message"]["content"] == "hello"
    assert ok[0].msg.metadata["status"] == "200 OK" and ok[0].msg.metadata["statusCode"] == "200"
    assert srv.chat_requests[0].headers["token"] == "t1"
    assert [e.relation for e in missing] == ["Failure"]
    assert missing[0].msg.metadata["statusCode"] == "404"
    assert "nothing" in missing[0].msg.metadata["errorBody"] and missing[0].error
    assert {e.relation for e in sse} == {"Success"} and len(sse) >= 4
    assert all(e.msg.metadata["eventType"] == "data" for e in sse)
    assert sse[-1].msg.data == "[DONE]"


def test_rest_api_call_network_error_is_failure_with_error_body() -> None:
    engine = RuleEngine()
    engine.load(one_node("restApiCall", {"restEndpointUrlPattern": "http://127.0.0.1:9/x",
                                         "readTimeoutMs": 500}))
    ends = engine.tell_and_wait("c", RuleMsg(type="T", data="{}"))
    assert [e.relation for e in ends] == ["Failure"]
    assert ends[0].msg.metadata["errorBody"] and ends[0].error


def test_text_template_fields_pipes_and_blocks() -> None:
    tmpl = ('{{.msgType}} {{.msg.name | upper}} {{if .metadata.vip}}VIP{{else}}std{{end}}'
            '{{range .msg.tags}} #{{.}}{{end}} {{printf "%v-%v" .msg.n .dataType}} "{{.data | escape}}"')
    engine = RuleEngine()
    engine.load(one_node("text/template", {"template": tmpl}))
    data = '{"name":"ann","tags":["a","b"],"n":3}'
    ends = engine.tell_and_wait("c", RuleMsg(type="EV", data=data, metadata={"vip": "1"}))
    assert ends[0].msg.data == ('EV ANN VIP #a #b 3-JSON '
                                '"{\\"name\\":\\"ann\\",\\"tags\\":[\\"a\\",\\"b\\"],\\"n\\":3}"')


def test_text_template_errors_at_load() -> None:
    from chainreact.chains import ChainLoadError

    with pytest.raises(ChainLoadError) as ei:
        RuleEngine().load(one_node("text/template", {"template": "{{ nosuchfn .x }}"}))
    assert ei.value.errors == [("$.metadata.nodes[0].configuration.template",
                                'template: template:1: function "nosuchfn" not defined (text/template)')]


def test_join_with_a_failing_branch_is_failure_with_node_errors() -> None:
    doc = {"ruleChain": {"id": "j"}, "metadata": {"nodes": [
        {"id": "f", "type": "fork"},
        {"id": "ok", "type": "jsTransform", "configuration": {
            "jsScript": "metadata.ok = '1'; return {msg: msg, metadata: metadata};"}},
        {"id": "bad", "type": "jsTransform", "configuration": {"jsScript": "throw new Error('nope');"}},
        {"id": "j", "type": "join", "configuration": {"timeout": 5}}],
        "connections": [{"fromId": "f", "toId": "ok", "type": "Success"},
                        {"fromId": "f", "toId": "bad", "type": "Success"},
                        {"fromId": "ok", "toId": "j", "type": "Success"},
                        {"fromId": "bad", "toId": "j", "type": "Failure"}]}}
    engine = RuleEngine()
    engine.load(doc)
    ends = engine.tell_and_wait("j", RuleMsg(type="T", data="{}"))
    assert [e.relation for e in ends] == ["Failure"]
    assert "NodeId=bad,Err=Error: nope" in (ends[0].error or "")
    items = json.loads(ends[0].msg.data)
    assert {i["nodeId"] for i in items} == {"ok", "bad"}
    assert ends[0].msg.metadata["ok"] == "1"


def test_for_over_a_sub_chain_merges_results() -> None:
    sub = one_node("exprTransform", {"expr": "msg * 10"}, "times10")
    doc = {"ruleChain": {"id": "loop"}, "metadata": {"nodes": [
        {"id": "for", "type": "for", "configuration": {"range": "msg.items", "do": "chain:times10",
                                                      "mode": 1}}]}}
    engine = RuleEngine()
    engine.load(sub)
    engine.load(doc)
    ends = engine.tell_and_wait("loop", RuleMsg(type="T", data='{"items": [1, 2, 3]}'))
    assert [e.relation for e in ends] == ["Success"]
    assert json.loads(ends[0].msg.data) == [10, 20, 30]
    assert ends[0].msg.metadata["_loopIndex"] == "2"


def test_log_writes_the_script_text(caplog: Any) -> None:
    engine = RuleEngine()
    engine.load(one_node("log", {"jsScript": "return 'seen ' + msg.a + ' ' + metadata.k;"}))
    with caplog.at_level(logging.INFO, logger="chainreact.chains"):
        ends = engine.tell_and_wait("c", RuleMsg(type="T", data='{"a": 1}', metadata={"k": "v"}))
    assert [e.relation for e in ends] == ["Success"]
    assert "seen 1 v" in caplog.text


def test_unknown_template_function_and_node_output_reference() -> None:
    doc = {"ruleChain": {"id": "refs"}, "metadata": {"nodes": [
        {"id": "first", "type": "exprTransform", "configuration": {"mapping": {"v": "msg.v + 1"}}},
        {"id": "second", "type": "exprTransform", "configuration": {"expr": "${first.msg.v} * 100 + msg.v"}}],
        "connections": [{"fromId": "first", "toId": "second", "type": "Success"}]}}
    engine = RuleEngine()
    engine.load(doc)
    ends = engine.tell_and_wait("refs", RuleMsg(type="T", data='{"v": 1}'))
    assert ends[0].msg.data == "202"


def test_delay_limits_zero_and_overwrite() -> None:
    import asyncio

    engine = RuleEngine()
    engine.load(one_node("delay", {"delayMs": "300", "maxPendingMsgs": 1}, "one"))
    engine.load(one_node("delay", {"delayMs": "0"}, "zero"))
    engine.load(one_node("delay", {"delayMs": "300", "overwrite": True}, "ow"))

    async def main() -> tuple[list[Any], list[Any], list[Any], list[Any]]:
        first = engine.tell("one", RuleMsg(type="T", data="a"))
        await asyncio.sleep(0.05)
        second = await engine.run("one", RuleMsg(type="T", data="b"))
        zero = await engine.run("zero", RuleMsg(type="T", data="z"))
        ow1 = engine.tell("ow", RuleMsg(type="T", data="old"))
        await asyncio.sleep(0.05)
        ow2 = await engine.run("ow", RuleMsg(type="T", data="new"))
        return [await first, second], zero, await ow1, ow2

    limited, zero, ow1, ow2 = asyncio.run(main())
    assert [e.relation for e in limited[0]] == ["Success"]
    assert [(e.relation, e.error) for e in limited[1]] == [("Failure", "max limit of pending messages")]
    assert [(e.relation, e.error) for e in zero] == [("Failure", "no delay time configured")]
    assert [(e.relation, e.msg.data) for e in ow1] == [("Success", "new")]
    assert ow2 == []


def _group_chain(kind: str, config: dict[str, Any], members: list[dict[str, Any]]) -> dict[str, Any]:
    return {"ruleChain": {"id": "g"}, "metadata": {"nodes": [
        {"id": "grp", "type": kind, "configuration": config}, *members]}}


def test_group_action_settles_early_and_merges_to_map() -> None:
    import time

    fast = [{"id": f"m{i}", "type": "jsTransform", "configuration": {"jsScript":
             f"metadata.m{i} = 'y'; return {{msg: {{v{i}: {i}}}, metadata: metadata}};"}} for i in range(2)]
    slow = {"id": "slow", "type": "delay", "configuration": {"delayMs": 30000}}
    engine = RuleEngine()
    engine.load(_group_chain("groupAction", {"nodeIds": "m0,m1,slow", "matchNum": 2, "mergeToMap": True},
                             [*fast, slow]))
    t0 = time.monotonic()
    ends = engine.tell_and_wait("g", RuleMsg(type="T", data="{}"))
    assert time.monotonic() - t0 < 10  # did not wait for the slow member (30 s)
    assert [e.relation for e in ends] == ["Success"]
    assert json.loads(ends[0].msg.data) == {"v0": 0, "v1": 1}
    assert ends[0].msg.metadata["m0"] == "y" and ends[0].msg.metadata["m1"] == "y"
    engine.load(_group_chain("groupAction", {"nodeIds": ["m0", "m1"], "matchRelationType": "False"}, fast))
    ends = engine.tell_and_wait("g", RuleMsg(type="T", data="{}"))
    assert [e.relation for e in ends] == ["Failure"] and ends[0].error is None
    items = json.loads(ends[0].msg.data)
    assert [i["nodeId"] for i in items] == ["m0", "m1"] and items[0]["msg"]["metadata"] == {}


def test_group_filter_any_true_early_and_timeout() -> None:
    members = [{"id": "t", "type": "exprFilter", "configuration": {"expr": "true"}},
               {"id": "slow", "type": "delay", "configuration": {"delayMs": 3000}}]
    engine = RuleEngine()
    engine.load(_group_chain("groupFilter", {"nodeIds": "t,slow"}, members))
    assert [e.relation for e in engine.tell_and_wait("g", RuleMsg(type="T", data="{}"))] == ["True"]
    engine.load(_group_chain("groupFilter", {"nodeIds": "t,slow", "allMatches": True, "timeout": 1}, members))
    ends = engine.tell_and_wait("g", RuleMsg(type="T", data="{}"))
    assert [(e.relation, e.error) for e in ends] == [("Failure", "context deadline exceeded")]
