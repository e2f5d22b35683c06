"""Baseline: a bare openai-SDK loop (`AsyncOpenAI.chat.completions.create`), no agent framework."""

from __future__ import annotations

from typing import Any

import _harness as h
from run_bare_httpx import TOOLS


def adapter() -> h.Adapter:
    h.require("openai", "openai")
    from openai import AsyncOpenAI

    def make_agent(url: str, streaming: bool) -> Any:
        return AsyncOpenAI(base_url=url, api_key="x", max_retries=0, timeout=h.TIMEOUT)

    async def complete_stream(client: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
        stream = await client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS,
                                                      stream=True)
        text: list[str] = []
        calls: dict[int, dict[str, Any]] = {}
        async for chunk in stream:
            for ch in chunk.choices:
                d = ch.delta
                if d.content:
                    text.append(d.content)
                for tc in d.tool_calls or ():
                    slot = calls.setdefault(tc.index, {"id": "", "type": "function",
                                                       "function": {"name": "", "arguments": ""}})
                    slot["id"] = tc.id or slot["id"]
                    if tc.function is not None:
                        slot["function"]["name"] += tc.function.name or ""
                        slot["function"]["arguments"] += tc.function.arguments or ""
        msg: dict[str, Any] = {"role": "assistant", "content": "".join(text) or None}
        if calls:
            msg["tool_calls"] = [calls[i] for i in sorted(calls)]
        return msg

    async def complete(client: Any, messages: list[dict[str, Any]]) -> dict[str, Any]:
        resp = await client.chat.completions.create(model="fake-model", messages=messages, tools=TOOLS)
        m = resp.choices[0].message
        msg: dict[str, Any] = {"role": "assistant", "content": m.content}
        if m.tool_calls:
            msg["tool_calls"] = [{"id": c.id, "type": "function",
                                  "function": {"name": c.function.name, "arguments": c.function.arguments}}
                                 for c in m.tool_calls]
        return msg

    async def run(client: Any, prompt: str, streaming: bool) -> str:
        return await h.bare_loop(complete_stream if streaming else complete, client, prompt)

    async def aclose(client: Any) -> None:
        await client.close()

    return h.Adapter(name="bare openai SDK", package="openai", make_agent=make_agent, run=run,
                     aclose=aclose, build_note="baseline: no agent object")


if __name__ == "__main__":
    h.main(adapter)
