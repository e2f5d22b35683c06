"""Issue 10 item 1: data is never a template. Every channel that carries user, model or tool text into an
agent run is checked: a `${...}` in it reaches the model as text, and never reads a file or a secret."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from chainreact.agent import Agent
from chainreact.template import TemplateContext, format_session, render, render_session
from chainreact.testing import FakeLLM
from chainreact.tools import tool

SECRET = "s3cret-value-71"
PAYLOADS = ["${env('CHAINREACT_CHANNEL_SECRET')}", "${include(global.secret_file)}",
            "$${env('CHAINREACT_CHANNEL_SECRET')}"]


@pytest.fixture(autouse=True)
def secret(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    monkeypatch.setenv("CHAINREACT_CHANNEL_SECRET", SECRET)
    f = tmp_path / "secret.txt"
    f.write_text(SECRET)
    return f


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    with FakeLLM([]) as srv:
        yield srv


def sent(srv: FakeLLM) -> str:
    return json.dumps([r.body for r in srv.chat_requests])


@tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: anything
    """
    return text


def agent(srv: FakeLLM, secret_file: Path, instruction: str, **kw: object) -> Agent:
    return Agent(name="ch", url=srv.url, model="m", key="k", instruction=instruction,
                 globals={"secret_file": str(secret_file), "who": "${env('CHAINREACT_CHANNEL_SECRET')}"},
                 tools=[echo], **kw)  # type: ignore[arg-type]


@pytest.mark.parametrize("payload", PAYLOADS)
async def test_session_values_are_data(server: FakeLLM, secret: Path, payload: str) -> None:
    server.add_turns([{"text": "ok"}])
    a = agent(server, secret, "Hello {name}! Now: ${ruleChain.name}. {{x}}", rule_chain={"name": "ch"})
    await a.run("hi", session_values={"name": payload})
    system = server.chat_requests[0].body["messages"][0]["content"]
    assert system == f"Hello {payload}! Now: ch. {{x}}"
    assert SECRET not in sent(server)


async def test_session_value_ending_in_dollar_opens_nothing(server: FakeLLM, secret: Path) -> None:
    server.add_turns([{"text": "ok"}])
    a = agent(server, secret, "{a}{{env('CHAINREACT_CHANNEL_SECRET')}}|{a}${'x'}")
    await a.run("hi", session_values={"a": "cost $"})
    system = server.chat_requests[0].body["messages"][0]["content"]
    assert system == "cost ${env('CHAINREACT_CHANNEL_SECRET')}|cost $x"
    assert SECRET not in sent(server)


async def test_metadata_values_are_data(server: FakeLLM, secret: Path) -> None:
    server.add_turns([{"text": "ok"}])
    a = agent(server, secret, "User: ${metadata.user}; global: ${global.who}",
              config={"messages": [{"role": "user", "content": "preset ${metadata.user}"}]})
    await a.run("hi", metadata={"user": PAYLOADS[1]})
    msgs = server.chat_requests[0].body["messages"]
    assert msgs[0]["content"] == f"User: {PAYLOADS[1]}; global: {PAYLOADS[0]}"
    assert any(m["content"] == f"preset {PAYLOADS[1]}" for m in msgs)
    assert SECRET not in sent(server)


async def test_user_input_tool_results_and_model_output_are_data(server: FakeLLM, secret: Path) -> None:
    server.add_turns([
        {"text": PAYLOADS[0], "tool_calls": [{"name": "echo", "arguments": {"text": PAYLOADS[1]}}]},
        {"text": PAYLOADS[0]},
        {"text": "second run"},
    ])
    a = agent(server, secret, "sys ${1 + 1}")
    first = await a.run(PAYLOADS[0])
    assert first.content == PAYLOADS[0]  # model output stays as written
    second_req = server.chat_requests[1].body["messages"]
    assert second_req[1]["content"] == PAYLOADS[0]  # the user's message
    assert [m["content"] for m in second_req if m["role"] == "tool"] == [PAYLOADS[1]]  # the tool result
    # the history (user, model, tool text) goes into a new run as data too
    await a.run([*first.messages, {"role": "user", "content": "again"}])
    assert SECRET not in sent(server)


def test_included_files_and_rendered_values_are_not_rendered_again(secret: Path, tmp_path: Path) -> None:
    inc = tmp_path / "inc.md"
    inc.write_text("included ${env('CHAINREACT_CHANNEL_SECRET')} {name}")
    ctx = TemplateContext(globals={"inc": str(inc), "v": "${include(global.inc)}"}, metadata={"m": "${1+1}"})
    out = render("${include(global.inc)} | ${global.v} | ${metadata.m}", ctx)
    assert out == "included ${env('CHAINREACT_CHANNEL_SECRET')} {name} | ${include(global.inc)} | ${1+1}"
    out = render_session("{name}: ${include(global.inc)}", {"name": "${1+1}"}, ctx)
    assert out == "${1+1}: included ${env('CHAINREACT_CHANNEL_SECRET')} {name}"


def test_format_session_alone_still_copies_expressions() -> None:
    # the pyfmt pass keeps ${...} for a later render; render_session is the safe combination
    assert format_session("{a} ${b}", {"a": 1}) == "1 ${b}"
