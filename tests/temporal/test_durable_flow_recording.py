"""Durable flow turns recorded for replay: a worker's activities append the turn's `io` records (its store
reads, its agent node's model and tool calls) to the turn's log and, once the session is saved, copy them
with the `turn` record to the session's log, where an in-process turn writes its records; `export_run` on
the session key makes the same cassette of the turn as of the same turn in process, keys redacted, and it
replays offline (`chainreact replay`). A model activity that ran again leaves one step; the turn's event
stream never shows the records; an ask-user round is recorded as in process."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio import activity
from temporalio.exceptions import ApplicationError

from chainreact.durable import AgentHost, DurableFlow, DurableOptions, FlowHost, durable_worker
from chainreact.durable.flow_node_activities import NodeActivities
from chainreact.flows import Flow
from chainreact.replay import export_run, replay
from chainreact.state import open_store
from chainreact.testing import FakeLLM
from tests.test_cli import cli

from ..flows.servers import order_tool, shop_api
from .test_durable_flow import ANSWER, reply

KEY = "sk-flowrec-0123456789abcdefSECRET"
SAID = ["Hello", f"Where is order A1? My key is {KEY}"]


def shop_flow(url: str, api: Any) -> dict[str, Any]:
    return {"id": "shop", "nodes": [
        {"name": "clerk", "type": "aiagent", "llmConfig": {"url": url, "apiKey": KEY},
         "userMessage": "{{userInput}}", "memory": {"maxMessages": 10}, "tools": [order_tool(api)],
         "output": {"schema": ANSWER},
         "agentOutcomes": [{"condition": "{{output.resolved}} == true", "finish": True,
                            "transition": {"targetId": "bye"}}]},
        {"name": "bye", "type": "end", "message": "Bye!"}]}


def script() -> list[dict[str, Any]]:
    return [reply("Hi, how can I help?"),
            {"tool_calls": [{"id": "c1", "name": "orderLookup", "arguments": {"orderId": "A1"}}]},
            reply("Order A1 has shipped.", resolved=True)]


def _doc(tmp_path: Path, url: str, api: Any, name: str) -> Path:
    doc = tmp_path / f"{name}.json"
    doc.write_text(json.dumps(shop_flow(url, api)))
    return doc


def _same(c: dict[str, Any]) -> dict[str, Any]:
    """What a durable and an in-process turn's cassettes must share (not slot ids, times, the document's
    path, the reads' results that hold timestamps)."""
    agents = [{"agent": a["agent"], "parent": a["parent"], "model": a["model"], "params": a["params"],
               "steps": a["steps"]} for a in c["agents"]]
    return {"kind": c["kind"], "run_id": c["run_id"], "turn_number": c["turn_number"], "input": c["input"],
            "turn": c["turn"], "answer": c["answer"], "agents": agents,
            "reads": [(r["op"], r["args"]) for r in c["reads"]]}


async def _io(store: Any, key: str) -> list[dict[str, Any]]:
    return [dict(e.data) for e in await store.events(key) if e.type == "io"]


