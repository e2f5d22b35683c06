"""Sessions over HTTP: the chat request's `user` field (or the `X-Session-Key` header) names a conversation
kept in the state store, as `chainreact run --session` does.

The session's history is the run's context and the run's new messages (from its prompt on) are appended
when it ends (a cancelled run's history repaired first; an interrupted run's once it is resumed and ends).
Clients may send only the new messages, or the whole conversation as chat UIs do: when the request's
messages (system ones aside) begin with the stored history as the user saw it (user messages and
answers; tool calls are never shown, so never sent back), that part is not counted twice.

Rule chains (`model` = a chain id, and RuleGo's `/api/v1/rules/{id}/v1/chat/completions`) get the key as
message metadata `sessionKey` with `loadHistory=true` and `sessionScope=node`: each `ai/agent` / `ai/llm`
node of the chain keeps its own conversation in the session (what it was given, what it answered),
loaded before its input and appended when it answers; the chain engine's session store is the server's
state store (chains/sessions.py).

Without a state store chosen by the operator (`--state` or $CHAINREACT_STATE) there are no sessions: the
`user` field is ignored and every request is stateless.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .openai_api import error
from .owners import SessionOwners, chain_key
from .runs_registry import RunRegistry

if TYPE_CHECKING:
    from ..chains.engine import RuleEngine
    from .runs_registry import LiveRun

MAX_KEY = 200


def session_key(request: Request, body: dict[str, Any]) -> str | Response | None:
    """The session key of a chat request (`X-Session-Key` wins over `user`), or the 400 saying why not."""
    key = request.headers.get("x-session-key")
    if key is None:
        key = body.get("user")
        if key is not None and not isinstance(key, str):
            return error(400, "'user' must be a string (it names the session)")
    if key is None or key == "":
        return None
    if len(key) > MAX_KEY or not key.isprintable():
        return error(400, f"the session key must be printable text of at most {MAX_KEY} characters")
    return key


def merge_history(history: list[Any], messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request's system messages, then the stored history (Messages), then the request's new
    messages: a client that sent the whole conversation again (as a chat UI does: the user messages and
    the answers, without tool calls) has that part dropped (chains/sessions.py `unsent_part`)."""
    from ..chains.sessions import unsent_part

    system = [m for m in messages if m.get("role") == "system"]
    rest = [m for m in messages if m.get("role") != "system"]
    return [*system, *(m.to_openai() for m in history), *unsent_part(history, rest)]


def wire_chain_sessions(registry: RunRegistry | None, engine: RuleEngine | None) -> None:
    """Make the server's state store the chain engine's session store (when the server has sessions), so
    chains' agent nodes keep their conversations there, across restarts."""
    if registry is None or not registry.sessions or registry.store is None or engine is None:
        return
    if engine.services.get("sessions") is not registry.store:
        engine.services["sessions"] = registry.store


async def chain_session(request: Request, body: dict[str, Any], registry: RunRegistry | None,
                        engine: RuleEngine | None, owners: SessionOwners,
                        chain_id: str) -> dict[str, str] | Response:
    """The message metadata that puts a chat request to chain `chain_id` in its session (none without a
    key or without sessions), or the 400 saying why the key is refused (404: another user's session)."""
    key = session_key(request, body)
    if isinstance(key, Response) or key is None or registry is None or not registry.sessions:
        return key if isinstance(key, Response) else {}
    if refused := await owners.check(request, chain_key(chain_id, key), key, write=True):
        return refused.openai()
    wire_chain_sessions(registry, engine)
    return chain_session_metadata(key)


# Store keys of the server's own conversations (agents', flows', chains' nodes'): a chain message's own
# `sessionKey` may not name them, or the chain's agent nodes would read and write them as their own.
RESERVED_KEYS = ("agent:", "chain:", "flow:", "flowmem:")


async def message_session(request: Request, owners: SessionOwners, chain_id: str,
                          key: str | None) -> Response | None:
    """None, or the refusal of the `sessionKey` metadata a client gave a chain message itself (RuleGo's
    execute and notify take it from X-Session-Key or the query): 400 for a key in the server's own
    namespaces (RESERVED_KEYS), 404 for another user's session (`chain:<id>:<key>`, as on the chat
    routes)."""
    if not key:
        return None
    if key.startswith(RESERVED_KEYS):
        return JSONResponse({"error": {"message": f"sessionKey {key[:80]!r}: keys starting with "
                                                  f"{', '.join(RESERVED_KEYS)} are the server's own "
                                                  "conversations; name the session otherwise",
                                       "code": "invalid_session_key"}}, status_code=400)
    refused = await owners.check(request, chain_key(chain_id, key), key, write=True)
    return refused.plain() if refused is not None else None


def chain_session_metadata(key: str) -> dict[str, str]:
    """The message metadata that puts a chain run in session `key`, each agent node with its own
    conversation (loaded before its input, appended when it answers)."""
    return {"sessionKey": key, "loadHistory": "true", "sessionScope": "node"}


async def session_input(registry: RunRegistry, key: str | None, messages: list[dict[str, Any]]) -> Any:
    """The agent's input: the request's messages, after the session's history when there is one."""
    if key is None or not registry.sessions:
        return {"messages": messages}
    return {"messages": merge_history(await registry.db.history(key), messages)}


async def until_end_or_disconnect(request: Request, registry: RunRegistry, live: LiveRun,
                                  work: Awaitable[Any]) -> bool:
    """Await `work` (the run's end, or the answer being made) unless the client disconnects first: then
    the run is cancelled (unless detached), its end awaited, and False returned."""
    task = asyncio.ensure_future(work)
    gone = asyncio.ensure_future(_disconnected(request))
    try:
        await asyncio.wait([task, gone], return_when=asyncio.FIRST_COMPLETED)
    finally:
        gone.cancel()
    if task.done():
        return True
    await registry.release(live)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    return False


async def _disconnected(request: Request) -> None:
    # The body was read already: the next message is the disconnect (or never comes).
    while (await request.receive())["type"] != "http.disconnect":
        pass


def unavailable() -> Response:
    return JSONResponse({"error": {"message": "the server is shutting down", "code": "shutting_down"}},
                        status_code=503, headers={"Retry-After": "5"})
