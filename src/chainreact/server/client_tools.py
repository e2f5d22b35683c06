"""An OpenAI client's side of an agent run: its own tools (`tools`, `tool_choice`), its `response_format`,
and the request that brings its tools' results back.

The request's fields become the run's RunOptions (chainreact.agent.run_options): the client's function
tools are offered to the model beside the agent's own; a run whose model calls one of them stops
(after the agent's own calls of that step ran) and the answer ends with `finish_reason: "tool_calls"`
and those calls. Each call goes out with the id `call_<run id>_<the model's call id>`, so the request
that brings the results back (chat: trailing `tool` messages; Responses: `function_call_output` items)
names the waiting run itself: the run, saved at its interrupt in the server's store, goes on with them.
No table maps ids to runs, so any server sharing the store (`--state`) can continue it. Results that
name no waiting run of ours (another client's ids, a run that was pruned or lost with an in-memory
store) are a plain conversation: a new run gets the messages as they are.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import JSONResponse

from ..agent import RunOptions, answer_format, external_tools, pending_external
from ..agent.run_options import check_tool_choice
from ..errors import ConfigError
from ..types import ToolCall
from .frames import Calls
from .openai_api import error

if TYPE_CHECKING:
    from .runs_registry import LiveRun

# A run id: 16 hex digits in process; a durable run's is its agent's name (sanitised, <= 40 characters)
# and "-" before them (durable_dispatch.new_run_id). The shortest run id that fits is the one.
_EXPOSED = re.compile(r"^call_((?:[A-Za-z0-9_-]{1,40}?-)??[0-9a-f]{16})_(.+)$", re.DOTALL)


def exposed_id(run_id: str, call_id: str) -> str:
    """The id a client answers a waiting call of run `run_id` with."""
    return f"call_{run_id}_{call_id}"


def parse_exposed(exposed: str) -> tuple[str, str] | None:
    """(run id, the model's call id) of an id made by `exposed_id`, else None."""
    m = _EXPOSED.match(exposed)
    return (m.group(1), m.group(2)) if m else None


def request_options(tools: Any, choice: Any, fmt: Any, own: list[str], *, fmt_field: str = "response_format"
                    ) -> RunOptions | JSONResponse | None:
    """The run options of a request's `tools`, `tool_choice` and response format (named `fmt_field` in
    messages), None when it asks for nothing, or the 400 that names the field that is wrong. `own`: the
    agent's own tool names (a client tool may not take one; a forced choice may name one)."""
    try:
        if tools is not None and not isinstance(tools, list):
            raise ConfigError("tools must be a list of function tools")
        external = external_tools(tools or [])
        clash = sorted(set(own) & {t.name for t in external})
        if clash:
            raise ConfigError(f"tools: {', '.join(map(repr, clash))} is a tool of the agent itself; give "
                              "your tool another name")
        check_tool_choice(choice, [*own, *(t.name for t in external)])
        answer = answer_format(fmt, fmt_field)
    except ConfigError as e:
        return error(400, str(e), code="invalid_request")
    if not external and choice in (None, "auto") and answer is None:
        return None
    return RunOptions(tuple(external), choice, answer)


def tool_results(messages: list[dict[str, Any]]) -> tuple[str, dict[str, Any]] | JSONResponse | None:
    """The run that a chat request's trailing `tool` messages answer, with the answers by the model's call
    id; None when they answer no call of ours (or there are none)."""
    trailing: list[dict[str, Any]] = []
    for m in reversed(messages):
        if m.get("role") != "tool":
            break
        trailing.append(m)
    return _answers([(str(m.get("tool_call_id") or ""), m.get("content")) for m in reversed(trailing)])


def _answers(results: list[tuple[str, Any]]) -> tuple[str, dict[str, Any]] | JSONResponse | None:
    runs: dict[str, dict[str, Any]] = {}
    for exposed, content in results:
        parsed = parse_exposed(exposed)
        if parsed is None:
            return None
        runs.setdefault(parsed[0], {})[parsed[1]] = result_text(content)
    if len(runs) > 1:
        return error(400, "the tool results at the end of the request answer calls of several runs "
                          f"({', '.join(sorted(runs))}); send each run's results in its own request",
                     code="invalid_tool_results")
    return next(iter(runs.items()), None)


def result_text(content: Any) -> str:
    """A tool result's content as text: a string as is, a list of text parts joined, else JSON."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(p, dict) for p in content):
        return "".join(str(p.get("text", "")) for p in content
                       if p.get("type") in ("text", "input_text", "output_text"))
    return orjson.dumps(content).decode()


def client_calls(live: LiveRun) -> Calls | None:
    """The Calls frame of a run that ended waiting only on the client's tools, else None."""
    result = live.result
    pending = pending_external(result)
    if not pending or result is None:
        return None
    calls = [ToolCall(exposed_id(live.run_id, c.id), c.name, c.arguments) for c in pending]
    # The text the model wrote beside the calls (a tool round's text is not streamed as answer text).
    waiting = {c.id for c in pending}
    said = next((m.text for m in reversed(result.messages)
                 if m.role == "assistant" and m.tool_calls and waiting & {c.id for c in m.tool_calls}), "")
    return Calls(calls, result.usage, said)
