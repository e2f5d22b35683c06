"""MCP at /mcp against a real uvicorn server, driven by the official SDK's streamable HTTP client: tools
listed per kind and key, an agent tool (scripted model), a chain tool, a flow tool, errors and refusals."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from typing import Any

import httpx

from chainreact.server.auth import hash_key

from .test_flows_routes import answer, helpdesk
from .test_server import agent_doc, echo_chain


def failing_chain() -> dict[str, Any]:
    return {"ruleChain": {"id": "broken", "name": "Broken"},
            "metadata": {"nodes": [{"id": "t", "type": "jsTransform", "configuration": {
                "jsScript": "throw new Error('no such order');"}}], "connections": []}}


@contextlib.asynccontextmanager
async def mcp_session(url: str, key: str | None = None) -> AsyncIterator[Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {key}"} if key else None
    async with httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0, read=60.0)) as http, \
            streamable_http_client(url + "/mcp", http_client=http) as streams, \
            ClientSession(streams[0], streams[1]) as session:
        await session.initialize()
        yield session


def text_of(result: Any) -> str:
    return "".join(c.text for c in result.content if c.type == "text")


async def test_agents_chains_and_flows_as_mcp_tools(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "Paris."}, answer("On it.")])
    srv = serve({"helper.json": agent_doc(llm.url, description="Answers questions."),
                 "echo.json": echo_chain(), "helpdesk.json": helpdesk(llm.url)})
    async with mcp_session(srv.url) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {"helper", "echo", "helpdesk"}
        assert tools["helper"].description == "Answers questions."
        assert tools["helper"].input_schema["required"] == ["input"]
        assert set(tools["echo"].input_schema["properties"]) == {"data", "metadata", "msgType"}
        assert tools["helpdesk"].input_schema["required"] == ["text"]

        got = await session.call_tool("helper", {"input": "Capital of France?"})
        assert not got.is_error and text_of(got) == "Paris."
        assert llm.chat_requests[0].messages[-1] == {"role": "user", "content": "Capital of France?"}

        doubled = await session.call_tool("echo", {"data": {"n": 21}, "metadata": {"k": "v"}})
        assert not doubled.is_error and json.loads(text_of(doubled)) == {"n": 42}
        assert doubled.structured_content == {"n": 42}

        turn = await session.call_tool("helpdesk", {"text": "help", "session": "m1"})
        assert text_of(turn) == "Hello!\n\nOn it."
        assert turn.structured_content["session"] == "m1" and turn.structured_content["node"] == "agent"
    # the flow session is the server's: the session routes see it
    assert httpx.get(srv.url + "/api/v1/flows/helpdesk/sessions/m1").json()["node"] == "agent"


def test_the_mcp_sdk_is_imported_on_the_first_mcp_request_not_at_startup() -> None:
    code = ("import sys\nfrom chainreact.server import Catalog, create_app\n"
            "app = create_app(Catalog.load([]))\n"
            "print([r.path for r in app.routes if r.path == '/mcp'], 'mcp' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["['/mcp']", "False"]  # the route is there, the SDK not yet


async def test_first_mcp_sessions_at_once_share_one_session_manager(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "one"}, {"text": "two"}])
    srv = serve({"helper.json": agent_doc(llm.url)})

    async def ask(text: str) -> str:
        async with mcp_session(srv.url) as session:
            return text_of(await session.call_tool("helper", {"input": text}))

    answers = await asyncio.gather(ask("a"), ask("b"))
    assert sorted(answers) == ["one", "two"]
    assert len(llm.chat_requests) == 2
    srv.__exit__()  # the manager started by the first request stops with the app
    assert not srv.thread.is_alive()


async def test_mcp_errors_are_tool_errors(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"status": 400, "message": "model says no"}], loop=True)
    srv = serve({"helper.json": agent_doc(llm.url), "echo.json": echo_chain(),
                 "broken.json": failing_chain()})
    async with mcp_session(srv.url) as session:
        failed = await session.call_tool("helper", {"input": "hi"})
        assert failed.is_error and "model says no" in text_of(failed)
        broken = await session.call_tool("broken", {"data": "x"})
        assert broken.is_error and "no such order" in text_of(broken)
        unknown = await session.call_tool("nope", {"input": "x"})
        assert unknown.is_error and "no tool 'nope'" in text_of(unknown)
        bad = await session.call_tool("helper", {"input": 3})
        assert bad.is_error and "'input' must be a string" in text_of(bad)
        # the session survives errors
        ok = await session.call_tool("echo", {"data": {"n": 1}})
        assert json.loads(text_of(ok)) == {"n": 2}


async def test_mcp_needs_an_api_key_and_respects_its_ids(fake_llm: Any, serve: Any) -> None:
    llm = fake_llm([{"text": "Hi."}])
    keys = {"keys": [
        {"name": "reader", "sha256": hash_key("reader-key"), "ids": ["helper", "echo"],
         "permissions": ["read"]},
        {"name": "runner", "sha256": hash_key("runner-key"), "ids": ["helper"],
         "permissions": ["read", "execute"]},
    ]}
    srv = serve({"helper.json": agent_doc(llm.url), "echo.json": echo_chain()}, keys=keys)
    plain = httpx.post(srv.url + "/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                       headers={"Accept": "application/json, text/event-stream"})
    assert plain.status_code == 401 and plain.json()["error"]["code"] == "invalid_api_key"

    async with mcp_session(srv.url, "reader-key") as session:
        assert {t.name for t in (await session.list_tools()).tools} == {"helper", "echo"}
        refused = await session.call_tool("helper", {"input": "hi"})
        assert refused.is_error and "may not execute 'helper'" in text_of(refused)
    async with mcp_session(srv.url, "runner-key") as session:
        assert [t.name for t in (await session.list_tools()).tools] == ["helper"]
        assert text_of(await session.call_tool("helper", {"input": "hi"})) == "Hi."
        hidden = await session.call_tool("echo", {"data": {"n": 1}})
        assert hidden.is_error
    assert len(llm.chat_requests) == 1


async def test_chainreacts_own_mcp_client_uses_the_served_tools(fake_llm: Any, serve: Any) -> None:
    from chainreact.tools.mcp import MCPServer

    srv = serve({"echo.json": echo_chain()})
    client = MCPServer.from_descriptor({"type": "mcp", "config": {"server": srv.url + "/mcp"}})
    try:
        assert [t.name for t in await client.list_tools()] == ["echo"]
        out = await client.call_tool("echo", {"data": {"n": 5}})
        assert json.loads(out if isinstance(out, str) else out.content) == {"n": 10}
    finally:
        await client.aclose()
