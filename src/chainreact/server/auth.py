"""API keys: a keys file of key hashes, the ids each key may use, and its permissions.

    keys:
      - name: ci                       # shown in logs, never the key
        sha256: 9f86d08...             # hex SHA-256 of the key (`chainreact serve --hash-key KEY` prints it)
        ids: ["*"]                     # agent/chain ids this key may use ("*" = all)
        permissions: [read, execute]   # read | write | execute | admin (admin = all)
        rateLimit: 60/minute           # optional: N/second|minute|hour|day or unlimited (ratelimit.py)

Requests send `Authorization: Bearer <key>`. Keys are compared by hash in constant time; the file holds
no key in clear.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import ConfigError

if TYPE_CHECKING:
    from .ratelimit import Rate

PERMISSIONS = frozenset({"read", "write", "execute", "admin"})


def hash_key(key: str) -> str:
    return hashlib.sha256(key.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class ApiKey:
    name: str
    sha256: str
    ids: frozenset[str]
    permissions: frozenset[str]
    rate_limit: Rate | None = None  # None: the server's default (--rate-limit)

    def allows(self, permission: str, ident: str | None) -> bool:
        if "admin" not in self.permissions and permission not in self.permissions:
            return False
        return ident is None or "*" in self.ids or ident in self.ids


class KeyStore:
    def __init__(self, keys: list[ApiKey]):
        self.keys = keys

    @classmethod
    def load(cls, path: str | Path) -> KeyStore:
        from ..config.loader import read_document

        data, _ = read_document(path)
        src = str(path)
        items = data.get("keys") if isinstance(data, dict) else None
        if not isinstance(items, list) or not items:
            raise ConfigError(f"{src}: $.keys: expected a non-empty list of keys",
                              source=src, errors=[("$.keys", "expected a non-empty list")])
        return cls([_parse_key(k, f"$.keys[{i}]", src) for i, k in enumerate(items)])

    def find(self, token: str) -> ApiKey | None:
        digest = hash_key(token)
        found = None
        for k in self.keys:  # no early exit: the time taken does not depend on which key matched
            if hmac.compare_digest(k.sha256, digest):
                found = k
        return found


def _parse_key(item: Any, where: str, src: str) -> ApiKey:
    def bad(msg: str) -> ConfigError:
        return ConfigError(f"{src}: {where}: {msg}", source=src, errors=[(where, msg)])

    if not isinstance(item, dict):
        raise bad("expected an object with sha256, ids and permissions")
    digest = str(item.get("sha256", "")).lower()
    if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
        raise bad("sha256: expected the 64-character hex SHA-256 of the key "
                  "(chainreact serve --hash-key KEY prints it)")
    perms = item.get("permissions", ["read", "execute"])
    if not isinstance(perms, list) or not set(perms) <= PERMISSIONS:
        raise bad(f"permissions: expected a list of {sorted(PERMISSIONS)}, got {perms!r}")
    ids = item.get("ids", ["*"])
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise bad("ids: expected a list of agent/chain ids (or [\"*\"])")
    rate = None
    if item.get("rateLimit") is not None:
        from .ratelimit import parse_rate

        try:
            rate = parse_rate(item["rateLimit"], "rateLimit")
        except ConfigError as e:
            raise bad(str(e)) from None
    return ApiKey(str(item.get("name", where)), digest, frozenset(ids), frozenset(perms), rate)
