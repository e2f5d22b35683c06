"""Descriptor parsing: both spec forms, defaults, auth, and errors that name the field."""

from __future__ import annotations

import pytest

from chainreact.config import ToolDescriptor
from chainreact.errors import ConfigError
from chainreact.tools.mcp import MCPServer, parse_descriptor
from chainreact.tools.mcp.config import DEFAULT_CALL_TIMEOUT, DEFAULT_LIST_TIMEOUT


def test_rule_chain_self_provider_form():
    cfg = parse_descriptor(
        {"type": "mcp", "config": {"server": "self", "tools": ["list_rule_chains", "get_rule_chain"]}}
    )
    assert cfg.transport == "provider"
    assert cfg.provider == "self"
    assert cfg.name == "self"
    assert cfg.filter.type == "include"
    assert cfg.filter.names == ["list_rule_chains", "get_rule_chain"]
    assert (
        (cfg.list_timeout, cfg.call_timeout) == (DEFAULT_LIST_TIMEOUT, DEFAULT_CALL_TIMEOUT) == (15.0, 120.0)
    )


@pytest.mark.parametrize("tools", [None, [], ["*"]])
def test_tools_list_empty_or_star_means_all(tools):
    cfg = parse_descriptor({"type": "mcp", "config": {"server": "self", "tools": tools}})
    assert cfg.filter.type == "all"


def test_stdio_form_with_env_cwd_and_timeouts(tmp_path):
    cfg = parse_descriptor(
        {
            "type": "mcp",
            "name": "fs",
            "config": {
                "transport": "stdio",
                "command": "npx",
                "args": ["-y", "@modelcontextprotocol/server-filesystem", 1],
                "env": {"A": "1"},
                "cwd": str(tmp_path),
                "listTimeout": 3,
                "callTimeout": 7.5,
            },
        }
    )
    assert (cfg.name, cfg.transport, cfg.command) == ("fs", "stdio", "npx")
    assert cfg.args == ["-y", "@modelcontextprotocol/server-filesystem", "1"]
    assert cfg.env == {"A": "1"} and cfg.cwd == str(tmp_path)
    assert (cfg.list_timeout, cfg.call_timeout) == (3.0, 7.5)


def test_transport_inferred_from_command_and_url():
    assert parse_descriptor({"type": "mcp", "config": {"command": "x"}}).transport == "stdio"
    assert (
        parse_descriptor({"type": "mcp", "config": {"url": "http://h:1/mcp"}}).transport == "streamable-http"
    )
    assert parse_descriptor({"type": "mcp", "config": {"url": "http://h:1/sse"}}).transport == "sse"
    assert (
        parse_descriptor(
            {"type": "mcp", "config": {"url": "http://h:1/sse", "transport": "streamable-http"}}
        ).transport
        == "streamable-http"
    )


def test_derived_names():
    assert (
        parse_descriptor(
            {"type": "mcp", "config": {"command": "/usr/bin/python3", "args": ["-m", "mcp_server_time"]}}
        ).name
        == "mcp_server_time"
    )
    assert (
        parse_descriptor(
            {"type": "mcp", "config": {"command": "npx", "args": ["-y", "@scope/server-fs@1.2", "/d"]}}
        ).name
        == "server-fs"
    )
    assert (
        parse_descriptor({"type": "mcp", "config": {"url": "https://mcp.example.com/v1"}}).name
        == "mcp_example_com"
    )
    assert (
        parse_descriptor({"type": "mcp", "name": "my tools!", "config": {"command": "x"}}).name == "my_tools"
    )


def test_flow_form_bearer_auth_and_include_filter():
    cfg = parse_descriptor(
        {
            "name": "weatherTools",
            "type": "mcp",
            "description": "Weather via MCP",
            "mcpClient": {
                "url": "https://mcp-weather.example.com/v1",
                "auth": {"type": "bearer", "bearerToken": "sk-1"},
                "toolFilter": {"type": "include", "includedTools": ["get-forecast"]},
            },
        }
    )
    assert cfg.transport == "streamable-http"
    assert cfg.headers == {"Authorization": "Bearer sk-1"}
    assert cfg.filter.type == "include" and cfg.filter.names == ["get-forecast"]
    assert cfg.description == "Weather via MCP"


