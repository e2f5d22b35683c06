"""`chainreact serve --temporal` and a model call retried after part of its stream: the chat stream (openai
SDK) shows the answer once, nothing twice, and the runs API's SSE passes the `stream_reset` event on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import orjson

from chainreact import Agent
from chainreact.durable import AgentHost, DevServer, durable_worker
from chainreact.state import open_store
from chainreact.testing import FakeLLM
from tests.server.runs_helpers import agent_doc
from tests.temporal.test_serve_temporal import serve_process, sse  # noqa: F401 (a fixture)

ANSWER = "The quick brown fox jumps over the lazy dog, twice and then once more for good measure."
# The first attempt is cut after 5 of 12 chunks; the activity's retry streams the answer again.
CUT = [{"text": ANSWER, "chunks": 12, "fault": "disconnect", "after_chunks": 5},
       {"text": ANSWER, "chunks": 12}]


async def test_a_retried_model_call_streams_once_through_the_server(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any) -> None:  # noqa: F811
    from openai import AsyncOpenAI

    state = f"sqlite:///{tmp_path / 'state.db'}"
    with FakeLLM([*CUT, *CUT]) as llm:
        doc = tmp_path / "streamer.json"
        doc.write_bytes(orjson.dumps(agent_doc(llm.url, "streamer")))
        agent = Agent(name="streamer", instruction="Talk.", url=llm.url, model="fake-model",
                      config={"maxRetries": 2})
        async with await open_store(state) as store, \
                durable_worker(temporal_client, task_queue, AgentHost([agent], store=store)):
            server = await serve_process([str(doc), "--temporal", temporal_server.address, "--task-queue",
                                          task_queue, "--state", state]).ready()
            sdk = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused")
            stream = await sdk.chat.completions.create(
                model="streamer", messages=[{"role": "user", "content": "go"}], stream=True)
            text, pieces = "", 0
            async for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    text += chunk.choices[0].delta.content
                    pieces += 1
            await sdk.close()

            async with httpx.AsyncClient(timeout=60) as http, \
                    http.stream("POST", f"{server.url}/api/v1/agents/streamer/runs",
                                json={"input": "go", "stream": True}) as resp:
                frames = [f async for f in sse(resp)]
        llm.assert_all_consumed()
    assert text == ANSWER and pieces > 1  # streamed in pieces, the cut attempt's prefix not repeated
    kinds = [f["event"] for f in frames]
    assert kinds.count("stream_reset") == 1
    reset = kinds.index("stream_reset")
    assert frames[reset]["data"]["attempt"] == 2
    before = "".join(f["data"]["text"] for f in frames[:reset] if f["event"] == "text_delta")
    after = "".join(f["data"]["text"] for f in frames[reset:] if f["event"] == "text_delta")
    assert before and ANSWER.startswith(before) and before != ANSWER and after == ANSWER


def test_the_chat_reader_drops_superseded_attempts_and_goes_on_where_a_retry_departs() -> None:
    from chainreact.server.durable_runs import RetriedStream

    r = RetriedStream()

    def delta(text: str, attempt: int, step: int = 1) -> dict[str, Any]:
        return {"type": "text_delta", "text": text, "attempt": attempt, "step": step, "path": ["a"]}

    given = [r.filter("text_delta", delta("Hello wo", 1)),
             r.filter("stream_reset", {"type": "stream_reset", "attempt": 2, "step": 1, "path": ["a"]}),
             r.filter("text_delta", delta("rld, too late", 1)),  # the superseded attempt still writing
             r.filter("text_delta", delta("Hel", 2)), r.filter("text_delta", delta("lo world", 2)),
             r.filter("text_delta", delta("Other step", 1, step=2)),
             r.filter("stream_reset", {"type": "stream_reset", "attempt": 3, "step": 1, "path": ["a"]}),
             r.filter("text_delta", delta("Hello there", 3)),  # departs from the shown text
             r.filter("tool_call", {"type": "tool_call", "step": 1})]
    texts = [g.get("text") if g else None for g in given]
    assert texts == ["Hello wo", None, None, None, "rld", "Other step", None, "there", None]
    assert given[-1] == {"type": "tool_call", "step": 1}
