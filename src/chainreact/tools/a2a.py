"""A remote A2A agent as a tool (protocol 1.0, JSON-RPC binding):

    {"type": "a2a", "url": "https://agents.example.com/a2a/helper",
     "auth": {"type": "bearer", "bearerToken": "${global.helper_key}"},   # or header / basic, as http tools
     "name": "...", "description": "...", "timeout": 120000}                 # optional: the card's, 120 s

When the agent's tools are made, the agent card is read from `<url>/.well-known/agent-card.json` (a `url`
that ends in `.json` is the card itself): its name (made a tool name: letters, digits, `_`, `-`) and its
description with its skills become the tool's, unless the descriptor gives them; its JSON-RPC interface is
where calls go. A call sends `SendMessage` (blocking) with `message` as the text and answers the task's
artifacts as text. Calls of one run share an A2A context (the remote agent's conversation). A task that
needs input answers so, with its task id: the model calls again with the answer and `taskId` to go on. A
task that fails, is rejected or cancelled, a JSON-RPC error, an HTTP error: an error result naming it.
"""

from __future__ import annotations

import re
import uuid
from collections import OrderedDict
from typing import Any
from urllib.parse import urlsplit

import orjson

from ..errors import ConfigError
from .base import Tool, ToolContext, ToolOutput

CARD_PATH = "/.well-known/agent-card.json"
DEFAULT_TIMEOUT = 120.0
MAX_CONTEXTS = 1000  # runs whose remote context a tool remembers (the most recent)
_BAD_NAME = re.compile(r"[^A-Za-z0-9_-]+")
PARAMETERS = {"type": "object", "properties": {
    "message": {"type": "string", "description": "What to ask or tell the remote agent."},
    "taskId": {"type": "string", "description": "Only to answer a remote task that asked for more input: "
                                                "its task id."}}, "required": ["message"]}


def _err(where: str, field: str, message: str) -> ConfigError:
    return ConfigError(f"{where}.{field}: {message}", errors=[(f"{where}.{field}", message)])


def parse_descriptor(d: dict[str, Any], where: str) -> tuple[str, dict[str, str], float]:
    """(card URL, request headers, timeout in seconds) of an `a2a` descriptor, checked without any network:
    ConfigError naming the field."""
    from .descriptors import HttpAuth, validate_part
    from .http import auth_headers

    url = d.get("url")
    if not isinstance(url, str) or urlsplit(url).scheme not in ("http", "https") or not urlsplit(url).netloc:
        raise _err(where, "url", f"an a2a tool needs the remote agent's http(s) URL, got {url!r}")
    card = url if url.endswith(".json") else url.rstrip("/") + CARD_PATH
    auth = d.get("auth")
    headers = auth_headers(validate_part(HttpAuth, auth, f"{where}.auth")) if auth is not None else {}
    timeout = float(d["timeout"]) / 1000 if d.get("timeout") else DEFAULT_TIMEOUT
    return card, headers, timeout


async def load_a2a_tool(descriptor: Any, where: str) -> A2ATool:
    """The tool of an `a2a` descriptor, its name and description from the remote agent card."""
    import httpx

    d = descriptor.model_dump(exclude_none=True) if hasattr(descriptor, "model_dump") else dict(descriptor)
    card_url, headers, timeout = parse_descriptor(d, where)
    try:
        async with httpx.AsyncClient(timeout=min(timeout, 30.0)) as client:
            resp = await client.get(card_url, headers=headers)
        resp.raise_for_status()
        card = resp.json()
    except (httpx.HTTPError, ValueError) as e:
        raise _err(where, "url", f"cannot read the A2A agent card at {card_url}: {e}; is the remote agent "
                                 "served there (and the auth right)?") from None
    if not isinstance(card, dict):
        raise _err(where, "url", f"{card_url} is no A2A agent card (not a JSON object)")
    rpc = _jsonrpc_url(card)
    if rpc is None:
        raise _err(where, "url", f"the agent card at {card_url} offers no JSON-RPC interface of protocol 1.x")
    name = str(d.get("name") or _BAD_NAME.sub("_", str(card.get("name") or "remote_agent")).strip("_")[:64])
    return A2ATool(name=name or "remote_agent", description=str(d.get("description") or _describe(card)),
                   rpc_url=rpc, headers=headers, timeout=timeout)


def _jsonrpc_url(card: dict[str, Any]) -> str | None:
    for iface in card.get("supportedInterfaces") or []:
        version = str(iface.get("protocolVersion") or "1.0")
        if iface.get("protocolBinding") == "JSONRPC" and version.split(".")[0] == "1" and iface.get("url"):
            return str(iface["url"])
    return None


