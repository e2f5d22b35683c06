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

ctx.extras names read here: "users" (a UserStore), "secret" (bytes), "token_ttl" (seconds, default 3600).
"""

from __future__ import annotations

import base64
import functools
import hashlib
import hmac
import logging
import os
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from ..errors import ConfigError
from .context import ServerContext, read_body

log = logging.getLogger("chainreact.server")

SECRET_ENV = "CHAINREACT_SECRET"
DEFAULT_TOKEN_TTL = 3600
TOKEN_HEADER = "x-user-token"
_SCRYPT = (2**14, 8, 1)  # n, r, p: ~16 MiB and a few tens of ms per check


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def hash_password(password: str) -> str:
    """A scrypt hash of `password` for the users file."""
    n, r, p = _SCRYPT
    salt = secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=n, r=r, p=p, dklen=32)
    return f"scrypt${n}${r}${p}${_b64(salt)}${_b64(digest)}"


def verify_password(password: str, stored: str) -> bool:
    parts = stored.split("$")
    try:
        if parts[0] == "scrypt" and len(parts) == 6:
            n, r, p = int(parts[1]), int(parts[2]), int(parts[3])
            want = _unb64(parts[5])
            got = hashlib.scrypt(password.encode(), salt=_unb64(parts[4]), n=n, r=r, p=p, dklen=len(want),
                                 maxmem=256 * 1024 * 1024)
        elif parts[0] == "pbkdf2_sha256" and len(parts) == 4:
            want = _unb64(parts[3])
            got = hashlib.pbkdf2_hmac("sha256", password.encode(), _unb64(parts[2]), int(parts[1]), len(want))
        else:
            return False
    except (ValueError, TypeError):
        return False
    return hmac.compare_digest(got, want)


@functools.cache
def _dummy_hash() -> str:
    # Checked for unknown names, so an unknown name takes as long as a wrong password.
    return hash_password(secrets.token_hex(8))


@dataclass(frozen=True, slots=True)
class User:
    name: str
    password: str  # the stored hash
    attributes: dict[str, Any] = field(default_factory=dict)

    def public(self) -> dict[str, Any]:
        """What a flow sees as `user`: the attributes, with `id` and `name` set from the user's name."""
        return {"name": self.name, **self.attributes, "id": self.name}


class UserStore:
    def __init__(self, users: list[User]):
        self.users = {u.name: u for u in users}

    @classmethod
    def load(cls, path: str | Path, *, required: bool = True) -> UserStore | None:
        """The `users:` section of a keys/users file; None when absent and not `required`."""
        from ..config.loader import read_document

        data, _ = read_document(path)
        src = str(path)
        items = data.get("users") if isinstance(data, dict) else None
        if items is None and not required:
            return None
        if not isinstance(items, list) or not items:
            raise ConfigError(f"{src}: $.users: expected a non-empty list of users (name, password, "
                              "attributes)", source=src, errors=[("$.users", "expected a non-empty list")])
        users = [_parse_user(u, f"$.users[{i}]", src) for i, u in enumerate(items)]
        names = [u.name for u in users]
        dup = next((n for n in names if names.count(n) > 1), None)
        if dup is not None:
            raise ConfigError(f"{src}: $.users: the name {dup!r} is given twice", source=src,
                              errors=[("$.users", f"duplicate name {dup!r}")])
        return cls(users)

    def check(self, name: str, password: str) -> User | None:
        user = self.users.get(name)
        ok = verify_password(password, user.password if user else _dummy_hash())
        return user if ok and user is not None else None


def _parse_user(item: Any, where: str, src: str) -> User:
    def bad(msg: str) -> ConfigError:
        return ConfigError(f"{src}: {where}: {msg}", source=src, errors=[(where, msg)])

    if not isinstance(item, dict):
        raise bad("expected an object with name, password and attributes")
    name, pw, attrs = item.get("name"), item.get("password"), item.get("attributes", {})
    if not isinstance(name, str) or not name:
        raise bad("name: expected a non-empty string")
    if not isinstance(pw, str) or pw.split("$")[0] not in ("scrypt", "pbkdf2_sha256"):
        raise bad("password: expected a password hash (scrypt$... or pbkdf2_sha256$...); "
                  "`chainreact serve --hash-password PASSWORD` prints one")
    if not isinstance(attrs, dict):
        raise bad("attributes: expected an object")
    return User(name, pw, dict(attrs))


