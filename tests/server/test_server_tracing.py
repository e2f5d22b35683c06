"""Tracing switched on (chainreact.observability.enable(), as CHAINREACT_OTEL=1 does): a chain served by
the server is traced like an agent, its agent node's run nested under the node's span."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chainreact.observability import disable, enable

from ..observability.conftest import Traces
from .test_server import agent_chain, echo_chain


@pytest.fixture
def traces() -> Iterator[Traces]:
    t = Traces()
    disable()
    enable(tracer_provider=t.provider)
    yield t
    disable()
    t.provider.shutdown()


def test_served_chains_and_their_agent_nodes_are_traced(fake_llm: Any, serve: Any, traces: Traces) -> None:
    llm = fake_llm([{"tool_calls": [{"name": "double", "arguments": {"n": 21}}]}, {"text": "42"}])
    srv = serve({"echo.json": echo_chain(), "chat.json": agent_chain(llm.url)})
    r = httpx.post(srv.url + "/api/v1/rules/chat/execute/CHAT", content="double 21", timeout=30)
    assert r.status_code == 200, r.text
    chat = traces.one("chain chat")
    assert traces.children(chat) == ["node a"]
    run = next(s for s in traces.spans if s.name.startswith("invoke_agent"))
    node = traces.one("node a")
    assert run.parent is not None and node.context is not None and run.parent.span_id == node.context.span_id
    # the agent's chain tool ran the echo chain: its message span nests under the tool call
    tool = traces.one("execute_tool double")
    echo = traces.one("chain echo")
    assert echo.parent is not None and tool.context is not None
    assert echo.parent.span_id == tool.context.span_id
