"""A flow's node given alone to `validate` or `run` is reported as a flow node, with how to put it in a
flow document (issue 24, the seeds): it used to be read as an agent document."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chainreact.config import detect_document_kind
from chainreact.errors import ConfigError
from chainreact.flows.model import NODE_TYPES

ROOT = Path(__file__).resolve().parents[2]


def _support_node() -> dict[str, object]:
    doc = json.loads((ROOT / "examples" / "flows" / "support.json").read_text())
    return next(n for n in doc["nodes"] if n["type"] == "aiagent")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=120)


@pytest.mark.parametrize("command", [["validate"], ["run"]])
def test_a_flow_node_alone_is_named_as_one_with_how_to_wrap_it(tmp_path: Path, command: list[str]) -> None:
    path = tmp_path / "node.json"
    path.write_text(json.dumps(_support_node()))
    done = _cli(*command, str(path), *(["hello"] if command == ["run"] else []))
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "flow node ('aiagent')" in out
    assert '{"nodes": [<this node>' in out
    assert "agent document" not in out.replace("not a document", "")


@pytest.mark.parametrize("kind", NODE_TYPES)
def test_every_flow_node_type_is_told_apart(kind: str) -> None:
    # kinds.py restates flows' node types (config sits below flows): this pins them together.
    with pytest.raises(ConfigError) as e:
        detect_document_kind({"name": "n", "type": kind}, source="n.json")
    assert f"flow node ({kind!r})" in str(e.value)


def test_a_rule_chain_node_of_type_rulechain_is_not_a_flow_node() -> None:
    # RuleGo nodes carry a configuration object; an ai/agent node stays an agent document.
    assert detect_document_kind({"type": "ai/agent", "configuration": {"url": "x"}}) == "agent"
    with pytest.raises(ConfigError) as e:
        detect_document_kind({"type": "flow", "configuration": {"targetId": "x"}}, source="n.json")
    assert "flow node" not in str(e.value)
