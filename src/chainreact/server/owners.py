"""Sessions bound to the users who started them, when the server has logins (`users`: server/login.py).

A session started by a logged-in user belongs to that user: the user's requests continue it and read it;
another user's requests, and requests without a login, get 404 for it, whatever route they come by. An
API key with the `admin` permission may read and list any session (not write to it: 403). A session
started without a login belongs to no one and stays open to everyone, until a logged-in user continues
it: it is theirs from then on (a flow's `loginRequired` node asks for the login in the middle of a
conversation). Without logins there are no owners: every session is as open as the routes are.

Sessions are named by their wing (`owned key`), the names the store keeps them under where there is one:

    flow:<flow id>:<session>      a flow's session (flows.Flow.session_key)
    agent:<agent id>:<key>        an agent's conversation (runs_registry.agent_session)
    chain:<chain id>:<key>        a rule chain's conversation (its nodes' keys: chains.node_session_key)

A run of the runs API (and a task, a waiting call) belongs to the owner of its session (`run_key`); a run
outside any session belongs to no one. Owners are kept in the server's state store
(`Store.claim_owner`, `Store.owners`): the first claim of a key wins, also across server processes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from starlette.requests import Request
from starlette.responses import JSONResponse

from .openai_api import error
from .runs_registry import agent_session

if TYPE_CHECKING:
    from ..state import Store

ADMIN = "admin"


def flow_key(flow_id: str, session: str) -> str:
    return f"flow:{flow_id}:{session}"


def chain_key(chain_id: str, session: str) -> str:
    return f"chain:{chain_id}:{session}"


def session_of(kind: str, target: str, session: str) -> str | None:
    """The owned key of session `session` of catalog entry `target` of `kind` (agent, chain, flow)."""
    if kind == "agent":
        return agent_session(target, session)
    if kind == "chain":
        return chain_key(target, session)
    return flow_key(target, session) if kind == "flow" else None


def run_key(view: Mapping[str, Any]) -> str | None:
    """The owned key of a run's session (a runs API view: kind, target, the session as the client named
    it), or None: the run is in no session."""
    session, target = view.get("session"), view.get("target")
    if not isinstance(session, str) or not session or not isinstance(target, str):
        return None
    return session_of(str(view.get("kind") or "agent"), target, session)


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request may not use a session: answered as `status` (404: not the owner; 403: an admin key
    writing) in the route's own error shape."""

    status: int
    message: str
    code: str

    def plain(self) -> JSONResponse:
        return JSONResponse({"error": {"message": self.message, "code": self.code}}, status_code=self.status)

    def openai(self) -> JSONResponse:
        kind = "invalid_request_error" if self.status == 404 else "permission_error"
        return error(self.status, self.message, kind, self.code)


class SessionOwners:
    """The owners of the app's sessions (`ctx.owners`). Without `user_of` (no logins) every check passes
    at no cost. `user_of(request)`: the logged-in user's name, or None; `store()`: the server's store."""

    def __init__(self, user_of: Callable[[Request], str | None] | None = None,
                 store: Callable[[], Awaitable[Store]] | None = None):
        self.user_of = user_of
        self.store = store

    @property
    def on(self) -> bool:
        return self.user_of is not None and self.store is not None

    async def check(self, request: Request, key: str | None, name: str, *, write: bool) -> Refusal | None:
        """None if `request` may continue (`write`) or read the session `key` (shown as `name`); a
        logged-in user continuing a session that has no owner takes it. Else the Refusal."""
        if key is None or not self.on:
            return None
        assert self.user_of is not None and self.store is not None
        user = self.user_of(request)
        store = await self.store()
        owner = (await store.owners([key])).get(key)
        if owner is None and write and user is not None:
            owner = await store.claim_owner(key, user)
        if owner is None or owner == user:
            return None
        if is_admin(request):
            if not write:
                return None
            return Refusal(403, f"session {name!r} belongs to a logged-in user: an admin key may read it, "
                                "only its owner may continue it", "session_owned")
        return Refusal(404, f"session {name!r} is not yours (a logged-in user's session): log in as its "
                            "owner (X-User-Token), or name another session", "session_not_found")

    async def visible(self, request: Request, keys: Iterable[str]) -> set[str]:
        """Those of `keys` the request may see listed: its user's, no one's, or all for an admin key."""
        wanted = list(keys)
        if not self.on or is_admin(request):
            return set(wanted)
        assert self.user_of is not None and self.store is not None
        user = self.user_of(request)
        owners = await (await self.store()).owners(wanted)
        return {k for k in wanted if owners.get(k) in (None, user)}


def is_admin(request: Request) -> bool:
    key = getattr(request.state, "key", None)
    return key is not None and ADMIN in key.permissions


__all__ = ["ADMIN", "Refusal", "SessionOwners", "chain_key", "flow_key", "is_admin", "run_key", "session_of"]
