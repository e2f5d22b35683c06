"""What every route module shares: the catalog, the configuration, the app's services, background tasks,
startup and shutdown hooks.

A route module exposes `routes(ctx) -> list[Route]`; `create_app` concatenates them. Each handler is
wrapped by `ctx.guard(permission, ident_param)`, which checks the API key (when a keys file is given) and
reads the body under the limit into `request.state.body`. Options are typed fields of `ctx.config`
(server/config.py); what one module makes for others (the run registry, the Temporal dispatcher, metrics,
the flows runtime) is a typed field of the context, set by the module named beside it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response

from .auth import ApiKey, KeyStore
from .catalog import Catalog
from .config import ServerConfig
from .openai_api import error
from .owners import SessionOwners
from .users import read_token

if TYPE_CHECKING:
    from ..state import Store
    from .durable_dispatch import TemporalDispatcher
    from .flows_runtime import FlowRuntime
    from .metrics import ServerMetrics
    from .ratelimit import Rate, RateLimiter
    from .rulego_state import RuleGoState
    from .runs_registry import RunRegistry
    from .users import UserStore
    from .watch import CatalogWatcher

MAX_IDENT = 256
Handler = Callable[[Request], Awaitable[Response]]


class BodyTooLarge(Exception):
    """A request body past its limit (read_body)."""


async def read_body(request: Request, limit: int, timeout: float | None = None) -> bytes:
    """The body, refused past `limit` bytes whether or not the client declared its length, and past
    `timeout` seconds in all (uvicorn has no body read timeout: a client trickling bytes would hold the
    request open for ever): BodyTooLarge, TimeoutError."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise BodyTooLarge

    async def read() -> bytes:
        chunks: list[bytes] = []
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise BodyTooLarge
            chunks.append(chunk)
        return b"".join(chunks)

    if timeout is None:
        return await read()
    async with asyncio.timeout(timeout):
        return await read()


def bad_ident(ident: str) -> str | None:
    """Why an id taken from the path cannot name anything (path tricks, control characters, absurd length),
    or None. Checked before anything looks the id up, so such ids never reach a catalog or a store."""
    if not ident or len(ident) > MAX_IDENT:
        return f"an id must have 1 to {MAX_IDENT} characters"
    if ident in (".", "..") or any(c in ident for c in "/\\") or not ident.isprintable():
        return "an id may not be '.' or '..', nor hold slashes, backslashes or control characters"
    return None


def deny(status: int, message: str, code: str, openai_shape: bool, *, status_type: str | None = None,
         headers: dict[str, str] | None = None) -> Response:
    """A refusal (400/401/403/429) in OpenAI's error shape on OpenAI routes, in the plain
    `{"error": {...}}` shape elsewhere."""
    if openai_shape:
        type_ = status_type or ("invalid_request_error" if status == 401 else "permission_error")
        return error(status, message, type_, code, headers=headers)
    return JSONResponse({"error": {"message": message, "code": code}}, status_code=status, headers=headers)


def rate_limited(rate: Rate, retry: int, openai_shape: bool) -> Response:
    """The 429 of a request over `rate`, with Retry-After (whole seconds until one is allowed)."""
    return deny(429, f"rate limit of {rate.count} requests per {rate.period:g} s reached; retry in {retry} s",
                "rate_limit_exceeded", openai_shape, status_type="requests",
                headers={"Retry-After": str(retry)})


def is_openai_path(path: str) -> bool:
    return path.startswith("/v1/") or path.endswith("/chat/completions")


