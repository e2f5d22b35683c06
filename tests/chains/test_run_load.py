"""`chainreact run --load`: an agent document's rulechain tools and the MCP `self` provider run on the
loaded chains, from the command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "chains"


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "chainreact", "run", *args], capture_output=True, text=True,
                          timeout=120)


def test_rulechain_tool_and_self_provider_from_the_cli(fake_llm: Any, tmp_path: Path) -> None:
    llm = fake_llm([
        {"tool_calls": [{"name": "check_reading", "arguments": {"temperature": 71}},
                        {"name": "list_rule_chains", "arguments": {}}]},
        {"text": "It is too hot."},
    ])
    doc = {"url": llm.url, "key": "k", "model": "fake-model", "maxRetries": -1,
           "tools": [{"type": "rulechain", "targetId": "alarm", "name": "check_reading",
                      "description": "Classify a reading"},
                     {"type": "mcp", "config": {"server": "self", "tools": ["list_rule_chains"]}}]}
    (tmp_path / "agent.json").write_text(json.dumps(doc))
    proc = _run(str(tmp_path / "agent.json"), "How hot?", "--json", "--load", str(EXAMPLES / "alarm.json"))
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["content"] == "It is too hot."
    results = {m["tool_call_id"]: m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool"}
    chain_result, listing = results.values()
    assert "is too hot" in chain_result  # the alarm chain's exprTransform ran on the tool's arguments
    assert "alarm" in listing and "Temperature alarm" in listing


def test_a_rulechain_tool_without_the_chain_says_how_to_load_it(tmp_path: Path) -> None:
    doc = {"url": "http://127.0.0.1:9/v1", "model": "m",
           "tools": [{"type": "rulechain", "targetId": "alarm", "name": "check"}]}
    (tmp_path / "agent.json").write_text(json.dumps(doc))
    proc = _run(str(tmp_path / "agent.json"), "hi")
    assert proc.returncode == 1
    assert "alarm" in proc.stderr and "--load" in proc.stderr


def test_runs_resume_reloads_the_chains_the_run_was_started_with(fake_llm: Any, tmp_path: Path) -> None:
    """An interrupted `run --load` run resumed in another process: its rulechain tool works again without
    repeating --load (the paths are saved with the run); --load on `runs resume` overrides them."""
    llm = fake_llm([
        {"tool_calls": [{"id": "q", "name": "ask_user", "arguments": {"question": "Which reading?"}}]},
        {"tool_calls": [{"id": "c", "name": "check_reading", "arguments": {"temperature": 71}}]},
        {"text": "It is too hot."},
    ])
    doc = {"url": llm.url, "key": "k", "model": "fake-model", "maxRetries": -1,
           "tools": ["ask_user", {"type": "rulechain", "targetId": "alarm", "name": "check_reading",
                                  "description": "Classify a reading"}]}
    (tmp_path / "agent.json").write_text(json.dumps(doc))
    url = f"sqlite:///{tmp_path}/state.db"
    first = _run(str(tmp_path / "agent.json"), "How hot?", "--json", "--state", url,
                 "--load", str(EXAMPLES / "alarm.json"))
    assert first.returncode == 3, first.stderr  # it stops to ask (docs/cli.md: exit code 3)
    run_id = json.loads(first.stdout)["run_id"]
    resumed = subprocess.run([sys.executable, "-m", "chainreact", "runs", "resume", run_id, "--state", url,
                              "--answer", "last", "--json"], capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["content"] == "It is too hot."
    [chain_result] = [m["content"] for m in llm.chat_requests[2].messages if m.get("tool_call_id") == "c"]
    assert "is too hot" in chain_result  # the alarm chain ran in the resuming process


def test_every_host_refuses_a_rulechain_tool_whose_chain_is_not_loaded(tmp_path: Path) -> None:
    """The one path from a document to an agent (chains.agent_from_document) checks the targets for the
    CLI, the server's catalog and `chainreact worker` alike: the missing chain is named when the agent is
    built, not at its first run."""
    import pytest

    from chainreact.errors import ConfigError
    from chainreact.server.catalog import Catalog

    doc = {"url": "http://127.0.0.1:9/v1", "model": "m",
           "tools": [{"type": "rulechain", "targetId": "nowhere", "name": "check"}]}
    agent = tmp_path / "agents" / "agent.json"
    agent.parent.mkdir()
    agent.write_text(json.dumps(doc))
    # The server: given as a file, it is an error; in a folder, a problem listed and the rest served.
    with pytest.raises(ConfigError, match="nowhere") as err:
        Catalog.load([agent, EXAMPLES / "alarm.json"])
    assert err.value.errors == [("$.tools[0].targetId", "no loaded rule chain 'nowhere'")]
    cat = Catalog.load([agent.parent, EXAMPLES / "alarm.json"])
    assert "agent" not in cat.entries and "alarm" in cat.entries
    assert any("nowhere" in p for p in cat.problems)
    # The worker: refused before it connects to anything (port 9: nobody listens).
    proc = subprocess.run([sys.executable, "-m", "chainreact", "worker", str(agent), "--temporal",
                           "127.0.0.1:9", "--load", str(EXAMPLES / "alarm.json")],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1, proc.stderr
    assert "'nowhere'" in proc.stderr and "not loaded" in proc.stderr
