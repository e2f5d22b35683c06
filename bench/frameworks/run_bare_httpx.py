"""Baseline: a bare httpx loop doing the same requests as the agents (no framework at all).

It is the floor every framework is compared against: one AsyncClient, json bodies, the tool called
directly, the conversation kept as a list of dicts. Streaming reads SSE lines and assembles tool calls.
"""

from __future__ import annotations

import json
from typing import Any

import _harness as h

TOOLS = [{
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                       "required": ["a", "b"]},
    },
}]


def adapter() -> h.Adapter:
    import httpx

    def make_agent(url: str, streaming: bool) -> Any:
        return httpx.AsyncClient(base_url=url, headers={"authorization": "Bearer x"}, timeout=h.TIMEOUT,
                                 limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))

    async def complete(client: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
        r = await client.post("/chat/completions", json={"model": "fake-model", "messages": messages,
                                                         "tools": TOOLS})
        r.raise_for_status()
        msg: dict[str, Any] = r.json()["choices"][0]["message"]
        return msg

    async def complete_stream(client: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
        body = {"model": "fake-model", "messages": messages, "tools": TOOLS, "stream": True}
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        async with client.stream("POST", "/chat/completions", json=body) as r:
            r.raise_for_status()
            async for line in r.aiter_lines():
                if not line.startswith("data:"):
                    continue
                data = line[5:].strip()
                if data == "[DONE]":
                    break
                choices = json.loads(data).get("choices") or ()
                for ch in choices:
                    delta = ch.get("delta") or {}
                    if delta.get("content"):
                        text.append(delta["content"])
                    for tc in delta.get("tool_calls") or ():
                        slot = calls.setdefault(tc.get("index", 0), {
                            "id": "", "type": "function", "function": {"name": "", "arguments": ""}})
                        slot["id"] = tc.get("id") or slot["id"]
                        fn = tc.get("function") or {}
                        slot["function"]["name"] += fn.get("name") or ""
                        slot["function"]["arguments"] += fn.get("arguments") or ""
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            msg["tool_calls"] = [calls[i] for i in sorted(calls)]
        return msg

    async def run(client: Any, prompt: str, streaming: bool) -> str:
        return await h.bare_loop(complete_stream if streaming else complete, client, prompt)

    async def aclose(client: Any) -> None:
        await client.aclose()

    return h.Adapter(name="bare httpx", package="httpx", make_agent=make_agent, run=run, aclose=aclose,
                     build_note="baseline: no agent object")


if __name__ == "__main__":
    h.main(adapter)