async def test_a_durable_turn_exports_the_cassette_of_an_in_process_turn_and_replays(
        temporal_client: Any, task_queue: str, tmp_path: Path) -> None:
    with shop_api() as api, FakeLLM(script()) as local_llm, FakeLLM(script()) as llm:
        local_doc = _doc(tmp_path, local_llm.url, api, "local")
        async with Flow.load(local_doc, state=f"sqlite:///{tmp_path}/local.db") as local:
            for text in SAID:
                await local.send("s1", text)
            expected = await export_run(await local.store(), "flow:shop:s1")
        url = llm.url
        doc = _doc(tmp_path, url, api, "shop")
        async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
            flow = Flow.load(doc, store=store)
            durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue)
            shown: list[list[dict[str, Any]]] = []
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow])):
                for text in SAID:
                    turn = await durable.start("s1", text)
                    shown.append([d async for d in turn.events(store)])
                    await turn.result()
                streamed = [ev.type async for ev in durable.stream("s1", "Thanks", store=store)]
            logged = await _io(store, "flow:shop:s1")
            turn_log = [e.type for e in await store.events(turn.turn_id)]
            cassette = await export_run(store, "flow:shop:s1", turn=2)
            first = await export_run(store, "flow:shop:s1", turn=1)
        llm.assert_all_consumed()
    # The clients' streams: the turn's events, never the records.
    assert all(d.get("event") and "kind" not in d for t in shown for d in t)
    assert [d["event"] for d in shown[1]] == ["node", "tool_call", "tool_result", "output", "message",
                                              "turn_end"]
    # The records are in the turn's log too (its activities wrote them there), never shown from it.
    assert "io" in turn_log and "io" not in streamed and streamed[-1] == "turn_end"
    assert KEY not in json.dumps(logged) and KEY not in json.dumps(cassette)
    # Turn 2's records: the session read (load), the memory read (node start), the node's calls, the turn.
    assert [r["kind"] for r in logged if r.get("turn_id") == turn.turn_id] == \
        ["reads", "reads", "slot", "model", "tool", "model", "turn"]
    assert [r["kind"] for r in logged].count("turn") == 3

    # The same cassette as in process, but for what differs between two runs anyway.
    assert cassette["kind"] == "flow" and cassette["turn_number"] == 2
    assert cassette["answer"] == "Order A1 has shipped."
    assert cassette["input"]["text"] == "Where is order A1? My key is [redacted]"
    assert _same(cassette) == _same(expected)
    [agent] = cassette["agents"]
    assert agent["agent"] == "clerk" and agent["parent"] is None and agent["endpoint"] == url
    assert agent["steps"][0]["tools"][0]["name"] == "orderLookup"
    assert json.loads(agent["steps"][0]["tools"][0]["content"])["status"] == "shipped"
    assert {r["op"] for r in cassette["reads"]} >= {"get_run", "history"}
    assert first["answer"] == "Hi, how can I help?"

    # Offline: the scripted model and the shop API are gone; the turn follows the recording.
    result = await replay(cassette, flow=str(doc))
    assert result.ok, result.report()
    assert result.steps == 2
    out = tmp_path / "turn.json"
    out.write_text(json.dumps(cassette))
    ok = cli("replay", str(out))
    assert ok.returncode == 0 and "replay: ok" in ok.stdout, ok.stdout + ok.stderr
    assert (await replay(first, flow=str(doc))).ok


async def test_a_model_activity_that_ran_again_is_one_step(temporal_client: Any, task_queue: str,
                                                           tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # The first attempt got its answer and recorded it, then its acknowledgement was lost: it runs again.
    model = NodeActivities.model

    @activity.defn(name="chainreact.flow.node.model")
    async def lost_ack(self: NodeActivities, req: dict[str, Any]) -> dict[str, Any]:
        out = await model(self, req)
        if activity.info().attempt == 1:
            raise ApplicationError("the worker was lost before it answered")
        return out

    monkeypatch.setattr(NodeActivities, "model", lost_ack)
    calls = script()[1:]
    with shop_api() as api, FakeLLM([calls[0], calls[0], calls[1], calls[1]]) as llm:
        doc = _doc(tmp_path, llm.url, api, "shop")
        async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
            flow = Flow.load(doc, store=store)
            durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue,
                                  options=DurableOptions(initial_interval=0.05))
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow])):
                turn = await durable.send("s1", "Where is order A1?")
            logged = await _io(store, "flow:shop:s1")
            cassette = await export_run(store, "flow:shop:s1")
        llm.assert_all_consumed()
    assert turn.ended is False and turn.node == "bye"
    assert [r["step"] for r in logged if r["kind"] == "model"] == [1, 1, 2, 2]  # each step ran twice
    assert [r["kind"] for r in logged].count("slot") == 2  # announced by both attempts of the first call
    [agent] = cassette["agents"]
    assert [len(s["tools"]) for s in agent["steps"]] == [1, 0]
    result = await replay(cassette, flow=str(doc))
    assert result.ok, result.report()


