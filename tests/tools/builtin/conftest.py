"""Fixtures for the builtin tool tests: a real workspace directory and tool instances built through
the registry, exactly as an agent config would build them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.registry import create_builtin


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    return root


@pytest.fixture
def make(ws: Path):
    def build(name: str, **config: Any):
        return create_builtin(name, {"workDir": str(ws), **config})

    return build


async def call(tool: Any, **args: Any) -> tuple[str, bool]:
    """Run a tool; (text, is_error)."""
    result = await tool.run(args, ToolContext())
    if isinstance(result, ToolOutput):
        return result.content, result.is_error
    return result, False
