"""Typed config models of tool descriptors' parts (issue 9 item 16): JSON-path errors, unknown keys warned,
and the document JSON Schema that `chainreact schema` prints."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest

from chainreact.agent import Agent
from chainreact.config.loader import UnknownFieldWarning
from chainreact.errors import ConfigError
from chainreact.testing import FakeLLM
from chainreact.tools.descriptors import (
    AgentToolOptions,
    McpConfig,
    PythonToolConfig,
    document_json_schema,
    validate_part,
)


def test_validate_part_lists_every_problem_with_its_path() -> None:
    with pytest.raises(ConfigError) as ei:
        validate_part(McpConfig, {"args": "x", "toolFilter": {"type": "some", "includedTools": "a"},
                                  "callTimeout": 0}, "$.tools[2].config")
    assert [p for p, _ in ei.value.errors] == [
        "$.tools[2].config.args", "$.tools[2].config.toolFilter.type",
        "$.tools[2].config.toolFilter.includedTools", "$.tools[2].config.callTimeout"]
    assert "3 errors" not in str(ei.value) and "4 errors" in str(ei.value)
    with pytest.raises(ConfigError, match=r"^\$\.c\.full_history: Input should be a valid boolean"):
        validate_part(AgentToolOptions, {"full_history": "maybe"}, "$.c")


def test_validate_part_warns_unknown_keys_once_and_drops_them() -> None:
    with pytest.warns(UnknownFieldWarning) as rec:
        opts = validate_part(AgentToolOptions, {"full_history": True, "fullHistory": 1, "x": 2},
                             "tools[0].config")
    assert len(rec) == 1
    assert str(rec[0].message) == "tools[0].config: unknown field(s) ignored: tools[0].config.fullHistory, " \
                                  "tools[0].config.x"
    assert opts.full_history is True and not opts.model_extra
    assert validate_part(PythonToolConfig, None, "w").function == ""


async def test_agent_tool_options_are_checked_at_build() -> None:
    with FakeLLM([]) as srv:
        sub = Agent(name="helper", url=srv.url, model="m", description="Helps.")
        doc = {"url": srv.url, "model": "m",
               "tools": [{"type": "agent", "targetId": "helper", "config": {"full_history": "maybe"}}]}
        agent = Agent.from_config(doc, agents={"helper": sub})
        with pytest.raises(ConfigError) as ei:
            await agent.run("x")
        assert ei.value.errors[0][0] == "tools[0].config.full_history"


async def test_python_tool_config_unknown_key_is_warned() -> None:
    with FakeLLM([{"text": "ok"}]) as srv:
        doc = {"url": srv.url, "model": "m", "tools": [
            {"type": "python", "config": {"function": "tests.agent.conftest:add", "fn": "typo"}}]}
        with pytest.warns(UnknownFieldWarning, match=r"tools\[0\]\.config\.fn"):
            result = await Agent.from_config(doc).run("x")
        assert result.content == "ok"


def _doc(tool: dict[str, Any]) -> dict[str, Any]:
    return {"url": "http://127.0.0.1:1/v1", "model": "m", "tools": [tool]}


@pytest.mark.parametrize(("tool", "valid"), [
    ({"type": "http", "name": "t", "execution": {"endpoint": "https://x/{id}", "method": "POST"}}, True),
    ({"type": "http", "name": "t", "execution": {"endpoint": "https://x", "method": "TRACE"}}, False),
    ({"type": "http", "name": "t", "execution": {"method": "GET"}}, False),
    ({"type": "mcp", "config": {"server": "python s.py", "tools": "*"}}, True),
    ({"type": "mcp", "config": {"server": "self", "tools": 3}}, False),
    ({"type": "mcp", "mcpClient": {"url": "https://x", "auth": {"type": "oauth"}}}, False),
    ({"type": "agent", "targetId": "a", "config": {"full_history": True}}, True),
    ({"type": "agent", "targetId": "a", "config": {"full_history": "yes please"}}, False),
    ({"type": "python", "config": {"function": 3}}, False),
])
def test_document_schema_covers_descriptor_parts(tool: dict[str, Any], valid: bool) -> None:
    schema = document_json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert jsonschema.Draft202012Validator(schema).is_valid(_doc(tool)) is valid
    json.dumps(schema)  # printable as `chainreact schema`


async def test_mcp_descriptor_errors_name_the_document_entry() -> None:
    doc = {"url": "http://127.0.0.1:1/v1", "model": "m", "tools": [
        "read", {"type": "mcp", "config": {"server": "self", "callTimeout": -1}}]}
    with pytest.raises(ConfigError) as ei:
        await Agent.from_config(doc).run("x")
    assert ei.value.errors[0][0] == "tools[1].config.callTimeout"
