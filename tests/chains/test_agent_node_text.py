"""The `ai/agent` node's text: each piece of the model's text reaches the Stream frames once, and the
Success carries "the complete merged content" (the spec's seed 000): what the consumer received,
preamble included, streamed or not (issue 24, "The seeds")."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chainreact.chains import RuleEngine, RuleMsg
from chainreact.testing import FakeLLM

DOUBLE = {"ruleChain": {"id": "double", "name": "double"}, "metadata": {"nodes": [
    {"id": "t", "type": "jsTransform", "configuration": {
        "jsScript": "msg.n = msg.n * 2; return {msg: msg, metadata: metadata, msgType: msgType};"}}]}}


def chain(url: str, **config: Any) -> dict[str, Any]:
    tool = {"type": "rulechain", "targetId": "double", "name": "double", "description": "Double n"}
    return {"ruleChain": {"id": "chat", "name": "chat"}, "metadata": {"nodes": [
        {"id": "a", "type": "ai/agent", "configuration": {"url": url, "model": "m", "maxRetries": -1,
                                                           "tools": [tool], **config}}]}}


# A long preamble: the tool call comes after the auto mode's 500 ms window, so the text went out first.
PREAMBLE_THEN_CALL = {"text": "Checking now. ", "tool_calls": [{"name": "double", "arguments": {"n": 21}}],
                      "tool_delay": 0.8}


def texts(frames: list[RuleMsg]) -> str:
    return "".join(f.data for f in frames if f.metadata.get("chunk") == "true"
                   and f.metadata.get("tool_call") != "true" and not f.metadata.get("reasoning_content"))


async def run(engine: RuleEngine, *, stream: bool) -> tuple[list[RuleMsg], Any]:
    frames: list[RuleMsg] = []
    meta = {"stream": "true"} if stream else {}
    ends = await engine.run("chat", RuleMsg(type="CHAT", data="double 21", data_type="TEXT", metadata=meta),
                            on_stream=frames.append if stream else None)
    assert [e.relation for e in ends] == ["Success"]
    return frames, ends[0].msg


@pytest.mark.parametrize("mode", ["auto", "firstContent"])
async def test_a_self_healed_preamble_reaches_the_frames_once(mode: str) -> None:
    async with FakeLLM([PREAMBLE_THEN_CALL, {"text": "Done: 42"}]) as srv:
        engine = RuleEngine()
        engine.load(DOUBLE)
        engine.load(chain(srv.url, streamToolCallCheck=mode))
        frames, success = await run(engine, stream=True)
    assert texts(frames) == "Checking now. Done: 42"  # was "Checking now. Checking now. Done: 42"
    assert success.data == "Checking now. Done: 42"  # was "Done: 42": not what the consumer received
    assert success.metadata["full_content"] == "true"


async def test_without_stream_the_success_merges_the_same_text() -> None:
    async with FakeLLM([PREAMBLE_THEN_CALL, {"text": "Done: 42"}]) as srv:
        engine = RuleEngine()
        engine.load(DOUBLE)
        engine.load(chain(srv.url))
        _, success = await run(engine, stream=False)
    assert success.data == "Checking now. Done: 42"
    assert "full_content" not in success.metadata


async def test_a_short_preamble_the_window_held_back_is_not_in_the_frames_nor_the_success() -> None:
    quick = {**PREAMBLE_THEN_CALL, "tool_delay": 0.0}
    async with FakeLLM([quick, {"text": "Done: 42"}]) as srv:
        engine = RuleEngine()
        engine.load(DOUBLE)
        engine.load(chain(srv.url))
        frames, success = await run(engine, stream=True)
    assert texts(frames) == success.data == "Done: 42"


async def test_a_return_directly_answer_reaches_the_frames_and_the_success() -> None:
    call = {"tool_calls": [{"name": "double", "arguments": {"n": 21}}]}
    async with FakeLLM([call]) as srv:
        engine = RuleEngine()
        engine.load(DOUBLE)
        engine.load(chain(srv.url, returnDirectly=["double"]))
        frames, success = await run(engine, stream=True)
    assert json.loads(texts(frames)) == {"n": 42}  # the answer was told on Stream (was: no text frame)
    assert json.loads(success.data) == {"n": 42}


async def test_a_json_answer_is_the_success_alone_so_it_stays_parseable() -> None:
    answer = {"text": '{"result": 42}'}
    async with FakeLLM([PREAMBLE_THEN_CALL, answer, PREAMBLE_THEN_CALL, answer]) as srv:
        engine = RuleEngine()
        engine.load(DOUBLE)
        engine.load(chain(srv.url, streamToolCallCheck="firstContent"))
        frames, streamed = await run(engine, stream=True)
        _, sync = await run(engine, stream=False)
    assert texts(frames) == 'Checking now. {"result": 42}'
    assert json.loads(streamed.data) == json.loads(sync.data) == {"result": 42}
