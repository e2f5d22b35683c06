"""A run that ends because it reached maxStep (maxStepPolicy "answer", decision 7 of
docs/spec-conformance.md) says so: a `warning` event before `final`, the result's metadata, the chain
node's Stream frame and Success metadata, the CLI's stderr (issue 24, "The seeds")."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainreact.agent import Agent
from chainreact.chains import RuleEngine, RuleMsg
from chainreact.testing import FakeLLM
from chainreact.types import RunWarning

from .conftest import add

CALL = {"tool_calls": [{"name": "add", "arguments": {"a": 2, "b": 3}}]}
ANSWER = {"text": "Probably 5."}
ROOT = Path(__file__).resolve().parents[2]


async def test_a_run_at_max_steps_warns_before_its_final_answer() -> None:
    with FakeLLM([CALL, ANSWER, {"text": "5"}]) as srv:
        agent = Agent(name="t", url=srv.url, model="m", key="k", tools=[add], config={"maxStep": 1})
        events = [ev async for ev in agent.stream("2+3?")]
        normal = await Agent(name="t", url=srv.url, model="m", key="k").run("2+3?")
    kinds = [e.type for e in events]
    assert kinds[-2:] == ["warning", "final"]
    warning = events[-2]
    assert isinstance(warning, RunWarning) and warning.code == "max_steps" and "maxStep (1" in warning.message
    assert events[-1].stop_reason == "max_steps"  # type: ignore[attr-defined]
    assert "warning" not in normal.metadata and normal.stop_reason == "stop"  # a normal answer has none


def chain(url: str) -> dict[str, Any]:
    double = {"type": "rulechain", "targetId": "double", "name": "add", "description": "Add"}
    return {"ruleChain": {"id": "c", "name": "c"}, "metadata": {"nodes": [
        {"id": "a", "type": "ai/agent", "configuration": {"url": url, "model": "m", "maxStep": 1,
                                                           "tools": [double]}}]}}


DOUBLE = {"ruleChain": {"id": "double", "name": "double"}, "metadata": {"nodes": [
    {"id": "t", "type": "jsTransform", "configuration": {"jsScript": "return {msg: msg, metadata: metadata, "
                                                                     "msgType: msgType};"}}]}}


@pytest.mark.parametrize("stream", [True, False])
async def test_the_agent_node_frames_the_warning_and_marks_its_success(stream: bool) -> None:
    frames: list[RuleMsg] = []
    with FakeLLM([CALL, ANSWER]) as srv:
        engine = RuleEngine()
        engine.load(DOUBLE)
        engine.load(chain(srv.url))
        meta = {"stream": "true"} if stream else {}
        ends = await engine.run("c", RuleMsg(type="CHAT", data="2+3?", data_type="TEXT", metadata=meta),
                                on_stream=frames.append if stream else None)
    success = ends[0].msg
    assert ends[0].relation == "Success" and success.data == "Probably 5."
    assert success.metadata["warning"] == "max_steps" and "maxStep (1" in success.metadata["warning_message"]
    if stream:
        warned = [f for f in frames if f.metadata.get("warning")]
        assert [f.metadata["warning"] for f in warned] == ["max_steps"]
        assert warned[0].data == success.metadata["warning_message"]
        assert "chunk" not in warned[0].metadata  # not answer text


def cli(doc: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "CHAINREACT_DEBUG"}
    return subprocess.run([sys.executable, "-m", "chainreact", "run", str(doc), "2+3?", *args],
                          capture_output=True, text=True, env=env, timeout=120, cwd=ROOT)


def test_the_cli_says_when_the_answer_came_at_max_steps(tmp_path: Path) -> None:
    with FakeLLM([CALL, ANSWER], loop=True) as srv:
        doc = tmp_path / "agent.json"
        doc.write_text(json.dumps({"url": srv.url, "model": "m", "maxStep": 1, "tools": [
            {"type": "python", "name": "add", "config": {"function": "tests.agent.conftest:plain_add"}}]}))
        streamed = cli(doc, "--stream")
        plain = cli(doc)
        lines = cli(doc, "--jsonl")
    for out in (streamed, plain):
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip() == "Probably 5."  # stdout keeps only the answer
        assert "warning: the run reached maxStep (1 steps)" in out.stderr
    events = [json.loads(line) for line in lines.stdout.splitlines()]
    assert [e["type"] for e in events][-2:] == ["warning", "final"] and events[-2]["code"] == "max_steps"
