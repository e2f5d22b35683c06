"""`chainreact serve` for a flow that requires login and for an agent called over MCP.

Starts the server in-process on a free loopback port (the same app `chainreact serve` runs), against
chainreact's scripted model, then: a flow turn without login, a login, the same turn as the logged-in
user (the session is hers from then on: anyone else gets 404 for it), and the agent called as an MCP tool
with the official `mcp` SDK's client. Nothing leaves 127.0.0.1.
"""

import asyncio
import json
import tempfile
from pathlib import Path

import httpx

from chainreact.server import Catalog, create_app, serve_in_background
from chainreact.server.login import UserStore, hash_password
from chainreact.testing import FakeLLM

SCRIPT = [
    {"text": json.dumps({"response": "Welcome back, gold member: your order ships today."})},
    {"text": "The capital of France is Paris."},
]


def documents(folder: Path, url: str) -> None:
    flow = {"id": "orders", "nodes": [{
        "name": "orders", "type": "aiagent", "loginRequired": True, "llmConfig": {"url": url, "apiKey": "k"},
        "userMessage": "{{userInput}}", "userIdentityExpression": "{{user.name}} ({{user.tier}} tier)",
        "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}}}}}]}
    agent = {"id": "helper", "configuration": {"url": url, "key": "k", "model": "fake-model",
                                               "description": "Answers questions."}}
    (folder / "orders.json").write_text(json.dumps(flow))
    (folder / "helper.json").write_text(json.dumps(agent))
    (folder / "users.json").write_text(json.dumps({"users": [
        {"name": "ann", "password": hash_password("correct horse"), "attributes": {"tier": "gold"}}]}))


async def call_over_mcp(base: str) -> None:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with httpx2.AsyncClient() as http, \
            streamable_http_client(base + "/mcp", http_client=http) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        print("MCP tools:", sorted(t.name for t in (await session.list_tools()).tools))
        result = await session.call_tool("helper", {"input": "Capital of France?"})
        print("MCP helper:", result.content[0].text)


def main() -> None:
    with FakeLLM(SCRIPT) as llm, tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        documents(folder, llm.url)
        users = UserStore.load(folder / "users.json")
        catalog = Catalog.load([folder / "orders.json", folder / "helper.json"])
        app = create_app(catalog, users=users, secret="example-secret")
        with serve_in_background(app) as base:
            turn_url = base + "/api/v1/flows/orders/sessions/s1/messages"
            json_only = {"Accept": "application/json"}
            first = httpx.post(turn_url, json={"text": "Where is my order?"}, headers=json_only).json()
            print("without login:", first["messages"][0]["content"])
            token = httpx.post(base + "/api/v1/login", json={"user": "ann", "password": "correct horse"}
                               ).json()["token"]
            second = httpx.post(turn_url, json={"text": "Where is my order?"}, timeout=30,
                                headers={**json_only, "X-User-Token": token}).json()
            print("as ann:", second["messages"][0]["content"])
            session_url = base + "/api/v1/flows/orders/sessions/s1"
            other = httpx.get(session_url)  # no login: the session is ann's now
            print("someone else:", other.status_code, other.json()["error"]["code"])
            print("ann reads it:", httpx.get(session_url, headers={"X-User-Token": token}).json()["exists"])
            print("the model was told:", llm.chat_requests[0].messages[0]["content"].split("\n\n")[-1])
            asyncio.run(call_over_mcp(base))


if __name__ == "__main__":
    main()