def _describe(card: dict[str, Any]) -> str:
    text = str(card.get("description") or f"The remote A2A agent {card.get('name')!r}.")
    skills = [f"{s.get('name')}: {s.get('description')}" for s in card.get("skills") or []
              if isinstance(s, dict)]
    return text + ("\nSkills: " + "; ".join(skills) if skills else "")


def _text(parts: Any) -> str:
    out = []
    for p in parts or []:
        if isinstance(p, dict) and isinstance(p.get("text"), str):
            out.append(p["text"])
        elif isinstance(p, dict) and "data" in p:
            out.append(orjson.dumps(p["data"]).decode())
        elif isinstance(p, dict) and p.get("url"):
            out.append(str(p["url"]))
    return "\n".join(out)


class A2ATool(Tool):
    """Calls one remote A2A agent (its JSON-RPC URL); one httpx client, made on first use."""

    parameters = PARAMETERS

    def __init__(self, *, name: str, description: str, rpc_url: str, headers: dict[str, str],
                 timeout: float = DEFAULT_TIMEOUT):
        self.name, self.description, self.rpc_url = name, description, rpc_url
        self.headers = {**headers, "A2A-Version": "1.0"}
        self.request_timeout = timeout
        self._client: Any = None
        self._contexts: OrderedDict[str, str] = OrderedDict()  # the calling run's id -> its remote context

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> ToolOutput:
        import httpx

        message: dict[str, Any] = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER",
                                   "parts": [{"text": str(args.get("message", ""))}]}
        if ctx.run_id in self._contexts:  # one remote conversation per run of the calling agent
            message["contextId"] = self._contexts[ctx.run_id]
        if args.get("taskId"):
            message["taskId"] = str(args["taskId"])
        body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": "SendMessage",
                "params": {"message": message}}
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.request_timeout)
        try:
            resp = await self._client.post(self.rpc_url, json=body, headers=self.headers)
            resp.raise_for_status()
            answer = resp.json()
        except (httpx.HTTPError, ValueError) as e:
            return ToolOutput(f"the remote agent {self.name} could not be reached: {e}", is_error=True)
        if not isinstance(answer, dict):
            return ToolOutput(f"the remote agent {self.name} sent no JSON-RPC response", is_error=True)
        if isinstance(answer.get("error"), dict):
            err = answer["error"]
            return ToolOutput(f"the remote agent {self.name} answered error {err.get('code')}: "
                              f"{err.get('message')}", is_error=True)
        result = answer["result"] if isinstance(answer.get("result"), dict) else {}
        if isinstance(result.get("message"), dict):
            return ToolOutput(_text(result["message"].get("parts")))
        task = result.get("task")
        if not isinstance(task, dict):
            return ToolOutput(f"the remote agent {self.name} answered neither a task nor a message",
                              is_error=True)
        if task.get("contextId") and ctx.run_id:
            self._contexts[ctx.run_id] = str(task["contextId"])
            self._contexts.move_to_end(ctx.run_id)
            while len(self._contexts) > MAX_CONTEXTS:
                self._contexts.popitem(last=False)
        return self._task_output(task)

    def _task_output(self, task: dict[str, Any]) -> ToolOutput:
        status = task.get("status") or {}
        state = str(status.get("state") or "")
        said = _text((status.get("message") or {}).get("parts"))
        data = {"taskId": task.get("id"), "contextId": task.get("contextId"), "state": state}
        if state == "TASK_STATE_COMPLETED":
            text = "\n".join(_text(a.get("parts")) for a in task.get("artifacts") or []
                             if isinstance(a, dict))
            return ToolOutput(text or said, data=data)
        if state in ("TASK_STATE_INPUT_REQUIRED", "TASK_STATE_AUTH_REQUIRED"):
            return ToolOutput(f"The remote agent needs more input: {said or '(no question given)'}\nTo "
                              f"answer, call {self.name} again with the answer as message and taskId "
                              f"{task.get('id')!r}.", data=data)
        if state in ("TASK_STATE_FAILED", "TASK_STATE_REJECTED", "TASK_STATE_CANCELED"):
            return ToolOutput(f"the remote task {task.get('id')} ended {state.removeprefix('TASK_STATE_')}"
                              f"{': ' + said if said else ''}", is_error=True, data=data)
        return ToolOutput(f"the remote task {task.get('id')} is {state or 'in an unknown state'}; it did not "
                          "finish within the call", is_error=True, data=data)

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None


__all__ = ["A2ATool", "load_a2a_tool", "parse_descriptor"]
