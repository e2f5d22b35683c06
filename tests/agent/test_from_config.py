"""Agents built from documents: templates, tool descriptors, sub-agents by id."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from chainreact.agent import Agent
from chainreact.errors import ConfigError
from chainreact.testing import FakeLLM

from .conftest import call


def node(configuration: dict, id: str = "node_agent", name: str = "Assistant") -> dict:
    return {"id": id, "type": "ai/agent", "name": name, "configuration": configuration}


async def test_globals_and_templates_reach_the_wire(server: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "workspace").mkdir()
    (tmp_path / "workspace" / "IDENTITY.md").write_text("I am the identity.")
    doc = node({
        "url": "${global.models.default.base_url}",
        "key": "${global.models.default.api_key}",
        "model": "${global.models.default.model}",
        "systemPrompt": "${include(global.root_dir+'/workspace/IDENTITY.md')}\n"
                        "${include(global.root_dir+'/workspace/MISSING.md')}Agent ID: ${ruleChain.id}",
        "messages": [{"role": "user", "content": "preset for ${global.user}"}],
    })
    g = {"models": {"default": {"base_url": server.url, "api_key": "sk-test", "model": "templated-model"}},
         "root_dir": str(tmp_path), "user": "ada"}
    server.add_turns([{"text": "ok"}])
    agent = Agent.from_config(doc, globals=g)
    await agent.run("hello")
    req = server.chat_requests[0]
    assert req.body["model"] == "templated-model"
    assert req.headers["authorization"] == "Bearer sk-test"
    assert req.body["messages"][0]["content"] == "I am the identity.\nAgent ID: node_agent"
    assert req.body["messages"][1]["content"] == "preset for ada"
    assert agent.name == "Assistant"


async def test_python_tool_descriptor(server: FakeLLM) -> None:
    doc = {"url": server.url, "model": "m", "tools": [
        {"type": "python", "name": "tests.agent.conftest:add"},
        {"type": "python", "name": "plus", "description": "Adds.",
         "config": {"function": "tests.agent.conftest:plain_add"},
         "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                        "required": ["a", "b"]}},
    ]}
    server.add_turns([{"tool_calls": [call("plus", {"a": 2, "b": 5})]}, {"text": "7"}])
    result = await Agent.from_config(doc).run("x")
    names = [t["function"]["name"] for t in server.chat_requests[0].body["tools"]]
    assert names == ["add", "plus"]
    assert [m.content for m in result.messages if m.role == "tool"] == ["7"]


@pytest.mark.parametrize("entry, message", [
    ("no-such-tool", "unknown builtin tool 'no-such-tool'"),
    ({"type": "rulechain", "targetId": "chain1"}, "load the chain"),
    ({"type": "agent", "targetId": "ghost"}, "no agent with id 'ghost'"),
    ({"type": "python", "name": "nope.module:fn"}, "cannot import 'nope.module:fn'"),
])
async def test_bad_tool_entries_are_config_errors(server: FakeLLM, entry: object, message: str) -> None:
    agent = Agent.from_config({"url": server.url, "model": "m", "tools": [entry]})
    with pytest.raises(ConfigError, match=message):
        await agent.run("x")


async def test_sub_agent_by_target_id_from_directory(tmp_path: Path) -> None:
    with FakeLLM([]) as outer_srv, FakeLLM([]) as inner_srv:
        (tmp_path / "reviewer.json").write_text(json.dumps(node(
            {"url": inner_srv.url, "model": "m", "description": "Reviews code."},
            id="code-reviewer", name="code-reviewer")))
        main = tmp_path / "main.json"
        main.write_text(json.dumps(node({"url": outer_srv.url, "model": "m",
                                         "tools": [{"type": "agent", "targetId": "code-reviewer"}]})))
        outer_srv.add_turns([{"tool_calls": [call("code-reviewer", {"request": "review x=1"})]},
                             {"text": "reviewed"}])
        inner_srv.add_turns([{"text": "looks fine"}])
        result = await Agent.from_config(main).run("please review")
        spec = outer_srv.chat_requests[0].body["tools"][0]["function"]
        assert spec["name"] == "code-reviewer" and spec["description"] == "Reviews code."
        assert [m.content for m in result.messages if m.role == "tool"] == ["looks fine"]


async def test_an_unknown_sub_agent_lists_only_agent_documents(server: FakeLLM, tmp_path: Path) -> None:
    # The seeds (issue 24): the error listed every file of the folder, chains, flows and package.json too.
    reviewer = node({"url": server.url, "model": "m"}, id="code-rev")
    (tmp_path / "reviewer.json").write_text(json.dumps(reviewer))
    (tmp_path / "helper.yaml").write_text("systemPrompt: help\n")
    (tmp_path / "chain.json").write_text(json.dumps({"ruleChain": {"id": "c"}, "metadata": {"nodes": []}}))
    (tmp_path / "flow.json").write_text(json.dumps({"nodes": [{"name": "a", "type": "end"}]}))
    (tmp_path / "package.json").write_text(json.dumps({"name": "tools", "version": "1"}))
    main = tmp_path / "main.json"
    tools = [{"type": "agent", "targetId": "x"}]
    main.write_text(json.dumps({"url": server.url, "model": "m", "tools": tools}))
    with pytest.raises(ConfigError) as e:
        await Agent.from_config(main).run("x")
    assert "known agent ids: code-rev, helper, main, reviewer." in str(e.value)


async def test_duplicate_tool_names_rejected(server: FakeLLM) -> None:
    from .conftest import add

    agent = Agent(url=server.url, model="m", tools=[add, add])
    with pytest.raises(ConfigError, match="two tools are named 'add'"):
        await agent.run("x")


async def test_python_tool_next_to_the_document(server: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "doc_local_tools.py").write_text(
        "def mul(a: int, b: int) -> int:\n    '''Multiply.'''\n    return a * b\n")
    doc = tmp_path / "agent.json"
    doc.write_text(json.dumps({"url": server.url, "model": "m",
                               "tools": [{"type": "python", "config": {"function": "doc_local_tools:mul"}}]}))
    server.add_turns([{"tool_calls": [call("mul", {"a": 6, "b": 7})]}, {"text": "42"}])
    result = await Agent.from_config(doc).run("6*7")
    assert [m.content for m in result.messages if m.role == "tool"] == ["42"]


async def test_session_values_and_expressions_in_one_instruction(server: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "notes.md").write_text('JSON like {"a": 1} is fine in included files.')
    server.add_turns([{"text": "ok"}, {"text": "ok"}])
    agent = Agent(url=server.url, model="m", globals={"dir": str(tmp_path)},
                  instruction="Hello {user}. ${include(global.dir + '/notes.md')} {{literal}}")
    await agent.run("x", session_values={"user": "Ada"})
    assert server.chat_requests[0].body["messages"][0]["content"] == \
        'Hello Ada. JSON like {"a": 1} is fine in included files. {literal}'
    # without session values, {Key} placeholders are left as written (programmatic API rule)
    await agent.run("x")
    assert server.chat_requests[1].body["messages"][0]["content"].startswith("Hello {user}.")


async def test_python_tool_thread_false_runs_on_the_event_loop(server: FakeLLM, tmp_path: Path) -> None:
    (tmp_path / "doc_thread_tools.py").write_text(
        "import threading\n\n\ndef where() -> str:\n    '''Which thread runs me.'''\n"
        "    return threading.current_thread().name\n")
    doc = tmp_path / "agent.json"
    tools = [{"type": "python", "name": "inline",
              "config": {"function": "doc_thread_tools:where", "thread": False}},
             {"type": "python", "name": "threaded", "config": {"function": "doc_thread_tools:where"}}]
    doc.write_text(json.dumps({"url": server.url, "model": "m", "tools": tools}))
    server.add_turns([{"tool_calls": [call("inline", {}, "c1"), call("threaded", {}, "c2")]}, {"text": "ok"}])
    result = await Agent.from_config(doc).run("where?")
    inline, threaded = [m.content for m in result.messages if m.role == "tool"]
    assert inline == threading.current_thread().name  # the test's event loop thread
    assert threaded != inline
