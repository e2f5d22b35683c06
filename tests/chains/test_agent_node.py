"""The `ai/agent` node against the scripted fake server: the spec's rule-chain examples in sync and
stream mode, frames in order, sessions, session_model/session_extra_fields, chains as tools, MCP self."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chainreact.chains import RuleEngine, RuleMsg
from chainreact.testing import FakeLLM


def agent_chain(config: dict[str, Any], chain_id: str = "agent_chain", **info: Any) -> dict[str, Any]:
    return {"ruleChain": {"id": chain_id, "name": chain_id, **info},
            "metadata": {"nodes": [{"id": "node_agent", "type": "ai/agent", "name": "Assistant",
                                    "configuration": config}]}}


def basic_config(url: str) -> dict[str, Any]:
    # the spec's "Basic Conversational Agent" example, pointed at the fake server
    return {"url": url, "key": "sk-xxx", "model": "deepseek-chat", "maxStep": 100,
            "systemPrompt": "You are a helpful AI assistant.", "params": {"temperature": 0.7, "topP": 0.9},
            "tools": ["bash", "read", "write"]}


async def test_basic_example_sync_success_with_model_and_tokens() -> None:
    async with FakeLLM([{"text": "Hello there"}]) as srv:
        engine = RuleEngine()
        engine.load(agent_chain(basic_config(srv.url)))
        ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data="hi", data_type="TEXT"))
    assert [e.relation for e in ends] == ["Success"]
    m = ends[0].msg
    assert m.data == "Hello there"
    assert m.metadata["model"] == "deepseek-chat"
    assert int(m.metadata["total_tokens"]) > 0
    sent = srv.chat_requests[0].body
    assert sent["messages"][0] == {"role": "system", "content": "You are a helpful AI assistant."}
    assert sent["messages"][-1]["content"] == "hi"
    assert {t["function"]["name"] for t in sent["tools"]} == {"bash", "read", "write"}


async def test_basic_example_stream_frames_in_order_then_full_content(tmp_path: Path,
                                                                     monkeypatch: Any) -> None:
    (tmp_path / "note.txt").write_text("forty-two")
    monkeypatch.chdir(tmp_path)  # builtin tools work in the current directory by default
    script = [{"tool_calls": [{"name": "read", "arguments": {"path": "note.txt"}}]},
              {"reasoning": "Read it.", "text": "The note says forty-two", "chunks": 3}]
    frames: list[RuleMsg] = []
    async with FakeLLM(script) as srv:
        engine = RuleEngine()
        engine.load(agent_chain(basic_config(srv.url)))
        ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data="read the note", data_type="TEXT",
                                                       metadata={"stream": "true"}), on_stream=frames.append)
    kinds = []
    for f in frames:
        md = f.metadata
        if md.get("tool_call") == "true":
            kinds.append(json.loads(f.data)["type"])
        elif md.get("stream_completed") == "true":
            kinds.append("END")
        elif md.get("reasoning_content"):
            kinds.append("REASONING")
        else:
            assert md["chunk"] == "true" and md["model"] == "deepseek-chat"
            kinds.append("TEXT")
    assert kinds[:2] == ["TOOL_CALL_START", "TOOL_CALL_RESULT"]
    assert kinds[-1] == "END" and "REASONING" in kinds
    assert kinds.index("REASONING") < kinds.index("TEXT")
    result = json.loads(frames[1].data)
    assert "forty-two" in result["content"] and result["toolName"] == "read"
    assert "".join(f.data for f in frames if kinds[frames.index(f)] == "TEXT") == "The note says forty-two"
    assert int(frames[-1].metadata["total_tokens"]) > 0
    assert [e.relation for e in ends] == ["Success"]
    assert ends[0].msg.data == "The note says forty-two"
    assert ends[0].msg.metadata["full_content"] == "true"


async def test_stream_frames_reach_a_downstream_node_in_order() -> None:
    # Stream connected to a jsTransform that tags each frame: frames must arrive in the order produced
    doc = agent_chain({"url": "", "model": "m"})
    doc["metadata"]["nodes"].append({"id": "tag", "type": "jsTransform", "configuration": {
        "jsScript": "metadata.tagged = 'yes'; return {msg: msg, metadata: metadata, msgType: msgType};"}})
    doc["metadata"]["connections"] = [{"fromId": "node_agent", "toId": "tag", "type": "Stream"}]
    async with FakeLLM([{"text": "one two three four five six", "chunk_size": 4}]) as srv:
        doc["metadata"]["nodes"][0]["configuration"]["url"] = srv.url
        engine = RuleEngine()
        engine.load(doc)
        ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data="count", data_type="TEXT",
                                                       metadata={"stream": "true"}))
    text_ends = [e for e in ends if e.node_id == "tag" and e.msg.metadata.get("chunk") == "true"
                 and not e.msg.metadata.get("tool_call")]
    assert all(e.msg.metadata["tagged"] == "yes" for e in text_ends)
    assert "".join(e.msg.data for e in text_ends) == "one two three four five six"
    assert [e.relation for e in ends if e.node_id == "node_agent"] == ["Success"]


async def test_errors_go_to_failure_and_to_stream_when_streaming() -> None:
    frames: list[RuleMsg] = []
    async with FakeLLM([{"status": 400, "message": "bad request"}]) as srv:
        cfg = {"url": srv.url, "model": "m", "maxRetries": -1}
        engine = RuleEngine()
        engine.load(agent_chain(cfg))
        ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data="x", data_type="TEXT",
                                                       metadata={"stream": "true"}), on_stream=frames.append)
    assert [e.relation for e in ends] == ["Failure"]
    assert "bad request" in (ends[0].error or "")
    assert frames and "bad request" in frames[-1].data


async def test_session_history_model_switch_and_extra_fields() -> None:
    script = [{"text": "I am Ann's helper"}, {"text": "You said hello", "expect": {"model": "other-model",
                                                                                  "thinking_type": "on"}}]
    async with FakeLLM(script) as srv:
        cfg = {"url": srv.url, "model": "base-model", "systemPrompt": "Be brief.",
               "params": {"extraFields": {"thinking_type": "off", "keep": 1}}}
        engine = RuleEngine()
        engine.load(agent_chain(cfg))
        first = await engine.run("agent_chain", RuleMsg(type="CHAT", data="hello", data_type="TEXT",
                                                        metadata={"sessionKey": "s1"}))
        second = await engine.run("agent_chain", RuleMsg(
            type="CHAT", data="what did I say?", data_type="TEXT",
            metadata={"sessionKey": "s1", "loadHistory": "true", "session_model": "other-model",
                      "session_extra_fields": '{"thinking_type": "on"}'}))
    assert first[0].msg.metadata["model"] == "base-model"
    assert second[0].relation == "Success", second[0].error
    assert second[0].msg.metadata["model"] == "other-model"
    body = srv.chat_requests[1].body
    assert body["keep"] == 1 and body["thinking_type"] == "on"
    roles = [(m["role"], m.get("content")) for m in body["messages"]]
    assert roles == [("system", "Be brief."), ("user", "hello"), ("assistant", "I am Ann's helper"),
                     ("user", "what did I say?")]


async def test_json_messages_input_and_client_system_prompt_override() -> None:
    data = {"messages": [{"role": "system", "content": "client system"}, {"role": "user", "content": "q1"},
                         {"role": "assistant", "content": ""}, {"role": "user", "content": "q2"}]}
    async with FakeLLM([{"text": "a"}]) as srv:
        engine = RuleEngine()
        engine.load(agent_chain({"url": srv.url, "model": "m", "systemPrompt": "configured"}))
        ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data=json.dumps(data)))
    assert ends[0].msg.data == "a"
    sent = srv.chat_requests[0].body["messages"]
    assert [(m["role"], m["content"]) for m in sent] == [("system", "client system"), ("user", "q1"),
                                                        ("user", "q2")]


def _reviewer_chain() -> dict[str, Any]:
    return {"ruleChain": {"id": "code-reviewer", "name": "code_reviewer",
                          "additionalInfo": {"description": "Reviews a piece of code"}},
            "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "configuration": {
                "jsScript": "return {msg: 'LGTM: ' + msg, metadata: metadata, msgType: msgType};"}}]}}


async def test_multi_tool_example_agent_tool_and_mcp_self(tmp_path: Path) -> None:
    # the spec's "Multi-Tool Collaborative Agent", unchanged but for the globals
    project = tmp_path / "project"
    project.mkdir()
    config = {
        "url": "${global.models.providers.default.base_url}",
        "key": "${global.models.providers.default.api_key}",
        "model": "${global.models.providers.default.model}",
        "maxStep": 150,
        "systemPrompt": "You are a full-stack development assistant that can write code, run tests, and "
                        "manage files.",
        "tools": [
            {"type": "builtin", "name": "bash", "config": {"workDir": "${global.root_dir}/project",
                                                          "timeout": 60000}},
            {"type": "builtin", "name": "read", "config": {"workDir": "${global.root_dir}/project"}},
            {"type": "builtin", "name": "write", "config": {"workDir": "${global.root_dir}/project"}},
            {"type": "builtin", "name": "edit", "config": {"workDir": "${global.root_dir}/project"}},
            {"type": "mcp", "config": {"server": "self", "tools": ["list_rule_chains", "get_rule_chain"]}},
            {"type": "agent", "targetId": "code-reviewer"},
        ],
    }
    script = [{"tool_calls": [{"name": "list_rule_chains", "arguments": {}},
                              {"name": "code_reviewer", "arguments": {"input": "print(1)"}}]},
              {"text": "done"}]
    async with FakeLLM(script) as srv:
        props = {"root_dir": str(tmp_path), "models": {"providers": {"default": {
            "base_url": srv.url, "api_key": "k", "model": "glm-5"}}}}
        engine = RuleEngine(properties=props)
        engine.load(_reviewer_chain())
        engine.load(agent_chain(config))
        ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data="review", data_type="TEXT"))
    assert [e.relation for e in ends] == ["Success"], ends[0].error
    first = srv.chat_requests[0].body
    names = {t["function"]["name"] for t in first["tools"]}
    assert names == {"bash", "read", "write", "edit", "list_rule_chains", "get_rule_chain", "code_reviewer"}
    reviewer = next(t for t in first["tools"] if t["function"]["name"] == "code_reviewer")
    assert reviewer["function"]["description"] == "Reviews a piece of code"
    results = {m["tool_call_id"]: m["content"] for m in srv.chat_requests[1].body["messages"]
               if m["role"] == "tool"}
    listed, reviewed = results.values()
    assert {c["id"] for c in json.loads(listed)} == {"code-reviewer", "agent_chain"}
    assert reviewed == "LGTM: print(1)"


async def test_rulechain_tool_errors_are_tool_results_not_crashes() -> None:
    script = [{"tool_calls": [{"name": "missing", "arguments": {"a": 1}}]}, {"text": "recovered"}]
    async with FakeLLM(script) as srv:
        cfg = {"url": srv.url, "model": "m", "tools": [{"type": "rulechain", "targetId": "missing"}]}
        engine = RuleEngine()
        engine.load(agent_chain(cfg))
        ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data="go", data_type="TEXT"))
    assert ends[0].msg.data == "recovered"
    tool_msg = srv.chat_requests[1].body["messages"][-1]
    assert tool_msg["role"] == "tool" and "missing" in tool_msg["content"] and "Error" in tool_msg["content"]


async def test_workspace_example_system_prompt_includes_files(tmp_path: Path) -> None:
    ws = tmp_path / "workspace"
    ws.mkdir()
    (tmp_path / "skills").mkdir()
    for name, text in (("IDENTITY.md", "I am Ws."), ("AGENTS.md", "Agents here."), ("SOUL.md", "Kind.")):
        (ws / name).write_text(text)
    config = {
        "url": "${global.url}", "key": "k", "model": "m", "maxStep": 100,
        "systemPrompt": "${include(global.root_dir+'/workspace/IDENTITY.md')}\n"
                        "${include(global.root_dir+'/workspace/AGENTS.md')}\n"
                        "${include(global.root_dir+'/workspace/SOUL.md')}\nAgent ID: ${ruleChain.id}\n"
                        "${fileExists(global.root_dir+'/B.md') ? include(global.root_dir+'/B.md') : 'no B'}",
        "tools": [{"type": "builtin", "name": "read", "config": {"workDir": "${global.root_dir}/workspace"}}],
    }
    async with FakeLLM([{"text": "ok"}]) as srv:
        engine = RuleEngine(properties={"root_dir": str(tmp_path), "url": srv.url})
        engine.load(agent_chain(config, chain_id="ws_agent"))
        ends = await engine.run("ws_agent", RuleMsg(type="CHAT", data="hi", data_type="TEXT"))
    assert ends[0].relation == "Success", ends[0].error
    system = srv.chat_requests[0].body["messages"][0]["content"]
    assert system == "I am Ws.\nAgents here.\nKind.\nAgent ID: ws_agent\nno B"


async def test_llm_node_makes_one_call_without_tools() -> None:
    async with FakeLLM([{"text": "short"}]) as srv:
        doc = agent_chain({"url": srv.url, "model": "m", "systemPrompt": "s", "tools": ["bash"]})
        doc["metadata"]["nodes"][0]["type"] = "ai/llm"
        engine = RuleEngine()
        engine.load(doc)
        ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data="x", data_type="TEXT"))
    assert ends[0].msg.data == "short"
    assert "tools" not in srv.chat_requests[0].body
    assert len(srv.chat_requests) == 1


async def test_chain_tool_from_python_and_resolver() -> None:
    from chainreact.chains import chain_tool
    from chainreact.chains.tools import tool_resolver

    engine = RuleEngine()
    engine.load(_reviewer_chain())
    tool = chain_tool(engine, "code-reviewer", kind="agent")
    assert tool.name == "code_reviewer" and tool.description == "Reviews a piece of code"
    assert await tool.run({"input": "x = 1"}) == "LGTM: x = 1"
    resolve = tool_resolver(engine)
    assert resolve({"type": "agent", "targetId": "nope"}) is None
    rc = resolve({"type": "rulechain", "targetId": "code-reviewer", "timeout": 50})
    assert rc is not None and rc.name == "code-reviewer"
    out = await rc.run({"a": 1})
    assert out == "LGTM: [object Object]"  # JSON data arrives in JS as an object


async def test_sessions_in_a_state_store_accumulate_each_turn_once(tmp_path: Path) -> None:
    from chainreact.state import open_store

    script = [{"text": "one"}, {"text": "two"}, {"text": "three"}]
    async with FakeLLM(script) as srv, await open_store(f"sqlite:///{tmp_path}/s.db") as store:
        engine = RuleEngine()
        engine.services["sessions"] = store  # the state store's history/append, used as it is
        engine.load(agent_chain({"url": srv.url, "model": "m", "systemPrompt": "sys"}))
        for i, text in enumerate(("q1", "q2", "q3")):
            meta = {"sessionKey": "user-7"} | ({"loadHistory": "true"} if i else {})
            ends = await engine.run("agent_chain", RuleMsg(type="CHAT", data=text, data_type="TEXT",
                                                           metadata=meta))
            assert ends[0].relation == "Success", ends[0].error
        stored = await store.history("user-7")
    last = [(m["role"], m["content"]) for m in srv.chat_requests[2].body["messages"]]
    assert last == [("system", "sys"), ("user", "q1"), ("assistant", "one"), ("user", "q2"),
                    ("assistant", "two"), ("user", "q3")]
    assert [(m.role, m.content) for m in stored] == [*last[1:], ("assistant", "three")]


def test_an_agent_nodes_tools_are_parsed_when_the_chain_loads() -> None:
    import pytest

    from chainreact.chains import ChainLoadError

    config = {"url": "http://127.0.0.1:9/v1", "model": "m",
              "tools": ["bash", {"type": "http", "name": "orders", "description": "x"},
                        {"type": "rulechain", "name": "double"},
                        {"type": "rulechain", "name": "later", "targetId": "${metadata.target}"}]}
    with pytest.raises(ChainLoadError) as e:
        RuleEngine().load(agent_chain(config))
    assert [path for path, _ in e.value.errors or []] == [
        "$.metadata.nodes[0].configuration.tools[1].execution.endpoint",
        "$.metadata.nodes[0].configuration.tools[2].targetId"]
    assert "a 'rulechain' tool needs a targetId" in str(e.value)
