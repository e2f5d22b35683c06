"""Documents told apart by shape: agent, rule chain, flow; anything else refused (issue 9 item 12)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from chainreact.config import detect_document_kind, load_document
from chainreact.errors import ConfigError

CHAIN = {"ruleChain": {"id": "c1", "name": "chain", "root": True},
         "metadata": {"nodes": [{"id": "s1", "type": "jsFilter", "configuration": {"jsScript": "true"}}],
                      "connections": []}}
FLOW = {"nodes": [{"name": "support", "type": "aiagent", "start": True, "aiModel": "gpt-4o"}]}
PACKAGE_JSON = {"name": "my-tools", "version": "1.0.0", "description": "helpers",
                "dependencies": {"left-pad": "^1"}}


@pytest.mark.parametrize(("data", "kind"), [
    ({"id": "n", "type": "ai/agent", "configuration": {}}, "agent"),
    ({"configuration": {"url": "x"}}, "agent"),
    ({"systemPrompt": "hi"}, "agent"),
    ({"name": "a", "tools": ["bash"]}, "agent"),
    (CHAIN, "chain"),
    ({"ruleChain": {"id": "empty"}}, "chain"),
    (FLOW, "flow"),
])
def test_detect_document_kind(data: dict[str, Any], kind: str) -> None:
    assert detect_document_kind(data) == kind


@pytest.mark.parametrize("data", [{}, PACKAGE_JSON, {"name": "x", "description": "y"}, {"nodes": [1, 2]},
                                  [1, 2], "text", None])
def test_anything_else_is_an_error_not_an_empty_agent(data: Any) -> None:
    with pytest.raises(ConfigError) as e:
        detect_document_kind(data, source="doc.json")
    assert "doc.json" in str(e.value)
    with pytest.raises(ConfigError):
        load_document(data) if isinstance(data, dict) else load_document(json.dumps(data) + "\n")


@pytest.mark.parametrize(("data", "what"), [(CHAIN, "a rule chain"), (FLOW, "a flow")])
def test_load_document_refuses_chains_and_flows(data: dict[str, Any], what: str, tmp_path: Path) -> None:
    p = tmp_path / "x.json"
    p.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match=f"{what}, not an agent document"):
        load_document(p)


def test_sub_agent_registry_skips_a_package_json(tmp_path: Path) -> None:
    from chainreact.agent.build import AgentRegistry

    (tmp_path / "package.json").write_text(json.dumps(PACKAGE_JSON))
    (tmp_path / "helper.json").write_text(json.dumps({"id": "h1", "type": "ai/agent",
                                                       "configuration": {"systemPrompt": "help"}}))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # before: package.json loaded as an agent with unknown fields
        found = AgentRegistry(dirs=[tmp_path]).find("h1")
    assert found is not None and found.id == "h1"
