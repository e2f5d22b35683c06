"""Users, passwords and signed login tokens for flows with `loginRequired`.

    POST /api/v1/login   {"user": name, "password": ...} -> {"token", "tokenType", "expiresAt", "user"}

Users come from a `users:` section of the keys file (or of a separate `--users` file):

    users:
      - name: ann
        password: scrypt$16384$8$1$<salt b64>$<hash b64>   # chainreact serve --hash-password PASSWORD
        attributes: {tier: gold}                            # handed to the flow as `user.tier`

Passwords are stored only as scrypt (or `pbkdf2_sha256$iterations$salt$hash`) hashes from the standard
library. A token is `<payload b64url>.<HMAC-SHA256 b64url>`, the payload being JSON
`{"sub": name, "iat": t, "exp": t}`; the secret is `--secret` / `$CHAINREACT_SECRET`, else random per
process (tokens then die with the process). The user's attributes are read from the users file when the
token is used, so a user removed from the file loses access at the next restart.

A request sends its token as `X-User-Token: <token>`; when the server has no API keys,
`Authorization: Bearer <token>` works too (with API keys, Authorization carries the key).

Guessing is bounded: attempts are limited per client address (before the body is read) and per user name
(before the password is checked), `login_rate_limit` (10/minute by default, whatever `--rate-limit` says;
429 with Retry-After). Passwords are checked in worker threads, a few at a time, and an unknown name is
checked against a decoy hash with the users' own cost parameters (users.decoy_hash): it takes as long as
a wrong password.

Read here: `ctx.config.users` (a UserStore, users.py), `ctx.config.secret`, `ctx.config.token_ttl`,
`ctx.config.login_rate_limit`; the secret in use is kept at `ctx.login_secret`.
"""

from __future__ import annotations

import asyncio
import functools
import math
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .context import BodyTooLarge, ServerContext, rate_limited, read_body
from .owners import SessionOwners
from .ratelimit import RateLimiter, parse_rate
from .users import (
    DEFAULT_TOKEN_TTL,
    SECRET_ENV,
    TOKEN_HEADER,
    User,
    UserStore,
    hash_password,
    make_token,
    read_token,
    server_secret,
    verify_password,
)

if TYPE_CHECKING:
    from ..flows import Flow
    from .flows_runtime import DurableServedFlow

MAX_LOGIN_BODY = 64 * 1024
MAX_CHECKS = 4  # password checks at once


def _secret(ctx: ServerContext) -> bytes:
    if ctx.login_secret is None:
        # Created once per app, so every token of this process is checked with the same secret.
        given = ctx.config.secret
        ctx.login_secret = given if isinstance(given, bytes) else server_secret(given)
    return ctx.login_secret


def request_token(ctx: ServerContext, request: Request) -> str | None:
    token = request.headers.get(TOKEN_HEADER, "").strip()
    if token:
        return token
    if ctx.keys is None:
        auth = request.headers.get("authorization", "")
        if auth[:7].lower() == "bearer ":
            return auth[7:].strip() or None
    return None


def request_user(ctx: ServerContext, request: Request) -> dict[str, Any] | None:
    """The logged-in user of a request (its `public()` form), or None."""
    name = user_name(ctx, request)
    return ctx.config.users.users[name].public() if name is not None and ctx.config.users else None


def user_name(ctx: ServerContext, request: Request) -> str | None:
    """The name of the request's logged-in user (a valid token of a user in the users file), or None."""
    users, token = ctx.config.users, request_token(ctx, request)
    if users is None or token is None:
        return None
    name = read_token(_secret(ctx), token)
    return name if name is not None and name in users.users else None


def flow_user(ctx: ServerContext, request: Request, flow: Flow | DurableServedFlow,
              given: Any) -> dict[str, Any]:
    """The user object for a flow's turn: the logged-in user (token) wins; without one, the body's `user`
    object is passed along, except that for a flow with a `loginRequired` node its `id` is dropped (a
    client cannot log itself in by naming an id)."""
    user = dict(given) if isinstance(given, Mapping) else {}
    authed = request_user(ctx, request)
    if authed is not None:
        return {**user, **authed}
    if needs_login(flow):
        user.pop("id", None)
    return user


