"""An agent's runs through the store: checkpoints at safe points, interrupt and resume, and a worker
killed with SIGKILL between two tool steps that a new process resumes without running a call twice."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from chainreact.agent import Agent, ToolInterrupt
from chainreact.state import RunConflictError, StateError, open_store
from chainreact.state.runs import resume_with_store, run_with_store
from chainreact.testing import FakeLLM
from chainreact.testing.responders import tool_steps_responder
from chainreact.tools import ToolContext, tool

SRC = Path(__file__).resolve().parents[2] / "src"
ran: list[str] = []


@tool
def weather(city: str) -> str:
    """Weather for a city."""
    ran.append(city)
    return f"21 in {city}"


@tool
def ask_user(question: str, ctx: ToolContext) -> str:
    """Ask the user."""
    if "answer" not in ctx.state:
        raise ToolInterrupt(question, schema={"enum": ["C", "F"]})
    return str(ctx.state["answer"])


@pytest.fixture
def llm() -> Iterator[FakeLLM]:
    with FakeLLM([]) as srv:
        yield srv


def agent(srv: FakeLLM) -> Agent:
    return Agent(name="helper", instruction="Help.", url=srv.url, model="fake-model", key="k",
                 tools=[weather, ask_user])


async def test_interrupt_and_resume_through_the_store(store_url: str, llm: FakeLLM) -> None:
    ran.clear()
    llm.add_turns([
        {"tool_calls": [{"id": "w", "name": "weather", "arguments": {"city": "Lyon"}},
                        {"id": "q", "name": "ask_user", "arguments": {"question": "Unit?"}}]},
        {"text": "21 C in Lyon"},
    ])
    async with await open_store(store_url) as store:
        result = await run_with_store(agent(llm), store, "weather in Lyon?", session="s1")
        run_id = result.metadata["run_id"]
        assert result.stop_reason == "interrupted"
        rec = await store.load_run(run_id)
        assert (rec.status, rec.session, rec.agent) == ("interrupted", "s1", "helper")
        assert [q["id"] for q in rec.snapshot["questions"]] == ["q"]
        assert list(rec.snapshot["completed_tool_results"]) == ["w"]
        with pytest.raises(StateError, match="does not match the asked schema"):
            await resume_with_store(agent(llm), store, run_id, {"q": "Kelvin"})
        assert (await store.load_run(run_id)).version == rec.version  # a bad answer changed nothing
        result = await resume_with_store(agent(llm), store, run_id, {"q": "C"})
        assert result.content == "21 C in Lyon" and ran == ["Lyon"]  # weather did not run again
        done = await store.load_run(run_id)
        assert done.status == "done" and done.snapshot["extra"]["content"] == "21 C in Lyon"
        with pytest.raises(StateError, match="is done"):
            await resume_with_store(agent(llm), store, run_id)


async def test_two_resumers_only_one_goes_on(store_url: str, llm: FakeLLM) -> None:
    llm.add_turns([{"tool_calls": [{"id": "q", "name": "ask_user", "arguments": {"question": "Unit?"}}]},
                   {"text": "ok"}])
    async with await open_store(store_url) as store:
        run_id = (await run_with_store(agent(llm), store, "x")).metadata["run_id"]
        # The second resumer loaded the same checkpoint, but the first claimed it.
        from chainreact.state.checkpoint import prepare_resume, save_snapshot

        snap, version, _ = await prepare_resume(store, run_id, {"q": "F"})
        await resume_with_store(agent(llm), store, run_id, {"q": "C"})
        with pytest.raises(RunConflictError):
            await save_snapshot(store, snap, expect_version=version)


WORKER = """
import asyncio, os, signal, sys
from chainreact.agent import Agent
from chainreact.state import open_store
from chainreact.state.runs import StoreCheckpointer, resume_with_store, run_with_store
from chainreact.tools import ToolContext, tool

store_url, llm_url, mode, counter = sys.argv[1:5]

@tool
def add(a: int, b: int, ctx: ToolContext) -> int:
    \"\"\"Add two integers (and count the execution).\"\"\"
    with open(counter, "a") as f:
        f.write(ctx.call_id + "\\n")
    return a + b

