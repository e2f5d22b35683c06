"""Recording an agent run in the store, exporting it as a cassette and replaying it offline: the run follows
the recording, or every difference is reported (which step, which tool, expected vs got)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.agent import Agent
from chainreact.replay import export_run, replay, save_cassette
from chainreact.state import open_store
from chainreact.state.runs import run_with_store
from chainreact.testing import FakeLLM
from chainreact.testing import replay as replay_sync

from .conftest import BROKEN_TOOLS, KEY, SCRIPT, write_agent


async def record(folder: Path, script: list[dict[str, Any]], *, stream: bool = False,
                 prompt: str = "What is 2 + 3?") -> tuple[dict[str, Any], Path, str]:
    """Run the calc agent with a store against the scripted model; its cassette, document and store URL."""
    url = f"sqlite:///{folder}/state.db"
    async with FakeLLM(script) as srv:
        doc = write_agent(folder / "agent", srv.url)
        agent = Agent.from_config(str(doc))
        async with await open_store(url) as store:
            result = await run_with_store(agent, store, prompt, stream=stream)
            cassette = await export_run(store, str(result.metadata["run_id"]))
        await agent.aclose()
    return cassette, doc, url


async def test_export_holds_document_input_requests_responses_and_tool_results(tmp_path: Path) -> None:
    cassette, doc, _ = await record(tmp_path, SCRIPT)
    assert cassette["chainreact_cassette"] == 1 and cassette["kind"] == "agent"
    assert cassette["document"]["id"] == "calc" and cassette["document"]["source"] == str(doc)
    assert cassette["document"]["hash"].startswith("sha256:")
    assert cassette["input"] == "What is 2 + 3?"
    assert cassette["answer"] == "2 + 3 = 5"
    [agent] = cassette["agents"]
    assert agent["model"] == "fake-model" and agent["parent"] is None
    first, second = agent["steps"]
    assert first["request"]["messages"] == [{"role": "system", "content": "You add numbers."},
                                            {"role": "user", "content": "What is 2 + 3?"}]
    assert [t["function"]["name"] for t in first["request"]["tools"]] == ["add", "secret"]
    assert first["response"]["message"]["tool_calls"][0]["function"] == {"name": "add",
                                                                       "arguments": '{"a":2,"b":3}'}
    assert first["tools"] == [{"id": "call_add", "name": "add", "arguments": '{"a":2,"b":3}', "content": "5",
                               "is_error": False}]
    # The second request is complete (the log stores each message once; the cassette expands it).
    assert [m["role"] for m in second["request"]["messages"]] == ["system", "user", "assistant", "tool"]
    assert second["request"]["tools"] == first["request"]["tools"]
    assert second["response"]["message"]["content"] == "2 + 3 = 5"
    assert second["response"]["usage"]["total_tokens"] > 0


async def test_no_key_reaches_the_store_or_the_cassette(tmp_path: Path) -> None:
    script = [{"tool_calls": [{"name": "secret", "arguments": {}, "id": "call_s"}]},
              {"text": f"your key is {KEY}"}]
    cassette, _, url = await record(tmp_path, script)
    text = json.dumps(cassette)
    assert KEY not in text
    assert cassette["agents"][0]["steps"][0]["tools"][0]["content"] == "key=[redacted]"
    assert cassette["answer"] is not None and KEY not in cassette["answer"]
    assert cassette["agents"][0]["steps"][1]["response"]["message"]["content"] == "your key is [redacted]"
    async with await open_store(url) as store:
        [run] = await store.runs()
        logged = (await store.load_run(run.run_id)).snapshot["extra"]["io"]  # where the store keeps it
    assert logged and KEY not in json.dumps(logged)


async def test_replay_offline_follows_the_recording(tmp_path: Path) -> None:
    cassette, doc, _ = await record(tmp_path, SCRIPT)
    # The scripted model is stopped: a request to it would fail to connect.
    result = await replay(cassette, agent=str(doc))
    assert result.ok, result.report()
    assert (result.answer, result.steps, result.diffs) == ("2 + 3 = 5", 2, [])
    assert result.to_dict()["ok"] is True


async def test_a_streamed_run_replays_streamed(tmp_path: Path) -> None:
    cassette, doc, _ = await record(tmp_path, SCRIPT, stream=True)
    assert cassette["agents"][0]["steps"][0]["request"]["stream"] is True
    result = await replay(cassette, agent=str(doc))
    assert result.ok, result.report()
    assert result.answer == "2 + 3 = 5"


async def test_a_changed_tool_is_a_diff_naming_step_tool_expected_and_got(tmp_path: Path) -> None:
    cassette, doc, _ = await record(tmp_path, SCRIPT)
    write_agent(doc.parent, "http://127.0.0.1:9/v1", tools=BROKEN_TOOLS, module="calc_tools_broken")
    # Tool results from the cassette: the tool's code does not matter.
    assert (await replay(cassette, agent=str(doc))).ok
    result = await replay(cassette, agent=str(doc), live_tools=True)
    assert not result.ok
    [diff] = result.diffs
    assert (diff.kind, diff.step, diff.tool, diff.call_id, diff.expected, diff.got) == \
        ("tool", 1, "add", "call_add", "5", "6")
    assert str(diff) == "agent calc, step 1, tool add (call_add): result: expected '5', got '6'"
    assert result.to_dict()["diffs"][0]["expected"] == "5"


async def test_a_changed_prompt_is_a_request_diff_unless_ignored(tmp_path: Path) -> None:
    cassette, doc, _ = await record(tmp_path, SCRIPT)
    write_agent(doc.parent, "http://127.0.0.1:9/v1", prompt="You add numbers carefully.")
    result = await replay(cassette, agent=str(doc))
    assert not result.ok
    [diff] = result.diffs  # one diff, though both requests carry the prompt
    assert (diff.kind, diff.step, diff.path) == ("request", 1, "messages[0].content (system)")
    assert (diff.expected, diff.got) == ("You add numbers.", "You add numbers carefully.")
    assert result.document_changed
    assert (await replay(cassette, agent=str(doc), ignore=("system",))).ok


async def test_a_removed_tool_shows_as_the_calls_result_and_the_tool_list(tmp_path: Path) -> None:
    cassette, doc, _ = await record(tmp_path, SCRIPT)
    write_agent(doc.parent, "http://127.0.0.1:9/v1", names=("secret",))
    result = await replay(cassette, agent=str(doc))
    kinds = {(d.kind, d.tool or d.path) for d in result.diffs}
    assert ("request", "tools") in kinds
    tool = next(d for d in result.diffs if d.kind == "tool")
    assert (tool.step, tool.tool, tool.expected) == (1, "add", "5")
    assert "unknown tool" in str(tool.got).lower() or "not" in str(tool.got).lower()


async def test_more_model_calls_than_recorded_ends_the_replay_with_a_steps_diff(tmp_path: Path) -> None:
    cassette, doc, _ = await record(tmp_path, SCRIPT)
    cassette["agents"][0]["steps"].pop()  # as if the recording had stopped after the tool call
    cassette["answer"] = None
    result = await replay(cassette, agent=str(doc))
    assert not result.ok
    assert any(d.kind == "steps" and d.step == 2 for d in result.diffs), result.report()


async def test_a_different_answer_is_a_diff(tmp_path: Path) -> None:
    cassette, doc, _ = await record(tmp_path, SCRIPT)
    cassette["answer"] = "2 + 3 = 6"
    result = await replay(cassette, agent=str(doc))
    assert [(d.kind, d.expected, d.got) for d in result.diffs] == [("answer", "2 + 3 = 6", "2 + 3 = 5")]


def test_testing_replay_and_the_pytest_fixture(tmp_path: Path, replay_cassette: Any) -> None:
    cassette, doc, _ = asyncio.run(record(tmp_path, SCRIPT))
    path = save_cassette(cassette, tmp_path / "calc.cassette.json")
    assert replay_sync(path, agent=str(doc)).ok
    assert replay_cassette(path).answer == "2 + 3 = 5"  # the document the cassette names
    write_agent(doc.parent, "http://127.0.0.1:9/v1", tools=BROKEN_TOOLS, module="calc_tools_broken2")
    with pytest.raises(pytest.fail.Exception, match=r"step 1, tool add \(call_add\): result: expected '5'"):
        replay_cassette(path, live_tools=True)


async def test_a_run_without_a_recording_cannot_be_exported(tmp_path: Path) -> None:
    from chainreact.state import RunNotFoundError, StateError
    from chainreact.state.checkpoint import RunSnapshot, save_snapshot

    async with await open_store(f"sqlite:///{tmp_path}/s.db") as store:
        await save_snapshot(store, RunSnapshot("old-run", "done", agent="calc"))  # saved by hand, no `io`
        with pytest.raises(StateError, match="'old-run' has no recording of its model calls"):
            await export_run(store, "old-run")
        with pytest.raises(RunNotFoundError, match="no run 'nope'"):
            await export_run(store, "nope")