@dataclass
class ServerContext:
    catalog: Catalog
    config: ServerConfig = field(default_factory=ServerConfig)
    # The app's services, each set by one module while the app is made (None: that part is off).
    runs: RunRegistry | None = None  # runs_routes: the run registry (its store opens at startup)
    dispatch: TemporalDispatcher | None = None  # runs_routes, with `temporal`: runs on Temporal workers
    metrics: ServerMetrics | None = None  # ops.setup, unless `metrics=False`
    rate_limiter: RateLimiter | None = None  # ops.setup, with a rate limit
    watcher: CatalogWatcher | None = None  # ops.setup, with `watch`
    login_secret: bytes | None = None  # login: the secret signing this app's tokens, made on first use
    owners: SessionOwners = field(default_factory=SessionOwners)  # login, with users: sessions' owners
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    # Called, in order, when the app starts (inside the server's event loop: open stores, start
    # background tasks such as the folder watcher).
    on_startup: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # Called, in order, when the app shuts down (before the catalog closes).
    on_shutdown: list[Callable[[], Awaitable[None]]] = field(default_factory=list)
    # Entered, in order, when the app starts and exited in reverse when it stops (after the on_shutdown
    # hooks, before the catalog closes): for what must live as long as the app in the lifespan's task
    # (e.g. the MCP session manager's task group).
    lifespans: list[Callable[[], AbstractAsyncContextManager[Any]]] = field(default_factory=list)
    # Run by `guard` after auth, before the body is read; the first Response returned refuses the request
    # (rate limits: server/ratelimit.py).
    checks: list[Callable[[Request], Response | None]] = field(default_factory=list)
    _flows: FlowRuntime | None = field(default=None, repr=False)
    _rulego: RuleGoState | None = field(default=None, repr=False)

    @property
    def keys(self) -> KeyStore | None:
        return self.config.keys

    @property
    def body_limit(self) -> int:
        return self.config.body_limit

    @property
    def body_timeout(self) -> float | None:
        return self.config.body_timeout

    @property
    def users(self) -> UserStore | None:
        """The users who may log in (server/login.py), or None: login is off."""
        return self.config.users

    @property
    def store(self) -> Store | None:
        """The server's state store, once the app has started (the runs API opens it: the `state` URL,
        else a private in-memory SQLite store); None before, or without the runs API."""
        return self.runs.store if self.runs is not None else None

    @property
    def flows(self) -> FlowRuntime:
        """The served flows bound to the server's store (server/flows_runtime.py), made on first use."""
        if self._flows is None:
            from .flows_runtime import FlowRuntime

            self._flows = FlowRuntime(self)
            self.on_shutdown.append(self._flows.aclose)
        return self._flows

    @property
    def rulego(self) -> RuleGoState:
        """What RuleGo's route modules share (server/rulego_state.py: documents, settings, the debug hub),
        made on first use."""
        if self._rulego is None:
            from .rulego_state import RuleGoState

            self._rulego = RuleGoState(self)
            hub = self._rulego.hub

            async def close_hub() -> None:
                hub.close()

            self.on_shutdown.append(close_hub)
        return self._rulego

    def durable(self, kind: str, ident: str) -> TemporalDispatcher | None:
        """The dispatcher that runs catalog entry `ident` of `kind` on Temporal workers (`serve --temporal`),
        or None: it runs in process."""
        d = self.dispatch
        return d if d is not None and d.serves(kind, ident) else None

    def spawn(self, coro: Coroutine[Any, Any, Any]) -> asyncio.Task[Any]:
        """A background task the app keeps a reference to, and cancels at shutdown if still running."""
        task = asyncio.ensure_future(coro)
        self.tasks.add(task)
        task.add_done_callback(self.tasks.discard)
        return task

    def authenticate(self, token: str, *, users: bool = False) -> ApiKey | None:
        """The API key a bearer token stands for: a key of the keys file, or (with `users`) a logged-in
        user's token, as the key the user's `permissions` make (users.py `User.as_key`); None: neither."""
        keys = self.keys
        key = keys.find(token) if keys is not None and token else None
        if key is None and users and token and self.users is not None and self.login_secret is not None:
            name = read_token(self.login_secret, token)
            user = self.users.users.get(name) if name is not None else None
            key = user.as_key() if user is not None else None
        return key

    def guard(self, permission: str, ident_param: str | None = None, *,
              users: bool = False) -> Callable[[Handler], Handler]:
        """Auth (when a keys file is given) and the body limit, around one route. `users`: a logged-in
        user's token counts as a key too (RuleGo's routes: its web UI logs in with a password)."""
        keys, limit, checks, body_timeout = self.keys, self.body_limit, self.checks, self.body_timeout

        def wrap(fn: Handler) -> Handler:
            async def handler(request: Request) -> Response:
                if ident_param and (why := bad_ident(request.path_params.get(ident_param, ""))):
                    return deny(400, why, "invalid_id", is_openai_path(request.url.path),
                                status_type="invalid_request_error")
                if keys is not None:
                    openai_shape = is_openai_path(request.url.path)
                    auth = request.headers.get("authorization", "")
                    token = auth[7:].strip() if auth[:7].lower() == "bearer " else ""
                    key = self.authenticate(token, users=users)
                    if key is None:
                        what = ("a valid API key, or the login token of a user with permissions (users "
                                "file), is required: Authorization: Bearer <key or token>") if users else \
                            "a valid API key is required: Authorization: Bearer <key>"
                        return deny(401, what, "invalid_api_key", openai_shape)
                    ident = request.path_params.get(ident_param) if ident_param else None
                    if not key.allows(permission, ident):
                        what = f" on {ident!r}" if ident else ""
                        return deny(403, f"this API key lacks the {permission!r} permission{what}",
                                    "permission_denied", openai_shape)
                    request.state.key = key
                for check in checks:
                    if (refused := check(request)) is not None:
                        return refused
                try:
                    request.state.body = await read_body(request, limit, body_timeout) \
                        if request.method in ("POST", "PUT", "PATCH") else b""
                except BodyTooLarge:
                    return error(413, f"the request body is larger than the limit of {limit} bytes",
                                 code="body_too_large")
                except TimeoutError:
                    return error(408, f"the request body did not arrive within {body_timeout:g} s",
                                 code="request_timeout", headers={"Connection": "close"})
                except ClientDisconnect:
                    return Response(status_code=499)
                return await fn(request)

            handler.__name__ = getattr(fn, "__name__", "handler")
            return handler

        return wrap
