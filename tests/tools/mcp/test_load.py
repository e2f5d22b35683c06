"""load_mcp_tools: several servers at once, name collisions prefixed with the server name."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact.errors import ConfigError, ToolError
from chainreact.tools.base import ToolContext
from chainreact.tools.mcp import load_mcp_tools

from .mcp_testkit import alive, pids, time_descriptor

pytestmark = pytest.mark.mcp
CTX = ToolContext()


class Host:
    async def list_tool_definitions(self) -> list[dict[str, Any]]:
        return [
            {"name": "get_current_time", "description": "host clock"},
            {"name": "host_only", "description": ""},
        ]

    async def call_tool(self, name: str, args: dict[str, Any]) -> str:
        return f"host:{name}"


async def test_collisions_are_prefixed_and_calls_route_to_their_server(tmp_path):
    a_pids, b_pids = tmp_path / "a.pids", tmp_path / "b.pids"
    tools = await load_mcp_tools(
        [
            time_descriptor("tokyo", pidfile=a_pids, tools=["get_current_time"]),
            time_descriptor("paris", pidfile=b_pids),
            {"type": "mcp", "config": {"server": "self"}},
        ],
        providers={"self": Host()},
        taken=["convert_time_x"],
    )
    try:
        names = [t.name for t in tools]
        # get_current_time is offered by all three -> prefixed everywhere; the others are unique
        assert names == [
            "tokyo_get_current_time",
            "paris_get_current_time",
            "convert_time",
            "self_get_current_time",
            "host_only",
        ]
        by = {t.name: t for t in tools}
        assert by["tokyo_get_current_time"].remote_name == "get_current_time"
        out = await by["paris_get_current_time"].run({"timezone": "Europe/Paris"}, CTX)
        assert '"timezone": "Europe/Paris"' in str(out)
        out = await by["tokyo_get_current_time"].run({"timezone": "Asia/Tokyo"}, CTX)
        assert '"timezone": "Asia/Tokyo"' in str(out)
        assert await by["self_get_current_time"].run({}, CTX) == "host:get_current_time"
        assert len(pids(a_pids)) == 1 and len(pids(b_pids)) == 1  # one session per server, reused
    finally:
        for t in tools:
            await t.aclose()
    assert not alive(pids(a_pids)[0]) and not alive(pids(b_pids)[0])


async def test_taken_names_and_same_named_servers_get_suffixes():
    tools = await load_mcp_tools(
        [{"type": "mcp", "config": {"server": "self"}}, {"type": "mcp", "config": {"server": "self"}}],
        providers={"self": Host()},
        taken=["host_only"],
    )
    assert [t.name for t in tools] == [
        "self_get_current_time",
        "self_host_only",
        "self_get_current_time_2",
        "self_host_only_2",
    ]


async def test_one_failing_server_closes_the_others(tmp_path):
    pidfile = tmp_path / "ok.pids"
    with pytest.raises(ToolError, match="'ghost'"):
        await load_mcp_tools(
            [
                time_descriptor("ok", pidfile=pidfile),
                {"type": "mcp", "name": "ghost", "config": {"command": "/nonexistent/ghost-server"}},
            ]
        )
    started = pids(pidfile)
    assert all(not alive(p) for p in started)


async def test_bad_descriptor_fails_before_anything_starts(tmp_path):
    pidfile = tmp_path / "never.pids"
    with pytest.raises(ConfigError, match=r"toolFilter\.type"):
        await load_mcp_tools(
            [
                time_descriptor("t", pidfile=pidfile),
                {
                    "type": "mcp",
                    "mcpClient": {"url": "http://127.0.0.1:9/mcp", "toolFilter": {"type": "bogus"}},
                },
            ]
        )
    assert pids(pidfile) == []
