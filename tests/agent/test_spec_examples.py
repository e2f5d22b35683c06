"""The rule-chain spec's "Agent with a Workspace" and "Multi-Tool Collaborative Agent" documents, run
unchanged: globals point them at the scripted server and a temporary workspace; MCP `self` is served by
a test provider, and `code-reviewer` is another agent document."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact.agent import Agent
from chainreact.testing import FakeLLM

from .conftest import call

SPEC = Path(__file__).resolve().parents[1] / "config" / "spec_examples"


def globals_for(srv: FakeLLM, root: Path) -> dict[str, Any]:
    return {"root_dir": str(root),
            "models": {"providers": {"default": {"base_url": srv.url, "api_key": "sk-x", "model": "spec-m"}}}}


async def test_workspace_agent(tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    (ws / "skills" / "haiku").mkdir(parents=True)
    (ws / "IDENTITY.md").write_text("I am the workspace agent.")
    (ws / "AGENTS.md").write_text("Agents: just me.")
    (ws / "SOUL.md").write_text("Be kind.")
    (ws / "notes.txt").write_text("line one\nline two\n")
    (ws / "skills" / "haiku" / "SKILL.md").write_text(
        "---\nname: haiku\ndescription: Write a haiku\n---\nFive, seven, five syllables.\n")
    (tmp_path / "skills").mkdir()

    with FakeLLM([]) as srv:
        srv.add_turns([
            {"tool_calls": [call("read", {"path": "notes.txt"}, id="r"),
                            call("bash", {"command": "echo hello from bash"}, id="b")]},
            {"tool_calls": [call("write", {"path": "out.txt", "content": "written"}, id="w")]},
            {"tool_calls": [call("edit", {"path": "out.txt", "old_text": "written", "new_text": "edited"},
                                 id="e"),
                            call("skill", {"name": "haiku"}, id="s")]},
            {"text": "All done."},
        ])
        agent = Agent.from_config(SPEC / "workspace.json", globals=globals_for(srv, tmp_path))
        result = await agent.run("work")
        first = srv.chat_requests[0].body
        system = first["messages"][0]["content"]
        assert system.startswith("I am the workspace agent.\nAgents: just me.\nBe kind.\nCurrent time: ")
        assert system.endswith("Agent ID: node_agent") or "Agent ID: node_agent" in system
        assert first["model"] == "spec-m" and first["max_completion_tokens"] == 16384
        assert [t["function"]["name"] for t in first["tools"]] == ["bash", "read", "write", "edit", "skill"]
        results = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
        assert "line one" in results["r"] and "hello from bash" in results["b"]
        assert (ws / "out.txt").read_text() == "edited"
        assert "Five, seven, five syllables." in results["s"]
        assert not any(c.startswith("Error") for c in results.values()), results
        assert result.content == "All done."
        await agent.aclose()


class RuleChainProvider:
    """The host application's tools (MCP `server: "self"`)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []

    async def list_tool_definitions(self) -> list[dict[str, Any]]:
        obj = {"type": "object", "properties": {"id": {"type": "string"}}}
        return [{"name": "list_rule_chains", "description": "List chains.", "parameters": {"type": "object"}},
                {"name": "get_rule_chain", "description": "Get a chain.", "parameters": obj},
                {"name": "delete_rule_chain", "description": "Delete a chain.", "parameters": obj}]

    async def call_tool(self, name: str, args: dict[str, Any]) -> str:
        self.calls.append((name, args))
        return json.dumps(["chain-a", "chain-b"]) if name == "list_rule_chains" else f"chain {args.get('id')}"


async def test_multi_tool_agent(tmp_path: Path) -> None:
    (tmp_path / "project").mkdir()
    provider = RuleChainProvider()
    with FakeLLM([]) as srv, FakeLLM([]) as reviewer_srv:
        reviewer = Agent(name="code-reviewer", description="Reviews code.", url=reviewer_srv.url, model="r")
        srv.add_turns([
            {"tool_calls": [call("list_rule_chains", {}, id="l"), call("get_rule_chain", {"id": "a"}, id="g"),
                            call("code-reviewer", {"request": "review main.py"}, id="cr")]},
            {"text": "Reviewed."},
        ])
        reviewer_srv.add_turns([{"text": "LGTM"}])
        agent = Agent.from_config(SPEC / "multi_tool.json", globals=globals_for(srv, tmp_path),
                                  providers={"self": provider}, agents={"code-reviewer": reviewer})
        result = await agent.run("check the chains")
        names = [t["function"]["name"] for t in srv.chat_requests[0].body["tools"]]
        # the allowlist keeps delete_rule_chain out
        assert names == ["bash", "read", "write", "edit",
                         "list_rule_chains", "get_rule_chain", "code-reviewer"]
        results = {m.tool_call_id: m.content for m in result.messages if m.role == "tool"}
        assert json.loads(results["l"]) == ["chain-a", "chain-b"]
        assert results["g"] == "chain a" and results["cr"] == "LGTM"
        assert provider.calls == [("list_rule_chains", {}), ("get_rule_chain", {"id": "a"})]
        await agent.aclose()
