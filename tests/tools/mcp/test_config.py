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
    ("desc", "field", "says"),
    [
        ({"type": "mcp", "config": {}}, "config", "no server given"),
        ({"type": "mcp", "config": {"transport": "carrier-pigeon", "command": "x"}}, "config.transport",
         "unknown transport"),
        ({"type": "mcp", "config": {"transport": "stdio", "url": "http://x"}}, "config.command", "required"),
        ({"type": "mcp", "config": {"url": "ftp://x"}}, "url", "http(s) URL"),
        ({"type": "mcp", "config": {"command": "x", "args": "not-a-list"}}, "config.args", "valid list"),
        ({"type": "mcp", "config": {"command": "x", "cwd": "/no/such/dir/anywhere"}}, "config.cwd",
         "does not exist"),
        ({"type": "mcp", "config": {"command": "x", "callTimeout": 0}}, "config.callTimeout",
         "greater than 0"),
        ({"type": "mcp", "config": {"command": "x", "listTimeout": "soon"}}, "config.listTimeout", "number"),
        ({"type": "mcp", "config": {"command": "x", "listTimeout": float("inf")}}, "config.listTimeout",
         "finite"),
        ({"type": "mcp", "config": {"server": "self", "url": "http://x"}}, "config.server", "excludes"),
        ({"type": "mcp", "mcpClient": {"url": "http://x", "auth": {"type": "bearer"}}}, "mcpClient.auth",
         "bearerToken is required"),
        ({"type": "mcp", "mcpClient": {"url": "http://x", "auth": {"type": "header"}}}, "mcpClient.auth",
         "headers (a non-empty object) is required"),
        ({"type": "mcp", "mcpClient": {"url": "http://x", "auth": {"type": "basic"}}}, "mcpClient.auth.type",
         "'bearer' or 'header'"),
        ({"type": "mcp", "config": {"command": "x", "auth": {"type": "bearer", "bearerToken": "t"}}}, "auth",
         "HTTP transports only"),
        (
            {"type": "mcp", "mcpClient": {"url": "http://x", "toolFilter": {"type": "some"}}},
            "mcpClient.toolFilter.type", "'all', 'include', 'exclude' or 'expression'",
        ),
        (
            {"type": "mcp", "mcpClient": {"url": "http://x", "toolFilter": {"type": "expression"}}},
            "toolFilter.expression", "required",
        ),
        (
            {
                "type": "mcp",
                "mcpClient": {"url": "http://x", "toolFilter": {"type": "expression", "expression": ".[ |"}},
            },
            "toolFilter.expression", "invalid jq",
        ),
        ({"type": "mcp", "config": {"server": "self", "tools": ["a", "*"]}}, "config.tools", "only entry"),
        ({"type": "mcp", "config": {"server": "self", "tools": 3}}, "config.tools", "valid"),
        (
            {"type": "mcp", "config": {"server": "self", "tools": ["a"], "toolFilter": {"type": "all"}}},
            "toolFilter", "not both",
        ),
        ({"type": "mcp", "config": {"server": "python 'server.py"}}, "config.server", "unterminated"),
    ],
)
def test_bad_descriptors_name_the_field(desc, field, says):
    with pytest.raises(ConfigError) as ei:
        parse_descriptor(desc)
    path, msg = ei.value.errors[0]
    assert path == f"tools[mcp].{field}"
    assert says in msg
    assert f"{path}: " in str(ei.value)


def test_missing_provider_is_a_config_error_naming_the_descriptor():
    desc = {"type": "mcp", "name": "rules", "config": {"server": "self"}}
    with pytest.raises(ConfigError) as ei:
        MCPServer.from_descriptor(desc, providers={"other": object()})  # type: ignore[dict-item]
    msg = str(ei.value)
    assert "tools[mcp 'rules']" in msg and "'self'" in msg and "other" in msg


# --- RuleGo's remote forms and typed config (issue 9 items 10 and 16) -------------------------------------

