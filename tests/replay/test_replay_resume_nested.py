"""A run that stopped to ask and was resumed is one recorded agent; a sub-agent called as a tool is recorded
under its caller's tool call, and replays there when the tools run live."""

from __future__ import annotations

from pathlib import Path

from chainreact.agent import Agent
from chainreact.replay import export_run, replay
from chainreact.state import open_store
from chainreact.state.runs import resume_with_store, run_with_store
from chainreact.testing import FakeLLM
from tests.state.test_runs_with_agent import ask_user, weather

ASKING = [
    {"tool_calls": [{"id": "w", "name": "weather", "arguments": {"city": "Lyon"}},
                    {"id": "q", "name": "ask_user", "arguments": {"question": "Celsius or Fahrenheit?"}}]},
    {"text": "It is 70 F in Lyon."},
]


async def test_an_interrupted_and_resumed_run_is_one_recorded_run(tmp_path: Path) -> None:
    async with FakeLLM(ASKING) as srv, await open_store(f"sqlite:///{tmp_path}/s.db") as store:
        agent = Agent(name="helper", url=srv.url, key="k", model="m", tools=[weather, ask_user])
        first = await run_with_store(agent, store, "How warm is it in Lyon?")
        assert first.stop_reason == "interrupted"
        run_id = str(first.metadata["run_id"])
        done = await resume_with_store(agent, store, run_id, {"q": "F"})
        assert done.content == "It is 70 F in Lyon."
        cassette = await export_run(store, run_id)
        await agent.aclose()
    assert cassette["input"] == "How warm is it in Lyon?" and cassette["answer"] == "It is 70 F in Lyon."
    [recorded] = cassette["agents"]
    assert [s["step"] for s in recorded["steps"]] == [1, 2]
    assert {t["id"]: t["content"] for t in recorded["steps"][0]["tools"]} == {"w": "21 in Lyon", "q": "F"}
    agent = Agent(name="helper", url="http://127.0.0.1:9/v1", key="k", model="m", tools=[weather, ask_user])
    result = await replay(cassette, agent=agent)  # the answer to the question comes from the cassette
    assert result.ok, result.report()
    assert result.answer == "It is 70 F in Lyon."
    live = await replay(cassette, agent=agent, live_tools=True)  # live, the tool asks again: the run stops
    assert not live.ok and live.answer == ""
    assert any(d.kind == "steps" for d in live.diffs), live.report()
    await agent.aclose()


def _agents(url: str) -> Agent:
    geo = Agent(name="geo", instruction="You know capitals.", url=url, key="k", model="m")
    return Agent(name="boss", instruction="You delegate.", url=url, key="k", model="m",
                 tools=[geo.as_tool(description="Ask the geographer")])


async def test_a_sub_agent_is_recorded_under_its_callers_tool_call(tmp_path: Path) -> None:
    script = [{"tool_calls": [{"id": "c1", "name": "geo", "arguments": {"request": "Capital of France?"}}]},
              {"text": "Paris"}, {"text": "The capital is Paris."}]
    async with FakeLLM(script) as srv, await open_store(f"sqlite:///{tmp_path}/s.db") as store:
        boss = _agents(srv.url)
        result = await run_with_store(boss, store, "What is the capital of France?")
        cassette = await export_run(store, str(result.metadata["run_id"]))
        await boss.aclose()
    top, sub = cassette["agents"]
    assert (top["agent"], top["parent"]) == ("boss", None)
    assert (sub["agent"], sub["parent"]) == ("geo", [top["slot"], "c1"])
    assert sub["steps"][0]["response"]["message"]["content"] == "Paris"
    assert top["steps"][0]["tools"][0]["content"] == "Paris"
    boss = _agents("http://127.0.0.1:9/v1")
    assert (await replay(cassette, agent=boss)).ok  # the sub-agent's answer from the caller's tape
    live = await replay(cassette, agent=boss, live_tools=True)  # the sub-agent runs, from its own tape
    assert live.ok, live.report()
    assert live.steps == 2 and live.answer == "The capital is Paris."
    cassette["agents"][1]["steps"][0]["response"]["message"]["content"] = "Lyon"  # the sub-agent changed
    changed = await replay(cassette, agent=boss, live_tools=True)
    assert [(d.kind, d.tool, d.expected, d.got) for d in changed.diffs if d.kind == "tool"] == \
        [("tool", "geo", "Paris", "Lyon")]
    await boss.aclose()
