"""Operations around the routes: metrics, access log, rate limits, CORS, the body timeout, folder watching.

`setup(ctx)` reads these options of `ctx.config` (server/config.py), sets `ctx.metrics`,
`ctx.rate_limiter` and `ctx.watcher`, and returns the ASGI middleware list; `create_app` calls it before
building the routes. `routes(ctx)` is GET /metrics when the app has metrics.

    metrics=True            GET /metrics and the counters behind it (server/metrics.py)
    access_log=False        one JSON line per request on the `chainreact.server.access` logger
    rate_limit=None         default per-key rate, e.g. "60/minute" (keys may set their own `rateLimit`)
    clock=time.monotonic    the rate limiter's clock (tests pass a fake one)
    cors_origins=()         origins allowed by CORS ("*" for any); none: no CORS headers at all
    body_timeout=60.0       seconds to receive a request body, else 408 (read by ServerContext.guard)
    watch=()                files/folders to watch and reload (server/watch.py)
    watch_debounce_ms=300   how long changes are gathered before a reload
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from .context import ServerContext, is_openai_path, rate_limited
from .ops_http import RequestCallback, RequestObserver
from .ratelimit import RateLimiter

if TYPE_CHECKING:
    from .metrics import ServerMetrics


def setup(ctx: ServerContext) -> list[Middleware]:
    x = ctx.config
    callbacks: list[RequestCallback] = []
    if x.metrics:
        from .metrics import ServerMetrics

        m = ctx.metrics = ServerMetrics(ctx.catalog)
        ctx.catalog.observers.append(m)
        callbacks.append(m.on_request)
    if x.access_log:
        from . import accesslog

        callbacks.append(accesslog.on_request)
    if x.rate_limit is not None or (ctx.keys and any(k.rate_limit for k in ctx.keys.keys)):
        from .ratelimit import parse_rate

        rate = parse_rate(x.rate_limit, "--rate-limit") if isinstance(x.rate_limit, str) else x.rate_limit
        limiter = ctx.rate_limiter = RateLimiter(rate, clock=x.clock or time.monotonic)
        ctx.checks.append(_rate_check(limiter))
    if x.watch:
        from .watch import CatalogWatcher

        watcher = ctx.watcher = CatalogWatcher(ctx.catalog, x.watch, debounce_ms=x.watch_debounce_ms,
                                               on_reload=_count_reloads(ctx.metrics))
        ctx.on_startup.append(lambda: watcher.start(ctx.spawn))
        ctx.on_shutdown.append(watcher.stop)
    middleware: list[Middleware] = []
    if callbacks:
        middleware.append(Middleware(RequestObserver, callbacks=callbacks))
    origins = list(x.cors_origins or ())
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
        return rate_limited(*refused, is_openai_path(request.url.path))

    return check


def _count_reloads(metrics: ServerMetrics | None) -> Callable[[str], None] | None:
    if metrics is None:
        return None
    return lambda outcome: metrics.reloads.labels(outcome).inc()


def routes(ctx: ServerContext) -> list[Route]:
    """GET /metrics, when the app has metrics (`ctx.metrics`, made by `setup`)."""
    if ctx.metrics is None:
        return []
    from .metrics import exposition

    registry = ctx.metrics.registry

    @ctx.guard("read")
    async def metrics(request: Request) -> Response:
        return exposition(registry)

    return [Route("/metrics", metrics)]