def test_server_as_url_is_streamable_http():
    cfg = parse_descriptor({"type": "mcp", "config": {"server": "https://mcp.example.com/v1", "tools": "*"}})
    assert (cfg.transport, cfg.url, cfg.provider) == ("streamable-http", "https://mcp.example.com/v1", "")
    assert cfg.name == "mcp_example_com"
    assert cfg.filter.type == "all"


def test_server_as_command_line_is_stdio():
    cfg = parse_descriptor({"type": "mcp", "config": {
        "server": "python3  server.py --root '/tmp/a b' \"x'y\" ''"}})
    assert (cfg.transport, cfg.command) == ("stdio", "python3")
    assert cfg.args == ["server.py", "--root", "/tmp/a b", "x'y", ""]
    assert cfg.name == "server"
    path = parse_descriptor({"type": "mcp", "config": {"server": "/opt/bin/my-server"}})
    assert (path.transport, path.command, path.args) == ("stdio", "/opt/bin/my-server", [])


def test_server_bare_word_is_a_provider_or_a_program_on_path():
    cfg = parse_descriptor({"type": "mcp", "config": {"server": "self"}})
    assert (cfg.transport, cfg.provider) == ("provider", "self")
    # not a provider but a program on PATH: RuleGo runs it, so do we (nothing starts until first use)
    server = MCPServer.from_descriptor({"type": "mcp", "config": {"server": "sh"}}, providers={})
    assert (server.config.transport, server.config.command, server.config.provider) == ("stdio", "sh", "")
    # a provider of that name wins over the program
    prov = MCPServer.from_descriptor({"type": "mcp", "config": {"server": "sh"}},
                                     providers={"sh": object()})  # type: ignore[dict-item]
    assert prov.config.transport == "provider"
    with pytest.raises(ConfigError, match="no program of that name is on PATH"):
        MCPServer.from_descriptor({"type": "mcp", "config": {"server": "no-such-prog-xyz"}}, providers={})


@pytest.mark.parametrize(("tools", "kind", "names"), [
    ("*", "all", []), ("", "all", []), ("a", "include", ["a"]), ("a, b", "include", ["a", "b"]),
])
def test_tools_as_a_string(tools, kind, names):
    cfg = parse_descriptor({"type": "mcp", "config": {"server": "self", "tools": tools}})
    assert (cfg.filter.type, cfg.filter.names) == (kind, names)


def test_rulego_keys_are_honoured_and_unknown_keys_warned():
    from chainreact.config.loader import UnknownFieldWarning

    with pytest.warns(UnknownFieldWarning, match=r"tools\[mcp\]\.config\.comand") as rec:
        cfg = parse_descriptor({"type": "mcp", "config": {
            "server": "python3 s.py", "timeout": 45, "client_name": "My App", "client_version": "2.0",
            "comand": "typo"}})
    assert len(rec) == 1
    assert (cfg.list_timeout, cfg.client_name, cfg.client_version) == (45.0, "My App", "2.0")


def test_mcp_client_keys_win_and_errors_name_the_form():
    cfg = parse_descriptor({"type": "mcp", "config": {"url": "http://a/mcp", "callTimeout": 5},
                            "mcpClient": {"url": "http://b/mcp"}})
    assert (cfg.url, cfg.call_timeout) == ("http://b/mcp", 5.0)
    with pytest.raises(ConfigError) as ei:
        parse_descriptor({"type": "mcp", "mcpClient": {"url": 3, "auth": "x", "callTimeout": -1}})
    assert [p for p, _ in ei.value.errors] == ["tools[mcp].mcpClient.url", "tools[mcp].mcpClient.auth",
                                               "tools[mcp].mcpClient.callTimeout"]


def test_retry_non_idempotent_option():
    base = {"type": "mcp", "config": {"server": "self"}}
    assert not parse_descriptor(base).may_resend("a")
    assert parse_descriptor(base).may_resend("a", idempotent_hint=True)
    every = parse_descriptor({"type": "mcp", "config": {"server": "self", "retryNonIdempotent": True}})
    assert every.may_resend("a")
    some = parse_descriptor({"type": "mcp", "config": {"server": "self", "retryNonIdempotent": ["a"]}})
    assert some.may_resend("a") and not some.may_resend("b")
