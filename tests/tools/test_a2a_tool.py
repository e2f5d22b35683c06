"""chainreact's `a2a` tool against a remote agent built with the official `a2a-sdk` (its AgentExecutor,
request handler and Starlette routes, served on 127.0.0.1 behind a bearer check): the card gives the
tool's name and description, a call answers the task's artifact, a task that needs input is answered by a
second call with its task id, one run's calls share a context, and `validate` checks the descriptor
without any network."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from a2a.helpers import new_text_artifact, new_text_message
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandlerV2
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import AgentCapabilities, AgentCard, AgentInterface, AgentSkill, Task, TaskState, TaskStatus
from starlette.applications import Starlette
from starlette.middleware.base import BaseHTTPMiddleware
from starlette.responses import JSONResponse

from chainreact import Agent
from chainreact.server.background import BackgroundServer

TOKEN = "remote-secret"


class Converter(AgentExecutor):
    """Converts temperatures; asks for the unit when the message names none. Records every context id."""

    def __init__(self) -> None:
        self.contexts: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        assert context.task_id and context.context_id
        self.contexts.append(context.context_id)
        if context.current_task is None:
            await event_queue.enqueue_event(Task(id=context.task_id, context_id=context.context_id,
                                                 status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                                                 history=[context.message]))
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if text.startswith("fail"):
            await updater.failed(new_text_message("no such city", context_id=context.context_id,
                                                  task_id=context.task_id))
            return
        if "unit" not in text and text not in ("C", "F"):
            ask = new_text_message("Which unit, C or F?", context_id=context.context_id,
                                   task_id=context.task_id)
            await updater.requires_input(ask)
            return
        unit = text if text in ("C", "F") else text.split()[-1]
        await updater.add_artifact(new_text_artifact("answer", f"21 degrees {unit}").parts, name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        raise NotImplementedError


class Bearer(BaseHTTPMiddleware):
    async def dispatch(self, request: Any, call_next: Any) -> Any:
        if request.headers.get("authorization") != f"Bearer {TOKEN}":
            return JSONResponse({"error": "unauthorized"}, status_code=401)
        return await call_next(request)


@pytest.fixture
def remote() -> Iterator[tuple[str, Converter]]:
    executor = Converter()
    card = AgentCard(name="Temperature Converter", description="Tells temperatures.", version="1.0",
                     supported_interfaces=[AgentInterface(
                         url="http://placeholder/", protocol_binding="JSONRPC", protocol_version="1.0")],
                     capabilities=AgentCapabilities(streaming=False), default_input_modes=["text/plain"],
                     default_output_modes=["text/plain"],
                     skills=[AgentSkill(id="temp", name="temperature", description="A city's temperature",
                                        tags=["weather"])])
    handler = DefaultRequestHandlerV2(agent_executor=executor, task_store=InMemoryTaskStore(),
                                      agent_card=card)
    app = Starlette(routes=[*create_agent_card_routes(card), *create_jsonrpc_routes(handler, rpc_url="/rpc")])
    app.add_middleware(Bearer)
    with BackgroundServer(app) as server:
        card.supported_interfaces[0].url = server.url + "/rpc"  # the card names where it is served
        yield server.url, executor


def agent_doc(llm_url: str, remote_url: str, token: str = TOKEN) -> dict[str, Any]:
    return {"id": "asker", "type": "ai/agent", "name": "asker", "configuration": {
        "url": llm_url, "key": "k", "model": "m", "maxRetries": -1, "systemPrompt": "You ask others.",
        "tools": [{"type": "a2a", "url": remote_url, "auth": {"type": "bearer", "bearerToken": token}}]}}


def converse(body: dict[str, Any]) -> dict[str, Any]:
    """The model: asks the remote agent, answers its question with the task id it was given, then answers."""
    results = [m["content"] for m in body["messages"] if m["role"] == "tool"]
    if not results:
        return {"tool_calls": [{"id": "c1", "name": "Temperature_Converter",
                                "arguments": {"message": "Lyon?"}}]}
    if len(results) == 1:
        task_id = results[0].split("taskId ")[1].strip(".'\"")
        return {"tool_calls": [{"id": "c2", "name": "Temperature_Converter",
                                "arguments": {"message": "C", "taskId": task_id}}]}
    return {"text": f"{results[-1]} in Lyon."}


def test_a_remote_a2a_agent_as_a_tool(fake_llm: Any, remote: Any) -> None:
    url, executor = remote
    llm = fake_llm(converse)
    result = Agent.from_config(agent_doc(llm.url, url)).run_sync("Temperature in Lyon?")
    assert result.content == "21 degrees C in Lyon."
    first = next(m["content"] for m in llm.chat_requests[1].messages if m["role"] == "tool")
    assert first.startswith("The remote agent needs more input: Which unit, C or F?\nTo answer, call "
                            "Temperature_Converter again with the answer as message and taskId")
    second = [m for m in llm.chat_requests[2].messages if m["role"] == "tool"][-1]["content"]
    assert second == "21 degrees C"
    assert len(set(executor.contexts)) == 1  # one run's calls: one remote context
    [tool] = llm.chat_requests[0].body["tools"]  # the card gave the tool its name and description
    assert tool["function"]["name"] == "Temperature_Converter"
    assert tool["function"]["description"] == "Tells temperatures.\nSkills: temperature: A city's temperature"
    assert tool["function"]["parameters"]["required"] == ["message"]


def test_failures_and_a_wrong_key_are_told(fake_llm: Any, remote: Any) -> None:
    url, _ = remote
    llm = fake_llm([{"tool_calls": [{"id": "c1", "name": "Temperature_Converter",
                                     "arguments": {"message": "fail please"}}]}, {"text": "Sorry."}])
    result = Agent.from_config(agent_doc(llm.url, url)).run_sync("Temperature in Atlantis?")
    assert result.content == "Sorry."
    [told] = [m for m in llm.chat_requests[1].messages if m["role"] == "tool"]
    assert "ended FAILED: no such city" in told["content"]
    from chainreact.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        Agent.from_config(agent_doc(llm.url, url, token="wrong")).run_sync("x")
    assert "tools[0].url" in str(caught.value) and "401" in str(caught.value)


def test_validate_checks_the_descriptor_without_the_network(tmp_path: Any) -> None:
    from chainreact.tools.check import descriptor_problems

    assert descriptor_problems([{"type": "a2a", "url": "ftp://x"}], "$.configuration.tools") == [
        ("$.configuration.tools[0].url", "an a2a tool needs the remote agent's http(s) URL, got 'ftp://x'")]
    problems = descriptor_problems([{"type": "a2a", "url": "http://127.0.0.1:9/a2a/x",
                                     "auth": {"type": "bearer"}}], "$.tools")
    assert problems and problems[0][0].startswith("$.tools[0].auth")
    assert descriptor_problems([{"type": "a2a", "url": "http://127.0.0.1:9/a2a/x"}], "$.tools") == []
