"""The agent end to end on the embedded model (real llama.cpp server, real SmolLM2-135M calls)."""

from __future__ import annotations

from pathlib import Path

import pytest

from chainreact.agent import Agent
from chainreact.local import local_extra_available
from chainreact.types import ToolCallEvent, ToolResultEvent

_missing = local_extra_available()
pytestmark = [
    pytest.mark.local_model,
    pytest.mark.skipif(bool(_missing), reason=f"the 'local' extra is not installed (no {_missing!r} module)"),
]

DEMO = Path(__file__).resolve().parents[2] / "examples" / "demo-agent.json"


async def test_demo_agent_calls_the_tool_and_answers() -> None:
    agent = Agent.from_config(DEMO)
    result = await agent.run("What is 17 + 25? Use the add tool.")
    tool_msgs = [m for m in result.messages if m.role == "tool"]
    assert tool_msgs and tool_msgs[0].content == "42"  # a real tool call with the right arguments
    assert result.steps >= 2  # model -> tool -> model
    assert result.stop_reason in ("stop", "max_steps")
    assert result.content.strip()  # the run ends with an answer, even when the model repeats itself
    await agent.aclose()


async def test_demo_agent_streaming_events() -> None:
    agent = Agent.from_config(DEMO)
    events = [ev async for ev in agent.stream("What is 17 + 25? Use the add tool.")]
    calls = [e for e in events if isinstance(e, ToolCallEvent)]
    results = [e for e in events if isinstance(e, ToolResultEvent)]
    assert calls and calls[0].call.name == "add"
    assert results and results[0].content == "42"
    assert events[-1].type == "final" and events[-1].content.strip()  # type: ignore[attr-defined]
    await agent.aclose()