class DieAfterSecondModelCall(StoreCheckpointer):
    async def __call__(self, cp):
        await super().__call__(cp)
        if cp.point == "after_model" and cp.step == 2:
            print(cp.run_id, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)  # between tool step 1 and tool step 2

async def main():
    agent = Agent(name="worker", instruction="Add.", url=llm_url, model="fake-model", key="k", tools=[add])
    async with await open_store(store_url) as store:
        if mode == "run":
            await agent.run("add up", checkpoint=DieAfterSecondModelCall(store))
        else:
            result = await resume_with_store(agent, store, mode)
            print(result.content, flush=True)

asyncio.run(main())
"""


def test_killed_worker_resumes_in_a_new_process(store_url: str, tmp_path: Path) -> None:
    counter = tmp_path / "executions.txt"
    env = {**os.environ, "PYTHONPATH": str(SRC) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with FakeLLM(tool_steps_responder(3)) as srv:
        def worker(mode: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run([sys.executable, "-c", WORKER, store_url, srv.url, mode, str(counter)],
                                  env=env, capture_output=True, text=True, timeout=120)

        first = worker("run")
        assert first.returncode == -9, first.stderr[-2000:]  # killed by SIGKILL
        run_id = first.stdout.strip()
        assert counter.read_text().split() == ["call_0"]  # step 1 ran, step 2's call is pending
        second = worker(run_id)
        assert second.returncode == 0, second.stderr[-2000:]
        assert "All 3 tool steps are done" in second.stdout
    assert counter.read_text().split() == ["call_0", "call_1", "call_2"]  # each call exactly once


async def test_every_safe_point_is_stored_as_its_snapshot(store_url: str, llm: FakeLLM) -> None:
    """What each save stores is the checkpoint's RunSnapshot, field for field (the hot path builds the
    JSON without the snapshot object)."""
    from chainreact.state.checkpoint import RunSnapshot
    from chainreact.state.runs import StoreCheckpointer, snapshot_of

    llm.add_turns([
        {"tool_calls": [{"id": "a", "name": "weather", "arguments": {"city": "Lyon"}},
                        {"id": "b", "name": "weather", "arguments": {"city": "Oslo"}}]},
        {"tool_calls": [{"id": "c", "name": "weather", "arguments": {"city": "Rome"}}]},
        {"text": "done"},
    ])
    async with await open_store(store_url) as store:
        seen: list[tuple[str, RunSnapshot]] = []

        class Check(StoreCheckpointer):
            async def __call__(self, cp: Any) -> None:
                await super().__call__(cp)
                expected = snapshot_of(cp, session="s9", extra={"doc": "x.json"})
                stored = RunSnapshot.from_dict((await store.load_run(cp.run_id)).snapshot)
                assert stored == expected, cp.point
                assert self.last == expected
                seen.append((cp.point, stored))

        hook = Check(store, session="s9", extra={"doc": "x.json"})
        result = await agent(llm).run("weather?", checkpoint=hook)
        assert result.content == "done"
        assert [p for p, _ in seen] == ["after_model", "tool_result", "tool_result", "after_tools",
                                        "after_model", "after_tools"]
        assert [len(s.messages) for _, s in seen] == [3, 3, 3, 5, 6, 7]  # the system message first


async def test_a_run_that_fails_keeps_its_last_safe_point(store_url: str, llm: FakeLLM) -> None:
    llm.add_turns([{"tool_calls": [{"id": "a", "name": "weather", "arguments": {"city": "Lyon"}}]},
                   {"status": 400, "message": "bad request"}])
    async with await open_store(store_url) as store:
        with pytest.raises(Exception, match="bad request"):
            await run_with_store(agent(llm), store, "weather?", session="s1")
        (rec,) = await store.runs()
        assert rec.status == "failed"
        full = await store.load_run(rec.run_id)
        assert [m["role"] for m in full.snapshot["messages"]] == ["system", "user", "assistant", "tool"]
        extra = full.snapshot["extra"]
        assert extra["point"] == "after_tools" and "bad request" in extra["error"]
