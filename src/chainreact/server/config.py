"""The server's configuration: every option of `chainreact serve` as one typed object.

    create_app(catalog, ServerConfig(keys=..., state="sqlite:///runs.db", rate_limit="60/minute"))
    create_app(catalog, keys=..., state=..., rate_limit=...)      # the same, as keywords

An option that is not a field of `ServerConfig` is refused with a `ServerOptionError` naming it and the
field it was probably meant to be (`create_app(catalog, acces_log=True)`: did you mean 'access_log'?).
The app reads its fields as `ctx.config` (server/context.py). The last group (host, port, loop, http,
forwarded_allow_ips, header_limit) is the process's, read by the one uvicorn starter
(server/background.py), not by the app. `chainreact serve`'s other arguments are not server options: the
paths and `--global` values make the catalog, and `--hash-key` / `--hash-password` print a hash and exit.
"""

from __future__ import annotations

import dataclasses
import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from .auth import KeyStore
from .head_limit import DEFAULT_HEADER_LIMIT
from .ratelimit import Rate
from .users import DEFAULT_TOKEN_TTL, UserStore

DEFAULT_BODY_LIMIT = 10 * 1024 * 1024
DEFAULT_BODY_TIMEOUT = 60.0  # seconds to receive a whole request body
DEFAULT_TASK_QUEUE = "chainreact"  # as `chainreact worker`'s default
DEFAULT_LOGIN_RATE = "10/minute"  # login attempts per client address, and per user name


class ServerOptionError(ConfigError, TypeError):
    """An option the server does not have (a misspelt keyword of `create_app`). A TypeError too, as
    Python's own refusal of an unknown keyword argument is."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    # Who may call and how much they may send (server/context.py, ops.py, ratelimit.py).
    keys: KeyStore | None = None  # API keys (`--keys`); None: no auth
    body_limit: int = DEFAULT_BODY_LIMIT  # bytes, else 413
    body_timeout: float | None = DEFAULT_BODY_TIMEOUT  # seconds to receive a body, else 408; None: no limit
    rate_limit: str | Rate | None = None  # default rate per key (or client address), e.g. "60/minute"
    clock: Callable[[], float] | None = None  # the rate limiter's clock (tests pass a fake); None: monotonic
    cors_origins: Sequence[str] = ()  # origins allowed by CORS ("*": any); none: no CORS headers
    # Runs and their store (runs_routes.py, runs_registry.py).
    state: str | None = None  # state store URL; None: a private in-memory SQLite store, no sessions
    grace: float = 30.0  # on shutdown, seconds runs in flight may go on before they are cancelled
    runs_ttl: float | None = None  # in-memory store: a stopped run is forgotten after this long (None: 3600)
    runs_max: int | None = None  # in-memory store: at most this many stopped runs kept (None: 1000)
    # Durable runs on Temporal workers (durable_dispatch.py); needs `state`.
    temporal: str | None = None  # host:port of the Temporal server; None: everything runs in process
    task_queue: str = DEFAULT_TASK_QUEUE
    namespace: str = "default"
    heartbeat_timeout: float | None = None  # seconds; None: the dispatcher's default
    # Login for flows with `loginRequired` (login.py, users.py).
    users: UserStore | None = None  # None: POST /api/v1/login answers 404
    secret: str | bytes | None = None  # signs login tokens; None: $CHAINREACT_SECRET, else random
    token_ttl: int | None = DEFAULT_TOKEN_TTL  # seconds a login token lives
    # Login attempts per client address and per user name ("unlimited" or None: no limit; login.py).
    login_rate_limit: str | Rate | None = DEFAULT_LOGIN_RATE
    # Operations (ops.py, metrics.py, accesslog.py, watch.py).
    metrics: bool = True  # GET /metrics and the counters behind it
    access_log: bool = False  # one JSON line per request on the `chainreact.server.access` logger
    watch: Sequence[str | Path] = ()  # files and folders reloaded when they change
    watch_debounce_ms: int = 300  # how long changes are gathered before a reload
    # The process: read by the uvicorn starter (background.py), not by the app.
    host: str = "127.0.0.1"
    port: int = 9090
    loop: str = "auto"  # auto | asyncio | uvloop
    http: str = "auto"  # auto | h11 | httptools
    forwarded_allow_ips: str | None = None  # trust X-Forwarded-* from these proxies; None: uvicorn's default
    header_limit: int = DEFAULT_HEADER_LIMIT  # bytes of a request line and headers, else 431 (head_limit.py)

    @classmethod
    def of(cls, config: ServerConfig | None = None, options: Mapping[str, Any] | None = None) -> ServerConfig:
        """`config` (default: every default) with `options` set on it; an unknown option name is refused
        before anything is made."""
        base = config if config is not None else cls()
        if not options:
            return base
        check_options(options)
        return dataclasses.replace(base, **options)


OPTION_NAMES = tuple(f.name for f in dataclasses.fields(ServerConfig))


def check_options(options: Mapping[str, Any]) -> None:
    """Raise ServerOptionError for the first name in `options` that is no field of ServerConfig."""
    for name in options:
        if name in OPTION_NAMES:
            continue
        close = difflib.get_close_matches(name, OPTION_NAMES, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else \
            f"; the options are {', '.join(OPTION_NAMES)} (server/config.py)"
        raise ServerOptionError(f"create_app: unknown server option {name!r}{hint}",
                                errors=[(name, hint[2:])])


__all__ = ["DEFAULT_BODY_LIMIT", "DEFAULT_BODY_TIMEOUT", "DEFAULT_LOGIN_RATE", "DEFAULT_TASK_QUEUE",
           "OPTION_NAMES", "ServerConfig", "ServerOptionError", "check_options"]