def needs_login(flow: Flow | DurableServedFlow) -> bool:
    return any(getattr(n, "loginRequired", None) for n in flow.definition.nodes)


def _fail(status: int, message: str, code: str) -> Response:
    return JSONResponse({"error": {"message": message, "code": code}}, status_code=status)


def _limiter(ctx: ServerContext) -> Callable[[str], Response | None]:
    """The login attempts' own buckets (config.login_rate_limit, on by default, whatever --rate-limit
    says): `limit("addr:<address>")` / `limit("user:<name>")` is None, or the 429 to answer."""
    given = ctx.config.login_rate_limit
    rate = parse_rate(given, "login_rate_limit") if isinstance(given, str) else given
    if rate is None or rate.count == 0:
        return lambda who: None
    buckets = RateLimiter(rate, clock=ctx.config.clock or time.monotonic)

    def limit(who: str) -> Response | None:
        wait = buckets.take(who, rate)
        return None if wait == 0.0 else rate_limited(rate, max(1, math.ceil(wait)), False)

    return limit


def routes(ctx: ServerContext) -> list[Route]:
    limit = _limiter(ctx)
    # Password checks run in worker threads (a scrypt hash holds its thread tens of ms by design), a few at
    # a time: a flood of logins neither holds the event loop nor takes every thread and 16 MiB per check.
    checking = asyncio.Semaphore(MAX_CHECKS)

    async def login(request: Request) -> Response:
        # No API key needed: the password is the credential (a chat UI's users have no API key).
        users = ctx.config.users
        if users is None:
            return _fail(404, "login is not configured: give the server a users: section in --keys or "
                              "--users (docs/server.md#login)", "login_not_configured")
        if (refused := limit(f"addr:{request.client.host if request.client else '?'}")) is not None:
            return refused
        try:
            raw = await read_body(request, MAX_LOGIN_BODY, ctx.body_timeout)
        except BodyTooLarge:
            return _fail(413, f"the login body is larger than the limit of {MAX_LOGIN_BODY} bytes",
                         "body_too_large")
        except TimeoutError:
            return _fail(408, f"the request body did not arrive within {ctx.body_timeout:g} s",
                         "request_timeout")
        except ClientDisconnect:
            return Response(status_code=499)
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return _fail(400, 'expected a JSON body {"user": name, "password": password}', "bad_request")
        name = body.get("user", body.get("username")) if isinstance(body, dict) else None
        password = body.get("password") if isinstance(body, dict) else None
        if not isinstance(name, str) or not isinstance(password, str):
            return _fail(400, "'user' and 'password' must be strings", "bad_request")
        if (refused := limit(f"user:{name}")) is not None:
            return refused
        async with checking:
            user = await asyncio.to_thread(users.check, name, password)
        if user is None:
            return _fail(401, "wrong user name or password", "invalid_credentials")
        ttl = ctx.config.token_ttl or DEFAULT_TOKEN_TTL
        token, exp = make_token(_secret(ctx), user.name, float(ttl))
        return JSONResponse({"token": token, "tokenType": "Bearer", "expiresAt": exp,
                             "expiresIn": int(ttl), "user": user.public()})

    if ctx.config.users is not None:
        _secret(ctx)  # warn at start, not at the first login, when the secret is random
        # With logins, a session belongs to the user who started it (server/owners.py).
        ctx.owners = SessionOwners(functools.partial(user_name, ctx), ctx.flows.store)
    return [Route("/api/v1/login", login, methods=["POST"])]


__all__ = ["DEFAULT_TOKEN_TTL", "SECRET_ENV", "TOKEN_HEADER", "User", "UserStore", "flow_user",
           "hash_password", "make_token", "needs_login", "read_token", "request_user", "routes",
           "server_secret", "user_name", "verify_password"]