def test_flow_form_header_auth_merges_with_headers():
    cfg = parse_descriptor(
        {
            "name": "files",
            "type": "mcp",
            "mcpClient": {
                "url": "http://127.0.0.1:9/api",
                "headers": {"X-Trace": "1"},
                "auth": {"type": "header", "headers": {"Authorization": "ApiKey k", "X-App-ID": "a"}},
                "toolFilter": {"type": "exclude", "excludedTools": ["delete-file"]},
            },
        }
    )
    assert cfg.headers == {"X-Trace": "1", "Authorization": "ApiKey k", "X-App-ID": "a"}
    assert cfg.filter.type == "exclude" and cfg.filter.names == ["delete-file"]


def test_tool_descriptor_model_and_millisecond_timeout():
    desc = ToolDescriptor(type="mcp", name="t", timeout=2500, config={"command": "x"})
    cfg = parse_descriptor(desc)
    assert cfg.name == "t" and cfg.call_timeout == 2.5
    # config.callTimeout (seconds) wins over the generic millisecond timeout
    desc = ToolDescriptor(type="mcp", name="t", timeout=2500, config={"command": "x", "callTimeout": 9})
    assert parse_descriptor(desc).call_timeout == 9.0


@pytest.mark.parametrize(
    ("desc", "field"),
    [
        ({"type": "mcp", "config": {}}, "config"),
        ({"type": "mcp", "config": {"transport": "carrier-pigeon", "command": "x"}}, "config.transport"),
        ({"type": "mcp", "config": {"transport": "stdio", "url": "http://x"}}, "config.command"),
        ({"type": "mcp", "config": {"url": "ftp://x"}}, "url"),
        ({"type": "mcp", "config": {"command": "x", "args": "not-a-list"}}, "config.args"),
        ({"type": "mcp", "config": {"command": "x", "cwd": "/no/such/dir/anywhere"}}, "config.cwd"),
        ({"type": "mcp", "config": {"command": "x", "callTimeout": 0}}, "config.callTimeout"),
        ({"type": "mcp", "config": {"command": "x", "listTimeout": "15"}}, "config.listTimeout"),
        ({"type": "mcp", "config": {"command": "x", "comand": "typo"}}, "config"),
        ({"type": "mcp", "config": {"server": "self", "url": "http://x"}}, "config.server"),
        ({"type": "mcp", "mcpClient": {"url": "http://x", "auth": {"type": "bearer"}}}, "auth.bearerToken"),
        ({"type": "mcp", "mcpClient": {"url": "http://x", "auth": {"type": "header"}}}, "auth.headers"),
        ({"type": "mcp", "mcpClient": {"url": "http://x", "auth": {"type": "basic"}}}, "auth.type"),
        ({"type": "mcp", "config": {"command": "x", "auth": {"type": "bearer", "bearerToken": "t"}}}, "auth"),
        (
            {"type": "mcp", "mcpClient": {"url": "http://x", "toolFilter": {"type": "some"}}},
            "toolFilter.type",
        ),
        (
            {"type": "mcp", "mcpClient": {"url": "http://x", "toolFilter": {"type": "expression"}}},
            "toolFilter.expression",
        ),
        (
            {
                "type": "mcp",
                "mcpClient": {"url": "http://x", "toolFilter": {"type": "expression", "expression": ".[ |"}},
            },
            "toolFilter.expression",
        ),
        ({"type": "mcp", "config": {"server": "self", "tools": ["a", "*"]}}, "config.tools"),
        (
            {"type": "mcp", "config": {"server": "self", "tools": ["a"], "toolFilter": {"type": "all"}}},
            "toolFilter",
        ),
    ],
)
def test_bad_descriptors_name_the_field(desc, field):
    with pytest.raises(ConfigError) as ei:
        parse_descriptor(desc)
    assert f": {field}: " in str(ei.value)
    assert ei.value.errors and ei.value.errors[0][0].endswith(field)


def test_missing_provider_is_a_config_error_naming_the_descriptor():
    desc = {"type": "mcp", "name": "rules", "config": {"server": "self"}}
    with pytest.raises(ConfigError) as ei:
        MCPServer.from_descriptor(desc, providers={"other": object()})  # type: ignore[dict-item]
    msg = str(ei.value)
    assert "tools[mcp 'rules']" in msg and "'self'" in msg and "other" in msg
