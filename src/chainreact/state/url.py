"""Which store: the URL from a keyword, the CHAINREACT_STATE variable, a document's `state` key, or the
default SQLite file under ./.chainreact/.

SQLite URLs follow SQLAlchemy's convention: `sqlite:///rel/path.db` is relative to the working
directory, `sqlite:////abs/path.db` absolute, `sqlite:///:memory:` in memory. A bare path with no
scheme is a SQLite file. PostgreSQL: `postgresql://user:pass@host:port/db?schema=name` (`postgres://`
too); `schema` (default `chainreact`) is the PostgreSQL schema the tables live in.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

ENV_VAR = "CHAINREACT_STATE"
DEFAULT_DIR = ".chainreact"
DEFAULT_FILE = "state.db"
DEFAULT_PG_SCHEMA = "chainreact"
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def default_url() -> str:
    return "sqlite:///" + str(Path(DEFAULT_DIR) / DEFAULT_FILE)


def resolve_url(url: str | None = None, *, document: str | None = None) -> str:
    """The store URL to use: the explicit one, else $CHAINREACT_STATE, else the document's, else the default.

    The environment wins over a document so that one deployment can point every document at a shared
    database without editing them.
    """
    for candidate in (url, os.environ.get(ENV_VAR), document):
        if candidate and candidate.strip():
            return candidate.strip()
    return default_url()


def mask_url(url: str) -> str:
    """The URL with its password replaced by `***` (for messages and logs)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    netloc = f"{parts.username or ''}:***@{host}"
    if parts.port is not None:
        netloc += f":{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


@dataclass(frozen=True, slots=True)
class StoreURL:
    backend: str  # "sqlite" | "postgres"
    url: str  # as given
    path: str = ""  # sqlite: the file path (or ":memory:")
    dsn: str = ""  # postgres: the URL passed to the driver (without our own options)
    schema: str = DEFAULT_PG_SCHEMA  # postgres: the schema holding the tables

    @property
    def masked(self) -> str:
        return mask_url(self.url)


def parse_url(url: str) -> StoreURL:
    """Split a store URL into backend and location. Raises ValueError naming the URL when unusable."""
    from .errors import StateError

    scheme, sep, rest = url.partition("://")
    if not sep:
        if url.startswith("sqlite:"):
            return StoreURL("sqlite", url, path=url[len("sqlite:"):] or ":memory:")
        if re.match(r"^[a-z][a-z0-9+]*:", url) and not re.match(r"^[A-Za-z]:[\\/]", url):
            raise StateError(f"state URL {mask_url(url)!r}: expected sqlite:///PATH or postgresql://...")
        return StoreURL("sqlite", url, path=url)
    scheme = scheme.lower()
    if scheme == "sqlite":
        if not rest.startswith("/"):
            raise StateError(f"state URL {url!r}: a SQLite URL is sqlite:///relative/path or "
                             "sqlite:////absolute/path")
        path = rest[1:]
        if not path:
            raise StateError(f"state URL {url!r}: no file path after sqlite:///")
        return StoreURL("sqlite", url, path=path)
    if scheme in ("postgresql", "postgres", "postgresql+asyncpg"):
        parts = urlsplit(url)
        query = parse_qsl(parts.query, keep_blank_values=True)
        schema = DEFAULT_PG_SCHEMA
        kept = []
        for k, v in query:
            if k == "schema":
                schema = v
            else:
                kept.append((k, v))
        if not _IDENT.match(schema):
            raise StateError(f"state URL {mask_url(url)!r}: schema={schema!r} is not a plain SQL identifier "
                             "(letters, digits, underscore)")
        dsn = urlunsplit(("postgresql", parts.netloc, parts.path, urlencode(kept), ""))
        return StoreURL("postgres", url, dsn=dsn, schema=schema)
    raise StateError(f"state URL {mask_url(url)!r}: unknown scheme {scheme!r} "
                     "(use sqlite:///PATH or postgresql://USER@HOST/DB)")
