"""`chainreact flow send` as real processes: two processes in a row continue one conversation on SQLite;
the stable --json form; `chainreact validate` and `flow schema` cover flows."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chainreact.errors import ConfigError
from chainreact.flows import Flow

from .test_engine import USER, support_flow, turn

SRC = str(Path(__file__).resolve().parents[2] / "src")


def cli(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CHAINREACT_")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                          timeout=120, env=env, cwd=cwd)


def test_two_processes_continue_one_conversation(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([
        turn({"response": "Which order?", "resolved": False}),
        turn({"response": "Refund started.", "resolved": True}),
    ])
    doc = support_flow(srv.url)
    path = tmp_path / "support.json"
    path.write_text(json.dumps(doc))
    state = f"sqlite:///{tmp_path}/state.db"
    user = json.dumps(USER)
    r1 = cli("flow", "send", str(path), "I want a refund", "--session", "s1", "--user", user,
             "--state", state, "--json")
    assert r1.returncode == 0, r1.stderr
    assert json.loads(r1.stdout) == {
        "node": "support", "ended": False, "output": {"response": "Which order?", "resolved": False},
        "messages": [{"node": "greet", "role": "assistant", "content": "Hello Ann!"},
                     {"node": "support", "role": "assistant", "content": "Which order?"}]}
    r2 = cli("flow", "send", str(path), "order 42", "--session", "s1", "--user", user, "--state", state,
             "--json")
    assert r2.returncode == 0, r2.stderr
    out = json.loads(r2.stdout)
    assert out["node"] == "survey" and out["ended"] is False
    assert [m["content"] for m in out["messages"]] == ["Refund started.", "Anything else, Ann?"]
    # The second process read the first one's memory from the store: the earlier exchange was sent.
    sent = srv.chat_requests[1].messages
    assert [m["content"] for m in sent[1:]] == [
        "Customer says: I want a refund", json.dumps({"response": "Which order?", "resolved": False}),
        "Customer says: order 42"]


def test_human_output_and_usage_errors(fake_llm: Any, tmp_path: Path) -> None:
    srv = fake_llm([turn({"response": "Hi!", "resolved": False})])
    path = tmp_path / "support.json"
    path.write_text(json.dumps(support_flow(srv.url)))
    state = f"sqlite:///{tmp_path}/state.db"
    r = cli("flow", "send", str(path), "hello", "--session", "s", "--state", state)
    assert r.returncode == 0, r.stderr
    assert r.stdout == "Hello !\nHi!\n"
    assert "[waiting at node 'support']" in r.stderr
    r = cli("flow", "send", str(path), "hello", "--session", "s", "--user", "[1]", "--state", state)
    assert r.returncode == 2 and "--user: expected a JSON object" in r.stderr
    # A blank message, or '-' with stdin closed (a script), is a usage error before any model call, as
    # for `run`: it sent the agent "Customer says: " and printed its reply, exit 0.
    for text, said in [("  ", "the message given is blank"), ("-", "stdin was empty")]:
        r = cli("flow", "send", str(path), text, "--session", "s2", "--state", state)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert f"no message: {said}" in r.stderr
    assert len(srv.chat_requests) == 1  # the first turn's only


def test_validate_reports_every_flow_problem_and_schema_prints(tmp_path: Path) -> None:
    doc = support_flow("http://127.0.0.1:9/v1")
    doc["nodes"][1]["agentOutcomes"][0]["condition"] = "{{output.resolved}} ==="
    doc["nodes"][2]["transition"] = {"targetId": "gone"}
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    r = cli("validate", str(path))
    assert r.returncode == 1
    assert f"{path}: $.nodes[1].agentOutcomes[0].condition: does not parse" in r.stderr
    assert f"{path}: $.nodes[2].transition.targetId: no node named 'gone'" in r.stderr
    good = tmp_path / "good.json"
    good.write_text(json.dumps(support_flow("http://127.0.0.1:9/v1")))
    r = cli("validate", str(good))
    assert r.returncode == 0, r.stderr
    assert "ok (flow: 'support', 5 node(s)" in r.stdout
    r = cli("flow", "schema")
    assert r.returncode == 0
    schema = json.loads(r.stdout)
    assert schema["title"] == "chainreact flow" and "AIAgentNode" in json.dumps(schema)


def test_an_agent_nodes_tools_are_parsed_at_load_with_their_paths(tmp_path: Path) -> None:
    doc = support_flow("http://127.0.0.1:9/v1")
    node = next(i for i, n in enumerate(doc["nodes"]) if n["type"] == "aiagent")
    doc["nodes"][node]["tools"] = [
        {"name": "lookup", "description": "Find an order."},  # standard (no type), without execution
        {"name": "later", "description": "x", "execution": {"endpoint": "${global.base}/orders"}},
    ]
    path = tmp_path / "tools.json"
    path.write_text(json.dumps(doc))
    r = cli("validate", str(path))
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == [
        f"{path}: $.nodes[{node}].tools[0].execution.endpoint: required"]
    with pytest.raises(ConfigError) as e:  # a flow that would fail mid-conversation does not load
        Flow.load(path)
    assert e.value.errors == [(f"$.nodes[{node}].tools[0].execution.endpoint", "required")]