def test_a_turn_takes_its_own_records_and_a_save_run_again_is_one_turn() -> None:
    from chainreact.replay.flows import flow_cassette

    def slot(tid: str, s: str) -> dict[str, Any]:
        return {"kind": "slot", "slot": s, "agent": "clerk", "parent": None, "turn_id": tid}

    def model(tid: str, s: str, text: str) -> dict[str, Any]:
        return {"kind": "model", "slot": s, "step": 1, "turn_id": tid,
                "request": {"keep": 0, "messages": [{"role": "user", "content": text}]},
                "response": {"message": {"role": "assistant", "content": text}}}

    def turn(tid: str) -> dict[str, Any]:
        return {"kind": "turn", "flow": "shop", "turn_id": tid, "reads": [], "input": {"text": tid},
                "turn": {"messages": [{"node": "clerk", "content": tid}]}}

    reads = {"kind": "reads", "turn_id": "t2", "reads": [{"op": "get_run", "args": [], "result": None}]}
    records = [slot("t1", "a"), model("t1", "a", "lost"),  # not this turn's
               {**reads, "activity": "1"}, {**reads, "activity": "1"},  # its load activity ran again
               slot("t2", "b"), model("t2", "b", "kept"), turn("t2"),
               slot("t2", "b"), model("t2", "b", "again"), turn("t2"),  # its save ran again
               turn("t3")]
    c = flow_cassette("flow:shop:s1", records, 1)
    assert c["turn_number"] == 1 and c["answer"] == "t2" and len(c["reads"]) == 1
    [agent] = c["agents"]
    assert agent["slot"] == "b" and [s["response"]["message"]["content"] for s in agent["steps"]] == ["kept"]
    last = flow_cassette("flow:shop:s1", records, None)
    assert last["turn_number"] == 2 and last["answer"] == "t3" and last["agents"] == []


async def test_an_ask_user_round_is_recorded_as_in_process(temporal_client: Any, task_queue: str,
                                                          tmp_path: Path) -> None:
    """Turn 1 stops to ask for a tool argument; turn 2 claims the stored run and goes on. Each turn's
    cassette is the in-process one's (the stored run read under its own id), and both replay offline: turn 1
    stops where the tool asked, turn 2 resumes the recorded run."""
    from .test_durable_flow import clerk_flow

    calls = [{"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "A1", "reason": "late"},
                              "id": "r1"}]},
             reply("Order A1 is refunded: 19.5.")]
    said = ["Refund A1, it came late", "19.5"]
    with shop_api() as api, FakeLLM(calls) as local_llm, FakeLLM(calls) as llm:
        local_doc = tmp_path / "local.json"
        local_doc.write_text(json.dumps(clerk_flow(local_llm.url, api)))
        async with Flow.load(local_doc, state=f"sqlite:///{tmp_path}/local.db") as local:
            for text in said:
                await local.send("s1", text)
            expected = [await export_run(await local.store(), "flow:shop:s1", turn=n) for n in (1, 2)]
        api.hits.clear()  # the refund's id counts the API's hits
        doc = tmp_path / "clerk.json"
        doc.write_text(json.dumps(clerk_flow(llm.url, api)))
        async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
            flow = Flow.load(doc, store=store)
            durable = DurableFlow(flow, client=temporal_client, task_queue=task_queue)
            async with durable_worker(temporal_client, task_queue, AgentHost(), flows=FlowHost([flow])):
                for text in said:
                    await durable.send("s1", text)
            got = [await export_run(store, "flow:shop:s1", turn=n) for n in (1, 2)]
        llm.assert_all_consumed()
    for g, e in zip(got, expected, strict=True):
        same_g, same_e = _same(g), _same(e)
        # The node's claim reads the stored run twice in a worker (a retried claim checks it first), once
        # in process: the first read is the one a replay is answered with.
        assert _runs(op for op, _ in same_g.pop("reads")) == _runs(op for op, _ in same_e.pop("reads"))
        assert same_g == same_e
        result = await replay(g, flow=str(doc))  # offline: the model and the shop API are gone
        assert result.ok, result.report()
    assert got[1]["answer"] == "Order A1 is refunded: 19.5."


def _runs(ops: Any) -> list[str]:
    """The ops with each run of one op counted once."""
    out: list[str] = []
    for op in ops:
        if not out or out[-1] != op:
            out.append(op)
    return out
