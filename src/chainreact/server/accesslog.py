"""Structured access log: one JSON line per request on the `chainreact.server.access` logger.

    {"ts": "2026-11-30T23:59:01.123Z", "method": "POST", "path": "/v1/chat/completions",
     "route": "/v1/chat/completions", "status": 200, "duration_ms": 12.3, "key": "ci", "client": "127.0.0.1"}

`key` is the API key's name from the keys file (null without one). Never logged: the key, any header
(Authorization included), the query string, bodies. `chainreact serve` sends the lines to stderr unless
`--no-access-log`; in Python, `create_app(..., access_log=True)` and a handler of your own.
"""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import orjson

from .ops_http import RequestInfo

log = logging.getLogger("chainreact.server.access")


def line(info: RequestInfo) -> str:
    ts = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return orjson.dumps({"ts": ts, "method": info.method, "path": info.path, "route": info.route,
                         "status": info.status, "duration_ms": round(info.seconds * 1000, 3),
                         "key": info.key, "client": info.client}).decode()


def on_request(info: RequestInfo) -> None:
    if log.isEnabledFor(logging.INFO):
        log.info(line(info))


def to_stderr() -> None:
    """The CLI's setup: the JSON lines alone, one per line, on stderr."""
    if not any(getattr(h, "_chainreact_access", False) for h in log.handlers):
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        handler._chainreact_access = True  # type: ignore[attr-defined]
        log.addHandler(handler)
    log.setLevel(logging.INFO)
    log.propagate = False
