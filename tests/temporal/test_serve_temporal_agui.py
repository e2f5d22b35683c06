"""AG-UI (`POST /agui/{id}`) on `chainreact serve --temporal`: a durable agent run that stops to ask ends
its AG-UI run with an interrupt, and the next AG-UI run's `resume` answers the workflow and streams the
rest of the run (before: 400 "not supported", the runs API's resume being the only way on)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx

from chainreact.durable import DevServer
from chainreact.testing import FakeLLM
from tests.server.test_agui import EVENT, agui_input, kinds, text_of
from tests.temporal.test_serve_temporal import Gate, serve_process, setup

__all__ = ["serve_process"]  # the fixture, used by name


async def agui(http: httpx.AsyncClient, url: str, body: dict[str, Any]) -> list[Any]:
    async with http.stream("POST", url, json=body) as r:
        assert r.status_code == 200, await r.aread()
        lines = [line[6:] async for line in r.aiter_lines() if line.startswith("data: ")]
    return [EVENT.validate_json(line) for line in lines]


async def test_an_interrupted_durable_run_is_resumed_over_agui(
        temporal_server: DevServer, temporal_client: Any, task_queue: str, tmp_path: Path,
        serve_process: Any) -> None:
    ask = {"tool_calls": [{"id": "q1", "name": "ask_user",
                           "arguments": {"question": "Which unit?", "schema": {"enum": ["C", "F"]}}}]}
    with FakeLLM([ask, {"text": "It is 70 F."}]) as llm:
        async with setup(tmp_path, temporal_server, temporal_client, task_queue, llm, serve_process,
                         Gate()) as (server, _), httpx.AsyncClient(timeout=60) as http:
            url = f"{server.url}/agui/helper"
            confirm = {"name": "confirm", "description": "Confirm", "parameters": {"type": "object"}}
            r = await http.post(url, json=agui_input("weather?", tools=[confirm]))
            assert r.status_code == 400 and r.json()["error"]["code"] == "unsupported_parameter", r.text
            first = await agui(http, url, agui_input("weather?"))
            assert first[-1].outcome.type == "interrupt", kinds(first)
            [intr] = first[-1].outcome.interrupts
            assert (intr.reason, intr.message) == ("ask_user", "Which unit?")
            # an answer the question refuses: 400, and the workflow still waits
            def answer(run: str, payload: str) -> dict[str, Any]:
                return agui_input(run=run, resume=[{"interruptId": intr.id, "status": "resolved",
                                                    "payload": payload}])

            r = await http.post(url, json=answer("r2", "K"))
            assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_resume", r.text
            assert "does not match the asked schema" in r.json()["error"]["message"]  # the workflow's word
            good = answer("r3", "F")
            resumed = await agui(http, url, good)
            again = await http.post(url, json=good)
        llm.assert_all_consumed()
    assert text_of(resumed) == "It is 70 F." and resumed[-1].outcome is None, kinds(resumed)
    assert kinds(resumed)[0] == "RUN_STARTED" and kinds(resumed)[-1] == "RUN_FINISHED"
    assert "TOOL_CALL_RESULT" not in kinds(resumed)  # the answered call belongs to the run before
    assert [m for m in llm.chat_requests[1].messages if m["role"] == "tool"] == [
        {"role": "tool", "tool_call_id": "q1", "content": "F"}]
    assert again.status_code == 409 and again.json()["error"]["code"] == "run_not_waiting", again.text


def test_an_interrupt_id_names_the_run_whatever_its_ids_look_like() -> None:
    # A durable run's id is "<agent>-<16 hex>": the interrupt ids made of it were refused as unknown.
    from chainreact.server.client_tools import exposed_id, parse_exposed
    from chainreact.server.durable_dispatch import new_run_id

    for run_id in ["0123456789abcdef", new_run_id("helper"), new_run_id("my_agent-2"), new_run_id("a" * 60),
                   new_run_id("0123456789abcdef")]:
        for call_id in ["q1", "call_abc_def", "x-0123456789abcdef_y"]:
            assert parse_exposed(exposed_id(run_id, call_id)) == (run_id, call_id)
