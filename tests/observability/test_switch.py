"""The global switch: enable()/disable(), CHAINREACT_OTEL=1, and nothing at all when off."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from chainreact.agent import Agent
from chainreact.observability import OTelMiddleware, disable, enable

from .conftest import Traces, add, call


@pytest.fixture(autouse=True)
def _off() -> Iterator[None]:
    disable()
    yield
    disable()


def script() -> list[dict[str, Any]]:
    return [{"tool_calls": [call("add", {"a": 1, "b": 2}, "c1")]}, {"text": "3"}]


def test_enable_traces_every_agent_built_afterwards(fake_llm: Any, traces: Traces) -> None:
    enable(tracer_provider=traces.provider)
    srv = fake_llm(script())
    assert Agent(name="calc", url=srv.url, model="m", key="k", tools=[add]).run_sync("1+2").content == "3"
    run = traces.one("invoke_agent calc")
    assert traces.children(run) == ["chat m", "chat m", "execute_tool add"]


def test_disable_exports_nothing(fake_llm: Any, traces: Traces) -> None:
    enable(tracer_provider=traces.provider)
    disable()
    srv = fake_llm(script())
    assert Agent(name="calc", url=srv.url, model="m", key="k", tools=[add]).run_sync("1+2").content == "3"
    assert traces.spans == []


def test_explicit_middleware_is_not_doubled(fake_llm: Any, traces: Traces) -> None:
    enable(tracer_provider=traces.provider)
    srv = fake_llm(script())
    mw = OTelMiddleware(tracer_provider=traces.provider)
    Agent(name="calc", url=srv.url, model="m", key="k", tools=[add], middleware=[mw]).run_sync("1+2")
    assert len(traces.named("invoke_agent calc")) == 1
    assert len(traces.named("execute_tool add")) == 1


PROGRAM = """
import sys
from chainreact import Agent, tool
from chainreact.testing import FakeLLM

@tool
def add(a: int, b: int) -> int:
    '''Add.

    Args:
        a: a
        b: b
    '''
    return a + b

with FakeLLM([{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "3"}]) as srv:
    print("answer:", Agent(name="calc", url=srv.url, model="m", key="k", tools=[add]).run_sync("1+2").content)
print("otel imported:", any(m.startswith("opentelemetry") for m in sys.modules), file=sys.stderr)
"""


def run_program(**env: str) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("CHAINREACT_", "OTEL_"))}
    src = os.path.join(os.path.dirname(__file__), "..", "..", "src")
    base["PYTHONPATH"] = os.pathsep.join([os.path.abspath(src), base.get("PYTHONPATH", "")])
    proc = subprocess.run([sys.executable, "-c", PROGRAM], capture_output=True, text=True, timeout=60,
                          env={**base, **env})
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "answer: 3" in proc.stdout
    return proc


def console_spans(stdout: str) -> list[dict[str, Any]]:
    """The ConsoleSpanExporter prints one indented JSON object per span."""
    decoder, out, i = json.JSONDecoder(), [], stdout.find("{")
    while i != -1:
        obj, end = decoder.raw_decode(stdout, i)
        out.append(obj)
        i = stdout.find("{", end)
    return out


def test_env_switch_exports_through_the_sdk() -> None:
    proc = run_program(CHAINREACT_OTEL="1", OTEL_TRACES_EXPORTER="console", OTEL_SERVICE_NAME="svc")
    spans = console_spans(proc.stdout)
    assert sorted(s["name"] for s in spans) == ["chat m", "chat m", "execute_tool add", "invoke_agent calc"]
    run = next(s for s in spans if s["name"] == "invoke_agent calc")
    assert run["attributes"]["gen_ai.agent.name"] == "calc"
    assert run["resource"]["attributes"]["service.name"] == "svc"


def test_off_by_default_nothing_is_imported_or_exported() -> None:
    proc = run_program(OTEL_TRACES_EXPORTER="console")
    assert console_spans(proc.stdout) == []
    assert "otel imported: False" in proc.stderr
