"""`chainreact serve --temporal` on a PostgreSQL state store (the shared backend of a deployment on several
machines): a `chainreact worker` process and a server process share `--state postgresql://...` (a schema
of their own, dropped afterwards) and serve an agent, a rule chain and a chat flow: the workers write the
runs' events, the chain's live frames and the flow's session there, the server reads them there. Runs
under CI=true (tests/state/conftest.py: no PostgreSQL there is a failure, not a skip)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import httpx

from chainreact.durable import DevServer
from chainreact.state import open_store
from chainreact.testing import FakeLLM
from tests.server.runs_helpers import agent_doc
from tests.state.conftest import PG_URL, drop_schema, require_postgres
from tests.temporal.test_durable_flow import desk_flow, reply
from tests.temporal.test_serve_temporal import serve_process, sse  # noqa: F401 (a fixture)
from tests.temporal.test_serve_temporal_chains import ANSWER, chat_chain

HELLO = "Hello from a worker."


async def test_serve_temporal_with_a_postgresql_store(
        temporal_server: DevServer, task_queue: str, tmp_path: Path, serve_process: Any,  # noqa: F811
        worker_processes: Any) -> None:
    from openai import AsyncOpenAI

    require_postgres()
    schema = "t_" + uuid.uuid4().hex[:16]
    state = f"{PG_URL}?schema={schema}"
    script = [{"text": HELLO, "chunks": 3}, {"text": HELLO, "chunks": 3}, {"text": ANSWER, "chunks": 3},
              reply("Sorry, I will check order 42."), reply("Glad it arrived.", resolved=True)]
    try:
        with FakeLLM(script) as llm:
            docs = []
            for name, doc in (("helper", agent_doc(llm.url)), ("chat", chat_chain(llm.url)),
                              ("desk", desk_flow(llm.url))):
                path = tmp_path / f"{name}.json"
                path.write_text(json.dumps(doc))
                docs.append(str(path))
            temporal = ["--temporal", temporal_server.address, "--task-queue", task_queue, "--state", state]
            worker_processes([*docs, *temporal])
            server = await serve_process([*docs, *temporal]).ready()
            async with httpx.AsyncClient(timeout=60) as http:
                async with http.stream("POST", f"{server.url}/api/v1/agents/helper/runs",
                                       json={"input": "hi", "stream": True}) as resp:
                    run_id = resp.headers["x-run-id"]
                    frames = [f async for f in sse(resp)]
                view = (await http.get(f"{server.url}/api/v1/runs/{run_id}")).json()
                sdk = AsyncOpenAI(base_url=f"{server.url}/v1", api_key="unused")
                agent_text, chain_text = "", ""
                async for chunk in await sdk.chat.completions.create(
                        model="helper", messages=[{"role": "user", "content": "hi"}], stream=True):
                    agent_text += chunk.choices[0].delta.content or "" if chunk.choices else ""
                async for chunk in await sdk.chat.completions.create(
                        model="chat", messages=[{"role": "user", "content": "hello"}], stream=True):
                    chain_text += chunk.choices[0].delta.content or "" if chunk.choices else ""
                await sdk.close()
                turn = f"{server.url}/api/v1/flows/desk/sessions/s1/messages"
                first = (await http.post(turn, json={"text": "My order 42 is late", "stream": False,
                                                     "user": {"name": "Ann"}})).json()
                second = (await http.post(turn, json={"text": "It arrived", "stream": False,
                                                      "user": {"name": "Ann"}})).json()
                session = (await http.get(f"{server.url}/api/v1/flows/desk/sessions/s1")).json()
            llm.assert_all_consumed()
        async with await open_store(state) as store:
            record = await store.get_run(run_id)
            logged = [e.type for e in await store.events(run_id)]
            flow_record = await store.get_run("flow:desk:s1")
    finally:
        await drop_schema(schema)
    kinds = [f["event"] for f in frames]
    assert kinds[0] == "run_start" and kinds[-2:] == ["final", "end"] and "text_delta" in kinds
    assert "".join(f["data"]["text"] for f in frames if f["event"] == "text_delta") == HELLO
    assert view["status"] == "done" and view["durable"] and view["result"]["content"] == HELLO
    assert agent_text == HELLO and chain_text == ANSWER
    assert [m["content"] for m in first["messages"]] == ["Sorry, I will check order 42."]
    assert [m["content"] for m in second["messages"]] == ["Glad it arrived.", "Bye Ann."]
    assert session["exists"] and session["ended"]
    # All of it in the PostgreSQL store the workers wrote: the run, its events, the flow's session.
    assert record is not None and record.status == "done"
    assert [t for t in logged if t != "io"] == kinds[:-1] and "io" in logged  # and its recording
    assert flow_record is not None and flow_record.snapshot["ended"]
