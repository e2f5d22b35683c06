"""Chains and flows replay like agents: the server's recorded agent and chain runs, a chain run kept by
`chainreact eval --state` (node outputs compared), and a flow turn that read its memory and a summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx

from chainreact.flows import Flow
from chainreact.replay import export_run, replay
from chainreact.state import open_store
from chainreact.testing import FakeLLM
from tests.evals.conftest import write_dataset
from tests.flows.test_memory import chat_flow, reply
from tests.server.conftest import serve  # noqa: F401  (the fixture)
from tests.server.runs_helpers import wait_status
from tests.test_cli import cli

from .conftest import SCRIPT, write_agent


def chain_doc(url: str, expr: str = "'[' + msg + ']'") -> dict[str, Any]:
    return {"ruleChain": {"id": "wrapped", "name": "wrapped"},
            "metadata": {"nodes": [
                {"id": "ask", "type": "ai/agent", "configuration": {
                    "url": url, "key": "unused", "model": "fake-model", "systemPrompt": "You answer."}},
                {"id": "wrap", "type": "exprTransform", "configuration": {"expr": expr}}],
                "connections": [{"fromId": "ask", "toId": "wrap", "type": "Success"}]}}


async def test_the_servers_agent_and_chain_runs_export_and_replay_offline(
        serve: Any, tmp_path: Path) -> None:  # noqa: F811  (the fixture imported above)
    state = f"sqlite:///{tmp_path}/served.db"
    with FakeLLM([*SCRIPT, {"text": "chained"}, *SCRIPT]) as llm:
        folder = tmp_path / "agent"
        write_agent(folder, llm.url)
        srv = serve({"calc.json": json.loads((folder / "calc.json").read_text()),
                     "wrapped.json": chain_doc(llm.url)}, state=state)
        (tmp_path / "served" / "calc_tools.py").write_text((folder / "calc_tools.py").read_text())
        base = f"{srv.url}/api/v1"
        runs = []
        for path, text in (("agents/calc", "What is 2 + 3?"), ("rules/wrapped", "hi")):  # one after the other
            runs.append(httpx.post(f"{base}/{path}/runs", json={"input": text, "detached": True},
                                   timeout=30).json())
            assert wait_status(srv.url, runs[-1]["id"])["status"] == "done"
        agent_run, chain_run = runs
        # A chat completion of a server with a store is kept, and recorded, too.
        chat = httpx.post(f"{srv.url}/v1/chat/completions", timeout=30, json={
            "model": "calc", "messages": [{"role": "user", "content": "What is 2 + 3?"}]})
        assert chat.json()["choices"][0]["message"]["content"] == "2 + 3 = 5"
        chat_run = chat.headers["x-run-id"]
        # The runs API's event stream is unchanged: no recording in it.
        events = httpx.get(f"{base}/runs/{agent_run['id']}/events", timeout=10).text
        assert "event: io" not in events
    async with await open_store(state) as store:
        agent_cassette = await export_run(store, agent_run["id"])
        chain_cassette = await export_run(store, chain_run["id"])
        chat_cassette = await export_run(store, chat_run)
    assert chat_cassette["answer"] == "2 + 3 = 5" and len(chat_cassette["agents"][0]["steps"]) == 2
    assert (await replay(chat_cassette)).ok
    # The server gives the agent its input as messages.
    assert agent_cassette["input"] == {"messages": [{"role": "user", "content": "What is 2 + 3?"}]}
    assert agent_cassette["answer"] == "2 + 3 = 5"
    result = await replay(agent_cassette)  # the served document the cassette names
    assert result.ok, result.report()
    assert chain_cassette["kind"] == "chain" and chain_cassette["chain"] == "wrapped"
    assert [(n["node"], n["relation"]) for n in chain_cassette["nodes"]] == [("ask", "Success"),
                                                                          ("wrap", "Success")]
    assert chain_cassette["nodes"][-1]["data"] == "[chained]"
    result = await replay(chain_cassette)
    assert result.ok, result.report()
    assert result.answer == "[chained]"


def test_an_eval_chain_case_replays_and_a_changed_node_is_a_diff(tmp_path: Path) -> None:
    with FakeLLM([{"text": "fine"}]) as llm:
        chain = tmp_path / "wrapped.json"
        chain.write_text(json.dumps(chain_doc(llm.url)))
        ds = write_dataset(tmp_path / "c.jsonl",
                           [{"name": "wraps", "input": "hi", "expect": {"equals": "[fine]"}}])
        state = f"sqlite:///{tmp_path}/evals.db"
        r = cli("eval", str(ds), "--chain", str(chain), "--state", state, "--json")
    [case] = json.loads(r.stdout)["results"]
    assert case["passed"], r.stdout + r.stderr
    out = tmp_path / "chain.cassette.json"
    assert cli("runs", "export", case["run_id"], "--state", state, "--out", str(out)).returncode == 0
    ok = cli("replay", str(out))
    assert ok.returncode == 0 and "replay: ok" in ok.stdout, ok.stdout + ok.stderr
    chain.write_text(json.dumps(chain_doc("http://127.0.0.1:9/v1", expr="'<' + msg + '>'")))
    changed = cli("replay", str(out), "--json")
    assert changed.returncode == 1
    diffs = json.loads(changed.stdout)["diffs"]
    assert {"kind": "node", "expected": "[fine]", "got": "<fine>"}.items() <= diffs[0].items()
    assert diffs[0]["message"] == "node wrap: data: expected '[fine]', got '<fine>'"


async def test_a_flow_turn_replays_from_what_it_read(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([reply(1), reply(2), reply(3), {"text": "S1: the user said m1, m2."}, reply(4)])
    doc = tmp_path / "chat.json"
    doc.write_text(json.dumps(chat_flow(srv.url)))
    state = f"sqlite:///{tmp_path}/flow.db"
    async with Flow.load(doc, state=state) as flow:
        for i in range(1, 5):
            await flow.send("s", f"m{i}", user={"id": "u1"})
        store = await flow.store()
        cassette = await export_run(store, "flow:chat:s")  # the last turn: a summary, then the answer
        second = await export_run(store, "flow:chat:s", turn=2)
    srv.stop()
    assert cassette["kind"] == "flow" and cassette["turn_number"] == 4
    assert cassette["input"]["text"] == "m4" and cassette["answer"] == "r4"
    assert [a["agent"] for a in cassette["agents"]] == ["chat", "chat"]  # the summarizer, the node's agent
    assert {r["op"] for r in cassette["reads"]} >= {"get_run", "history"}
    result = await replay(cassette, flow=str(doc))
    assert result.ok, result.report()
    assert (result.answer, result.steps) == ("r4", 2)
    assert (await replay(second)).ok  # the recorded document
    # The node's prompt changed: its requests differ (the turn's answer comes from the recording).
    changed = chat_flow("http://127.0.0.1:9/v1")
    changed["nodes"][0]["systemMessage"] = "Be very brief."
    doc.write_text(json.dumps(changed))
    result = await replay(cassette, flow=str(doc))
    assert not result.ok
    assert any(d.kind == "request" and d.expected.startswith("Be brief.") for d in result.diffs), \
        result.report()


async def test_both_turns_of_an_ask_user_round_replay_offline(tmp_path: Path) -> None:
    # Before: turn 1 (the tool call that stopped to ask had no record) replayed into a second model call
    # the recording lacked; turn 2 (it resumes the stored run, read with `load_run`, not recorded) failed
    # with "no run ... in the state store".
    from tests.flows.servers import shop_api
    from tests.temporal.test_durable_flow import clerk_flow
    from tests.temporal.test_durable_flow import reply as answer

    calls = [{"tool_calls": [{"name": "createRefund", "arguments": {"orderId": "A1", "reason": "late"},
                              "id": "r1"}]},
             answer("Order A1 is refunded: 19.5.")]
    with shop_api() as api, FakeLLM(calls) as llm:
        doc = tmp_path / "clerk.json"
        doc.write_text(json.dumps(clerk_flow(llm.url, api)))
        async with Flow.load(doc, state=f"sqlite:///{tmp_path}/s.db") as flow:
            asked = await flow.send("s1", "Refund A1, it came late")
            done = await flow.send("s1", "19.5")
            cassettes = [await export_run(await flow.store(), "flow:shop:s1", turn=n) for n in (1, 2)]
        hits = len(api.hits)
    assert "I need" in asked.messages[-1].content and done.messages[-1].content.startswith("Order A1")
    first = cassettes[0]["agents"][0]["steps"][0]["tools"]
    assert [t["interrupt"]["kind"] for t in first] == ["ask_user"]  # the call that asked, and its question
    for cassette in cassettes:  # offline: the model server and the shop API are gone
        result = await replay(cassette, flow=str(doc))
        assert result.ok, result.report()
    assert len(api.hits) == hits  # nothing called the API again