def server_secret(given: str | None) -> bytes:
    """The token secret: the given one, else $CHAINREACT_SECRET, else random for this process."""
    value = given or os.environ.get(SECRET_ENV)
    if value:
        return value.encode()
    log.warning("no --secret or $%s: login tokens are signed with a random per-process secret and stop "
                "working when the server restarts", SECRET_ENV)
    return secrets.token_bytes(32)


def make_token(secret: bytes, name: str, ttl: float, now: float | None = None) -> tuple[str, int]:
    iat = int(now if now is not None else time.time())
    exp = iat + int(ttl)
    payload = _b64(orjson.dumps({"sub": name, "iat": iat, "exp": exp}))
    sig = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest())
    return f"{payload}.{sig}", exp


def read_token(secret: bytes, token: str, now: float | None = None) -> str | None:
    """The user name a token was issued to; None if it is malformed, tampered with or expired."""
    payload, sep, sig = token.partition(".")
    if not sep:
        return None
    want = _b64(hmac.new(secret, payload.encode(), hashlib.sha256).digest())
    if not hmac.compare_digest(want, sig):
        return None
    try:
        data = orjson.loads(_unb64(payload))
    except (ValueError, orjson.JSONDecodeError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("sub"), str):
        return None
    exp = data.get("exp")
    if not isinstance(exp, int) or exp <= (now if now is not None else time.time()):
        return None
    return str(data["sub"])


def _secret(ctx: ServerContext) -> bytes:
    secret = ctx.extras.get("secret")
    if not isinstance(secret, bytes):
        # Created once per app, so every token of this process is checked with the same secret.
        secret = ctx.extras["secret"] = server_secret(secret if isinstance(secret, str) else None)
    return secret


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
    users = ctx.extras.get("users")
    token = request_token(ctx, request)
    if token is None or not isinstance(users, UserStore):
        return None
    name = read_token(_secret(ctx), token)
    user = users.users.get(name) if name is not None else None
    return user.public() if user is not None else None


def _fail(status: int, message: str, code: str) -> Response:
    return JSONResponse({"error": {"message": message, "code": code}}, status_code=status)


def routes(ctx: ServerContext) -> list[Route]:
    async def login(request: Request) -> Response:
        # No API key needed: the password is the credential (a chat UI's users have no API key).
        users = ctx.extras.get("users")
        if not isinstance(users, UserStore):
            return _fail(404, "login is not configured: give the server a users: section in --keys or "
                              "--users (docs/server.md#login)", "login_not_configured")
        try:
            body = orjson.loads(await read_body(request, 64 * 1024))
        except Exception:
            return _fail(400, 'expected a JSON body {"user": name, "password": password}', "bad_request")
        name = body.get("user", body.get("username")) if isinstance(body, dict) else None
        password = body.get("password") if isinstance(body, dict) else None
        if not isinstance(name, str) or not isinstance(password, str):
            return _fail(400, "'user' and 'password' must be strings", "bad_request")
        user = users.check(name, password)
        if user is None:
            return _fail(401, "wrong user name or password", "invalid_credentials")
        ttl = ctx.extras.get("token_ttl") or DEFAULT_TOKEN_TTL
        token, exp = make_token(_secret(ctx), user.name, float(ttl))
        return JSONResponse({"token": token, "tokenType": "Bearer", "expiresAt": exp,
                             "expiresIn": int(ttl), "user": user.public()})

    if isinstance(ctx.extras.get("users"), UserStore):
        _secret(ctx)  # warn at start, not at the first login, when the secret is random
    return [Route("/api/v1/login", login, methods=["POST"])]


__all__ = ["DEFAULT_TOKEN_TTL", "SECRET_ENV", "TOKEN_HEADER", "User", "UserStore", "hash_password",
           "make_token", "read_token", "request_user", "routes", "server_secret", "verify_password"]
