"""`agent` tool descriptors: parameters and timeout (issue 9 item 11); cycles and depth (issue 10 item 8)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from chainreact.agent import Agent
from chainreact.agent.build import MAX_AGENT_DEPTH
from chainreact.errors import ConfigError
from chainreact.testing import FakeLLM

from .conftest import call


def _doc(path: Path, id: str, url: str, tools: list[Any] | None = None, **cfg: Any) -> Path:
    path.write_text(json.dumps({"id": id, "name": id, "type": "ai/agent",
                                "configuration": {"url": url, "model": "m", "tools": tools or [], **cfg}}))
    return path


URL = "http://127.0.0.1:9/v1"  # never called: these agents only load
SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


async def test_parameters_become_the_input_schema(tmp_path: Path) -> None:
    with FakeLLM([]) as outer, FakeLLM([]) as inner:
        _doc(tmp_path / "weather.json", "weather", inner.url, description="Weather by city.")
        main = _doc(tmp_path / "main.json", "main", outer.url,
                    [{"type": "agent", "targetId": "weather", "parameters": SCHEMA}])
        outer.add_turns([{"tool_calls": [call("weather", {"city": "Oslo"})]}, {"text": "cold"}])
        inner.add_turns([{"text": "-3 C"}])
        result = await Agent.from_config(main).run("weather in Oslo?")
        spec = outer.chat_requests[0].body["tools"][0]["function"]
        assert spec["parameters"] == SCHEMA
        assert inner.chat_requests[0].body["messages"][-1]["content"] == '{"city":"Oslo"}'
        assert [m.content for m in result.messages if m.role == "tool"] == ["-3 C"]


async def test_schema_is_enforced_on_the_call(tmp_path: Path) -> None:
    with FakeLLM([]) as outer, FakeLLM([]) as inner:
        _doc(tmp_path / "weather.json", "weather", inner.url)
        main = _doc(tmp_path / "main.json", "main", outer.url,
                    [{"type": "agent", "targetId": "weather", "parameters": json.dumps(SCHEMA)}])
        outer.add_turns([{"tool_calls": [call("weather", {"request": "Oslo"})]}, {"text": "sorry"}])
        result = await Agent.from_config(main).run("weather?")
        tool_msg = next(m for m in result.messages if m.role == "tool")
        assert "invalid arguments" in str(tool_msg.content) and "city" in str(tool_msg.content)
        assert inner.chat_requests == []


async def test_timeout_stops_a_slow_sub_agent(tmp_path: Path) -> None:
    with FakeLLM([]) as outer, FakeLLM([]) as inner:
        _doc(tmp_path / "slow.json", "slow", inner.url)
        main = _doc(tmp_path / "main.json", "main", outer.url,
                    [{"type": "agent", "targetId": "slow", "timeout": 200}])
        outer.add_turns([{"tool_calls": [call("slow", {"request": "x"})]}, {"text": "gave up"}])
        inner.add_turns([{"text": "late", "first_byte_delay": 3}])
        agent = Agent.from_config(main)
        assert (await agent.tools())[0].timeout == 0.2
        result = await agent.run("go")
        tool_msg = next(m for m in result.messages if m.role == "tool")
        assert "timed out after 0.2 s" in str(tool_msg.content) and result.content == "gave up"


async def test_default_timeout_is_120_s(tmp_path: Path) -> None:
    _doc(tmp_path / "sub.json", "sub", URL)
    main = _doc(tmp_path / "main.json", "main", URL, [{"type": "agent", "targetId": "sub"}])
    assert (await Agent.from_config(main).tools())[0].timeout == 120


async def test_an_agent_listing_itself_is_refused(tmp_path: Path) -> None:
    main = _doc(tmp_path / "main.json", "main", URL, [{"type": "agent", "targetId": "main"}])
    with pytest.raises(ConfigError, match=r"reaches itself.*main -> main"):
        await Agent.from_config(main).tools()


async def test_a_cycle_through_other_agents_is_refused(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"
    _doc(tmp_path / "b.json", "b", url, [{"type": "agent", "targetId": "c"}])
    _doc(tmp_path / "c.json", "c", url, [{"type": "agent", "targetId": "a"}])
    a = _doc(tmp_path / "a.json", "a", url, [{"type": "agent", "targetId": "b"}])
    with pytest.raises(ConfigError, match=r"a -> b -> c -> a"):
        await Agent.from_config(a).tools()
    # a shared sub-agent (a diamond) is not a cycle
    _doc(tmp_path / "d.json", "d", url, [{"type": "agent", "targetId": t} for t in ("e", "f")])
    _doc(tmp_path / "e.json", "e", url, [{"type": "agent", "targetId": "f"}])
    _doc(tmp_path / "f.json", "f", url)
    assert [t.name for t in await Agent.from_config(tmp_path / "d.json").tools()] == ["e", "f"]


async def test_nesting_depth_is_bounded(tmp_path: Path) -> None:
    url = "http://127.0.0.1:9/v1"
    n = MAX_AGENT_DEPTH + 1
    for i in range(n):
        _doc(tmp_path / f"n{i}.json", f"n{i}", url, [{"type": "agent", "targetId": f"n{i + 1}"}])
    _doc(tmp_path / f"n{n}.json", f"n{n}", url)
    with pytest.raises(ConfigError, match=f"deeper than {MAX_AGENT_DEPTH}"):
        await Agent.from_config(tmp_path / "n0.json").tools()
    # one level less is fine
    assert [t.name for t in await Agent.from_config(tmp_path / "n1.json").tools()] == ["n2"]
