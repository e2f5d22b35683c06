"""The Starlette application: route modules composed over one `ServerContext`, plus health checks.

Route modules (each `routes(ctx) -> list[Route]`, each documenting its paths):
    openai_routes   GET /v1/models, GET /v1/models/{id}, POST /v1/chat/completions
    responses_routes  POST /v1/responses (OpenAI's Responses API)
    rulego_routes   /api/v1/rules/... (RuleGo's server: the chains; after runs_routes, whose store it uses)
    rulego_exec     /api/v1/rules/{id}/execute|notify/..., .../v1/chat/completions (RuleGo's messages)
    rulego_logs     /api/v1/logs/runs, /api/v1/logs/debug, the debug websocket /api/v1/logs/ws/...
    rulego_components  /api/v1/components, shared-nodes, marketplace, dynamic-components, locales
    rulego_mcp      /api/v1/mcp/{apiKey}/sse and .../message (MCP's SSE transport at RuleGo's path)
    flows_routes    /api/v1/flows/...
    login           POST /api/v1/login
    mcp_routes      /mcp (MCP streamable HTTP)
    ops             GET /metrics (with the middleware below)
    playground_routes   / (the web playground), /playground/...
    runs_routes     /api/v1/agents/{id}/runs, /api/v1/runs/... (and the run registry the chat routes use)
    agui_routes     POST /agui/{id} (the AG-UI protocol)
    a2a_routes      /a2a/{id} and its agent card (the A2A protocol)
    (here)          GET /healthz, /readyz
Around them, ops.setup(ctx) composes the middleware (metrics, access log, CORS) and the rate limits and
folder watcher that the configuration asks for (server/ops.py lists them).

The configuration is one typed object, `ServerConfig` (server/config.py): every option of `chainreact
serve`, given whole or as keywords; route modules read it as `ctx.config`.

To add a wing of routes: a new module with `routes(ctx)`, and its line in ROUTE_MODULES.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from . import (
    a2a_routes,
    agui_routes,
    flows_routes,
    login,
    mcp_routes,
    openai_routes,
    ops,
    playground_routes,
    responses_routes,
    rulego_components,
    rulego_exec,
    rulego_logs,
    rulego_mcp,
    rulego_routes,
    runs_routes,
)
from .catalog import Catalog
from .config import DEFAULT_BODY_LIMIT, ServerConfig, ServerOptionError
from .context import ServerContext, read_body
from .readiness import cannot_run

log = logging.getLogger("chainreact.server")

# One entry per line: each wing adds its own line.
ROUTE_MODULES = (
    openai_routes,
    responses_routes,
    flows_routes,
    login,
    mcp_routes,
    ops,
    playground_routes,
    runs_routes,
    agui_routes,
    a2a_routes,
    rulego_routes,  # after runs_routes: its startup hook reads the store the runs API opens
    rulego_exec,
    rulego_logs,
    rulego_components,
    rulego_mcp,
)

__all__ = ["DEFAULT_BODY_LIMIT", "ROUTE_MODULES", "ServerConfig", "ServerOptionError", "create_app",
           "read_body"]


def create_app(catalog: Catalog, config: ServerConfig | None = None, /, **options: Any) -> Starlette:
    """The app serving `catalog`, configured by `config` (default: every default) with `options` set on
    it: keywords named as ServerConfig's fields (`keys=`, `state=`, `rate_limit=`...). An unknown keyword
    raises ServerOptionError naming it (and the option it was probably meant to be)."""
    ctx = ServerContext(catalog=catalog, config=ServerConfig.of(config, options))
    middleware = ops.setup(ctx)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> Response:
        # Ready while it serves; `problems`: files that did not load; `cannot_run`: documents that loaded
        # but cannot run (readiness.py), each with its id and why.
        kinds = [e.kind for e in catalog.entries.values()]
        return JSONResponse({"status": "ready", "agents": kinds.count("agent"),
                             "chains": kinds.count("chain"), "flows": kinds.count("flow"),
                             "problems": catalog.problems,
                             "cannot_run": cannot_run(catalog, in_process=ctx.config.temporal is None)})

    routes: list[BaseRoute] = [Route("/healthz", healthz), Route("/readyz", readyz)]
    for module in ROUTE_MODULES:
        routes.extend(module.routes(ctx))

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        for start in ctx.on_startup:
            await start()
        stack = contextlib.AsyncExitStack()
        for enter in ctx.lifespans:
            await stack.enter_async_context(enter())
        yield
        for hook in ctx.on_shutdown:
            try:
                await hook()
            except Exception:  # one failing hook must not keep the others (and the catalog) open
                log.exception("shutdown hook failed")
        try:
            await stack.aclose()
        except Exception:
            log.exception("closing a lifespan context failed")
        for t in list(ctx.tasks):
            t.cancel()
        await catalog.aclose()

    app = Starlette(routes=routes, lifespan=lifespan, middleware=middleware,
                    exception_handlers={HTTPException: _http_error})  # type: ignore[dict-item]
    app.state.ctx = ctx
    return app


async def _http_error(request: Request, exc: HTTPException) -> Response:
    # Unknown paths and methods answer in the same JSON shape as everything else.
    return JSONResponse({"error": {"message": f"{exc.detail}: {request.method} {request.url.path}",
                                   "code": "not_found" if exc.status_code == 404 else "bad_request"}},
                        status_code=exc.status_code)
