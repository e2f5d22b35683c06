"""Engine behaviour beyond the RuleGo cases: DSL errors, limits, reload, concurrency, streams, debug."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest

from chainreact.chains import ChainLoadError, NodeContext, RuleEngine, RuleMsg, validate_chain


def chain(nodes: list[dict[str, Any]], connections: list[tuple[str, str, str]] | None = None,
          chain_id: str = "c1", **info: Any) -> dict[str, Any]:
    return {"ruleChain": {"id": chain_id, "name": chain_id, **info},
            "metadata": {"firstNodeIndex": 0, "nodes": nodes,
                         "connections": [{"fromId": a, "toId": b, "type": t}
                                         for a, b, t in connections or []]}}


def js(node_id: str, kind: str, script: str) -> dict[str, Any]:
    return {"id": node_id, "type": kind, "configuration": {"jsScript": script}}


def test_dsl_errors_are_reported_all_at_once_with_paths() -> None:
    doc = chain([{"id": "a", "type": "nope"},
                 {"id": "a", "type": "jsFilter", "configuration": {"jsScript": ""}},
                 {"id": "b", "type": "exprFilter", "configuration": {"expr": "1 +"}}],
                [("a", "zz", "Success")])
    doc["metadata"]["firstNodeIndex"] = 7
    with pytest.raises(ChainLoadError) as ei:
        RuleEngine().load(doc)
    paths = [p for p, _ in ei.value.errors]
    assert "$.metadata.nodes[1].id" in paths
    assert "$.metadata.firstNodeIndex" in paths
    assert "$.metadata.connections[0].toId" in paths
    # configuration problems of every node, in one error, after the structure is sound
    doc2 = chain([{"id": "a", "type": "nope"},
                  {"id": "b", "type": "jsFilter", "configuration": {"jsScript": ""}},
                  {"id": "c", "type": "exprFilter", "configuration": {"expr": "1 +"}},
                  {"id": "d", "type": "join", "configuration": {"timeout": "soon"}}])
    with pytest.raises(ChainLoadError) as ei2:
        validate_chain(doc2)
    paths2 = [p for p, _ in ei2.value.errors]
    assert paths2 == ["$.metadata.nodes[0].type", "$.metadata.nodes[1].configuration",
                      "$.metadata.nodes[2].configuration", "$.metadata.nodes[3].configuration.timeout"]


def test_yaml_chain_loads(tmp_path: Any) -> None:
    f = tmp_path / "c.yaml"
    f.write_text("ruleChain: {id: y1, name: y}\nmetadata:\n  nodes:\n"
                 "    - {id: f, type: exprFilter, configuration: {expr: 'msg.t > 1'}}\n")
    engine = RuleEngine()
    engine.load_path(tmp_path)
    ends = engine.tell_and_wait("y1", RuleMsg(type="T", data='{"t": 2}'))
    assert [e.relation for e in ends] == ["True"]


def test_cycle_is_stopped_by_the_node_limit() -> None:
    doc = chain([js("a", "jsTransform", "metadata.n = String(Number(metadata.n || 0) + 1);"
                    "return {msg: msg, metadata: metadata, msgType: msgType};")], [("a", "a", "Success")])
    engine = RuleEngine(max_nodes=50)
    engine.load(doc)
    ends = engine.tell_and_wait("c1", RuleMsg(type="T", data="{}"))
    assert len(ends) == 1
    assert ends[0].relation == "Failure"
    assert "more than 50 nodes" in (ends[0].error or "")
    assert ends[0].msg.metadata["n"] == "50"


@pytest.mark.parametrize("script,needle", [
    ("while (true) {}", "time limit"),
    ("var a = []; while (true) { a.push('x'.repeat(1000) + a.length); }", "memory limit"),
    ("throw new Error('bad input');", "bad input"),
])
def test_js_limits_fail_and_the_engine_keeps_serving(script: str, needle: str) -> None:
    engine = RuleEngine()
    # the time limit is wall-clock for a slow call too: the memory case needs time to fill its 16 MB
    engine.js_time_limit = 10.0 if needle == "memory limit" else 0.3  # type: ignore[attr-defined]
    engine.js_memory_limit = 16 * 1024 * 1024  # type: ignore[attr-defined]
    engine.load(chain([js("f", "jsFilter", f"if (msg.bad) {{ {script} }} return msg.t > 1;")]))
    ends = engine.tell_and_wait("c1", RuleMsg(type="T", data='{"bad": true}'))
    assert [e.relation for e in ends] == ["Failure"]
    assert needle in (ends[0].error or "")
    assert needle in ends[0].msg.metadata["errorMsg"]
    ok = engine.tell_and_wait("c1", RuleMsg(type="T", data='{"t": 2}'))
    assert [e.relation for e in ok] == ["True"]


def test_reload_new_messages_use_the_new_version_running_ones_finish_on_old() -> None:
    def doc(tag: str) -> dict[str, Any]:
        return chain([{"id": "d", "type": "delay", "configuration": {"delayMs": 200}},
                      {"id": "t", "type": "exprTransform", "configuration": {"expr": f"'{tag}'"}}],
                     [("d", "t", "Success")])

    async def main() -> tuple[list[Any], list[Any]]:
        engine = RuleEngine()
        engine.load(doc("v1"))
        first = engine.tell("c1", RuleMsg(type="T", data="x"))
        await asyncio.sleep(0.05)
        engine.reload(doc("v2"))
        second = await engine.run("c1", RuleMsg(type="T", data="x"))
        return await first, second

    old, new = asyncio.run(main())
    assert [e.msg.data for e in old] == ["v1"]
    assert [e.msg.data for e in new] == ["v2"]


def test_fan_out_branches_run_concurrently() -> None:
    nodes = [{"id": "f", "type": "fork"}] + [
        {"id": f"d{i}", "type": "delay", "configuration": {"delayMs": 1000}} for i in range(5)]
    engine = RuleEngine()
    engine.load(chain(nodes, [("f", f"d{i}", "Success") for i in range(5)]))
    t0 = time.monotonic()
    ends = engine.tell_and_wait("c1", RuleMsg(type="T", data="x"))
    assert len(ends) == 5
    # Five 1 s delays in sequence take 5 s, at once 1 s: the bound leaves a loaded machine 2 s to spare.
    assert time.monotonic() - t0 < 3


def test_timeout_cancels_every_branch() -> None:
    nodes = [{"id": "f", "type": "fork"}, {"id": "d1", "type": "delay", "configuration": {"delayMs": 30000}},
             {"id": "d2", "type": "delay", "configuration": {"delayMs": 30000}}]
    engine = RuleEngine(timeout=0.3)
    engine.load(chain(nodes, [("f", "d1", "Success"), ("f", "d2", "Success")]))

    async def main() -> tuple[list[Any], int]:
        ends = await engine.run("c1", RuleMsg(type="T", data="x"))
        await asyncio.sleep(0)
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        return ends, len(pending)

    t0 = time.monotonic()
    ends, pending = asyncio.run(main())
    assert time.monotonic() - t0 < 10  # the branches' 30 s were not waited out
    assert [e.relation for e in ends] == ["Failure"]
    assert "deadline" in (ends[0].error or "")
    assert pending == 0


def test_stream_frames_in_order_and_not_ends() -> None:
    async def streamer(ctx: NodeContext, msg: RuleMsg) -> None:
        for i in range(20):
            await asyncio.sleep(0 if i % 3 else 0.001)
            await ctx.tell_stream(RuleMsg(type="CHUNK", data=str(i)))
        ctx.tell_success(msg)

    engine = RuleEngine(functions={"s": streamer})
    engine.load(chain([{"id": "s", "type": "functions", "configuration": {"functionName": "s"}}]))
    frames: list[str] = []
    ends = engine.tell_and_wait("c1", RuleMsg(type="T", data="x"), on_stream=lambda m: frames.append(m.data))
    assert frames == [str(i) for i in range(20)]
    assert [e.relation for e in ends] == ["Success"]


def test_debug_events_in_out_with_relation_and_duration() -> None:
    events: list[dict[str, Any]] = []
    engine = RuleEngine(on_debug=lambda ev: events.append(ev.to_dict()))
    doc = chain([{"id": "f", "type": "exprFilter", "configuration": {"expr": "msg.t > 1"}, "debugMode": True},
                 {"id": "g", "type": "exprFilter", "configuration": {"expr": "msg.t > 1"}}],
                [("f", "g", "True")])
    engine.load(doc)
    engine.tell_and_wait("c1", RuleMsg(type="T", data='{"t": 2}'))
    got = [(e["nodeId"], e["flow"], e["relation"]) for e in events]
    assert got == [("f", "IN", ""), ("f", "OUT", "True")]
    assert events[1]["durationMs"] is not None
    events.clear()
    engine.tell_and_wait("c1", RuleMsg(type="T", data='{"t": 2}'), debug=True)
    got2 = [(e["nodeId"], e["flow"]) for e in events]
    assert got2 == [("f", "IN"), ("f", "OUT"), ("g", "IN"), ("g", "OUT")]
    json.dumps(events)


def test_load_time_templates_keep_types_and_runtime_templates_resolve() -> None:
    doc = chain([{"id": "m", "type": "metadataTransform",
                  "configuration": {"mapping": {"a": "'${global.g}-' + metadata.k", "b": "'${vars.name}'"}}},
                 {"id": "d", "type": "delay", "configuration": {"delayMs": "${vars.t}"}}],
                [("m", "d", "Success")], configuration={"vars": {"t": 2, "name": "n1"}})
    engine = RuleEngine(properties={"g": "G"})
    c = engine.load(doc)
    assert c.nodes["d"].component.config.delayMs == 2  # wholly one ${...}: the number stays a number
    ends = engine.tell_and_wait("c1", RuleMsg(type="T", data="{}", metadata={"k": "v"}))
    assert ends[0].msg.metadata["b"] == "n1"
    assert ends[0].msg.metadata["a"] == "G-v"


def test_reload_child_replaces_one_node() -> None:
    doc = chain([js("s1", "jsFilter", "return true;"),
                 js("s2", "jsTransform", "return {msg: msg, metadata: metadata, msgType: msgType};")],
                [("s1", "s2", "True")])
    engine = RuleEngine()
    engine.load(doc)
    engine.reload_child("c1", {"id": "s2", "type": "jsTransform", "configuration": {"jsScript":
        "metadata['index']=50; msg['aa']=66; return {'msg':msg,'metadata':metadata,'msgType':'MOD'};"}})
    ends = engine.tell_and_wait("c1", RuleMsg(type="T", data='{"temperature":35}'))
    assert ends[0].msg.type == "MOD" and ends[0].msg.metadata["index"] == "50"
    assert json.loads(ends[0].msg.data) == {"aa": 66, "temperature": 35}
    with pytest.raises(LookupError):
        engine.reload_child("c1", {"id": "zz", "type": "fork"})


def test_cancelling_the_caller_cancels_every_branch() -> None:
    nodes = [{"id": "f", "type": "fork"}] + [
        {"id": f"d{i}", "type": "delay", "configuration": {"delayMs": 30000}} for i in range(3)]
    engine = RuleEngine()
    engine.load(chain(nodes, [("f", f"d{i}", "Success") for i in range(3)]))

    async def main() -> int:
        task = asyncio.create_task(engine.run("c1", RuleMsg(type="T", data="x")))
        await asyncio.sleep(0.1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await asyncio.sleep(0)
        return len([t for t in asyncio.all_tasks() if t is not asyncio.current_task()])

    t0 = time.monotonic()
    assert asyncio.run(main()) == 0
    assert time.monotonic() - t0 < 10  # the branches' 30 s were not waited out


def test_start_node_and_only_node() -> None:
    """RuleGo's WithStartNode (`_fromNodeId`) and WithSkipTellNext (`_onlyNodeId`): the message enters at
    a node; with only_node that node's relations end the branch, even in a chain with an end node."""
    doc = chain([js("a", "jsTransform", "msg.p = (msg.p || '') + 'a'; return {msg: msg};"),
                 js("b", "jsTransform", "msg.p = (msg.p || '') + 'b'; return {msg: msg};"),
                 js("c", "jsTransform", "msg.p = (msg.p || '') + 'c'; return {msg: msg};"),
                 {"id": "e", "type": "end"}],
                [("a", "b", "Success"), ("b", "c", "Success"), ("c", "e", "Success")])
    engine = RuleEngine()
    engine.load(doc)

    def path(**kw: Any) -> list[tuple[str, str]]:
        ends = engine.tell_and_wait("c1", RuleMsg(type="T", data="{}"), **kw)
        return [(e.relation, json.loads(e.msg.data)["p"]) for e in ends]

    assert path() == [("Success", "abc")]
    assert path(start_node="b") == [("Success", "bc")]
    assert path(start_node="b", only_node=True) == [("Success", "b")]
    with pytest.raises(LookupError, match=r"node id=zz not found in rule chain .c1."):
        path(start_node="zz")
