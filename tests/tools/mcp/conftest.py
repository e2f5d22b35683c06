"""Fixtures for the MCP tool tests; the helpers live in mcp_testkit.py."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from .mcp_testkit import CRASHY_SERVER, SPAWN, HTTPServer, npm_server


@pytest.fixture
def everything_cmd() -> str:
    return npm_server("mcp-server-everything")


@pytest.fixture
def filesystem_cmd() -> str:
    return npm_server("mcp-server-filesystem")


@pytest.fixture
def crashy(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    """An in-test stdio server (ping / crash / sleep); each start appends its pid to the returned file."""
    import sys

    script = tmp_path / "crashy_server.py"
    script.write_text(CRASHY_SERVER)
    pidfile = tmp_path / "crashy.pids"
    desc = {
        "type": "mcp",
        "name": "crashy",
        "config": {"command": sys.executable, "args": [str(script), str(pidfile)], **SPAWN},
    }
    return desc, pidfile


@pytest.fixture
def http_server() -> Iterator[Callable[..., HTTPServer]]:
    """Start in-test HTTP MCP servers: make(transport="streamable-http"|"sse", headers={required...})."""
    started: list[HTTPServer] = []

    def make(transport: str = "streamable-http", headers: dict[str, str] | None = None) -> HTTPServer:
        s = HTTPServer(transport, headers or {})
        s.start()
        started.append(s)
        return s

    yield make
    for s in started:
        s.stop()
