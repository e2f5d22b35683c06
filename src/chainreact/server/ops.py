"""Operations around the routes: metrics, access log, rate limits, CORS, the body timeout, folder watching.

`setup(ctx)` reads these `create_app(...)` keywords (they land in `ctx.extras`) and returns the ASGI
middleware list; `create_app` calls it before building the routes.

    metrics=True            GET /metrics and the counters behind it (server/metrics.py)
    access_log=False        one JSON line per request on the `chainreact.server.access` logger
    rate_limit=None         default per-key rate, e.g. "60/minute" (keys may set their own `rateLimit`)
    clock=time.monotonic    the rate limiter's clock (tests pass a fake one)
    cors_origins=()         origins allowed by CORS ("*" for any); none: no CORS headers at all
    body_timeout=60.0       seconds to receive a request body, else 408
    watch=()                files/folders to watch and reload (server/watch.py)
    watch_debounce_ms=300   how long changes are gathered before a reload
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response

from .context import ServerContext, deny, is_openai_path
from .ops_http import RequestCallback, RequestObserver
from .ratelimit import RateLimiter


def setup(ctx: ServerContext) -> list[Middleware]:
    x = ctx.extras
    callbacks: list[RequestCallback] = []
    if x.get("metrics", True):
        from .metrics import ServerMetrics

        m = x["metrics"] = ServerMetrics(ctx.catalog)
        ctx.catalog.observers.append(m)
        callbacks.append(m.on_request)
    else:
        x.pop("metrics", None)
    if x.get("access_log"):
        from . import accesslog

        callbacks.append(accesslog.on_request)
    if "body_timeout" in x:
        ctx.body_timeout = x["body_timeout"]
    if x.get("rate_limit") is not None or (ctx.keys and any(k.rate_limit for k in ctx.keys.keys)):
        from .ratelimit import Rate, parse_rate

        default = x.get("rate_limit")
        rate = parse_rate(default, "--rate-limit") if isinstance(default, str) else default
        assert rate is None or isinstance(rate, Rate)
        limiter = x["rate_limiter"] = RateLimiter(rate, clock=x.get("clock") or time.monotonic)
        ctx.checks.append(_rate_check(limiter))
    if x.get("watch"):
        from .watch import CatalogWatcher

        watcher = x["watcher"] = CatalogWatcher(ctx.catalog, x["watch"],
                                                debounce_ms=x.get("watch_debounce_ms", 300),
                                                on_reload=_count_reloads(x.get("metrics")))
        ctx.on_startup.append(lambda: watcher.start(ctx.spawn))
        ctx.on_shutdown.append(watcher.stop)
    middleware: list[Middleware] = []
    if callbacks:
        middleware.append(Middleware(RequestObserver, callbacks=callbacks))
    origins = list(x.get("cors_origins") or ())
    if origins:
        from starlette.middleware.cors import CORSMiddleware

        # Inside the observer, so preflights are logged and counted like any request.
        middleware.append(Middleware(
            CORSMiddleware, allow_origins=origins, allow_methods=["GET", "POST", "PUT", "DELETE", "OPTIONS"],
            allow_headers=["Authorization", "Content-Type", "Last-Event-ID", "X-Stream-Protocol",
                           "X-Session-Key", "X-User-Id"],
            expose_headers=["Retry-After"], max_age=600))
    return middleware


def _rate_check(limiter: RateLimiter) -> Callable[[Request], Response | None]:
    def check(request: Request) -> Response | None:
        refused = limiter.refuse(request)
        if refused is None:
            return None
        rate, retry = refused
        return deny(429, f"rate limit of {rate.count} requests per {rate.period:g} s reached; "
                         f"retry in {retry} s", "rate_limit_exceeded", is_openai_path(request.url.path),
                    status_type="requests", headers={"Retry-After": str(retry)})

    return check


def _count_reloads(metrics: Any) -> Any:
    if metrics is None:
        return None
    return lambda outcome: metrics.reloads.labels(outcome).inc()
