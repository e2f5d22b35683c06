"""Users and passwords for `POST /api/v1/login`, and the signed tokens it issues (server/login.py).

Below the server context on purpose: `ServerConfig.users` holds a `UserStore`, so this module imports
nothing of the server but its errors and the API keys' permissions.

A user may also carry `permissions` and `ids` (the vocabulary of API keys, server/auth.py): with a keys
file, that user's login token then works as such a key on the routes that take user tokens (RuleGo's
routes, whose web UI logs in with a password). Without `permissions` a token grants nothing there.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import os
import secrets
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import ConfigError
from .auth import PERMISSIONS, ApiKey

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


@dataclass(frozen=True, slots=True)
class User:
    name: str
    password: str  # the stored hash
    attributes: dict[str, Any] = field(default_factory=dict)
    permissions: frozenset[str] = frozenset()  # what the user's token may do where user tokens count
    ids: frozenset[str] = frozenset({"*"})

    def public(self) -> dict[str, Any]:
        """What a flow sees as `user`: the attributes, with `id` and `name` set from the user's name."""
        return {"name": self.name, **self.attributes, "id": self.name}

    def as_key(self) -> ApiKey | None:
        """The user's token as an API key (named `user:<name>`), or None: the user has no permissions."""
        if not self.permissions:
            return None
        return ApiKey(f"user:{self.name}", "", self.ids, self.permissions)


def decoy_hash(users: list[User]) -> str:
    """A hash no password matches, with the scheme and cost parameters most of `users` have (else the
    defaults): checked for unknown names, so an unknown name costs the same hash as a wrong password."""
    shapes = Counter(tuple(u.password.split("$")[:-2]) for u in users
                     if u.password.split("$")[0] in ("scrypt", "pbkdf2_sha256"))
    shape = shapes.most_common(1)[0][0] if shapes else ("scrypt", *map(str, _SCRYPT))
    return "$".join((*shape, _b64(secrets.token_bytes(16)), _b64(secrets.token_bytes(32))))


class UserStore:
    def __init__(self, users: list[User]):
        self.users = {u.name: u for u in users}
        self.decoy = decoy_hash(users)

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
        """The user, if `password` is theirs. Blocking (a hash of tens of ms by design): the server calls it
        in a worker thread (login.py)."""
        user = self.users.get(name)
        ok = verify_password(password, user.password if user else self.decoy)
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
    perms = item.get("permissions", [])
    if not isinstance(perms, list) or not set(perms) <= PERMISSIONS:
        raise bad(f"permissions: expected a list of {sorted(PERMISSIONS)}, got {perms!r}")
    ids = item.get("ids", ["*"])
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise bad("ids: expected a list of agent/chain ids (or [\"*\"])")
    return User(name, pw, dict(attrs), frozenset(perms), frozenset(ids))


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


__all__ = ["DEFAULT_TOKEN_TTL", "SECRET_ENV", "TOKEN_HEADER", "User", "UserStore", "decoy_hash",
           "hash_password", "make_token", "read_token", "server_secret", "verify_password"]
