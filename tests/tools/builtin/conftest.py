"""Fixtures for the builtin tool tests: a real workspace directory and tool instances built through
the registry, exactly as an agent config would build them."""

from __future__ import annotations

import os
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


@pytest.fixture(params=["off", "bwrap"])
def sandbox_mode(request: pytest.FixtureRequest) -> str:
    """Run a bash test without and with the OS sandbox. bwrap is required under CI (installed by
    .ci/setup.d/bubblewrap.sh); elsewhere its variant skips when bubblewrap cannot work."""
    mode = str(request.param)
    if mode == "bwrap":
        from chainreact.tools.builtin.sandbox import find_bwrap, probe

        bwrap = find_bwrap()
        reason = "bwrap is not installed" if bwrap is None else probe(bwrap)[0]
        if reason is not None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"the sandbox must work in CI: {reason}")
            pytest.skip(reason)
    return mode


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
