"""RuleGo's component, shared-node, marketplace and locale routes (rulego-server internal/controller
node.go, marketplace.go, locale.go), as far as chainreact has them.

    GET  /api/v1/components              {"endpoints": [], "nodes": [ComponentForm], "tools": null,
                                         "builtins": {"endpoints": {"inProcessors", "outProcessors"},
                                         "nodePool": {}, "functions": {"functionName": [...]}}}: every
                                         component chainreact has, its form from its pydantic configuration
                                         model (server/rulego_forms.py)
    GET  /api/v1/shared-nodes            {} (RuleGo's node pool by type: chainreact has none)
    GET  /api/v1/marketplace/components  {"total": 0, "page", "size", "items": []}
    GET  /api/v1/marketplace/chains      the same
    GET  /api/v1/dynamic-components      the same (chainreact has no dynamic components)
    GET  /api/v1/dynamic-components/{id} 404
    GET  /api/v1/locales?lang=           the language pack saved under `lang` (default zh_cn), else {}
    POST /api/v1/locales?lang=           save one (a JSON object), in the state store

chainreact has no endpoint components (a chain's `metadata.endpoints` are kept but not run), no shared
node pool, no marketplace and no dynamic (DSL-defined) components: those lists are empty.
"""

from __future__ import annotations

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .context import ServerContext
from .openai_api import error
from .rulego_forms import component_forms
from .rulego_http import json_body, ok, page_of

DEFAULT_LANG = "zh_cn"  # RuleGo's default


def routes(ctx: ServerContext) -> list[Route]:
    state = ctx.rulego

    @ctx.guard("read", users=True)
    async def components(request: Request) -> Response:
        from ..chains.catalog import builtin_components

        engine = ctx.catalog.engine
        functions = sorted(engine.functions) if engine is not None else []
        builtins = {"endpoints": {"inProcessors": [], "outProcessors": []}, "nodePool": {},
                    "functions": {"functionName": functions}}
        return JSONResponse({"endpoints": [], "nodes": component_forms(builtin_components()), "tools": None,
                             "builtins": builtins})

    @ctx.guard("read", users=True)
    async def shared_nodes(request: Request) -> Response:
        return JSONResponse({})

    @ctx.guard("read", users=True)
    async def empty_list(request: Request) -> Response:
        page, size = page_of(request)
        return JSONResponse({"total": 0, "page": page, "size": size, "items": []})

    @ctx.guard("read", "id", users=True)
    async def dynamic_component(request: Request) -> Response:
        what = f"no dynamic component {request.path_params['id']!r}: chainreact has no dynamic components"
        return JSONResponse({"error": {"message": what, "code": "not_found"}}, status_code=404)

    def lang_of(request: Request) -> str | Response:
        lang = request.query_params.get("lang") or DEFAULT_LANG
        if len(lang) > 64 or not all(c.isalnum() or c in "_-" for c in lang):
            return error(400, f"lang {lang[:64]!r}: expected a language code such as zh_cn or en")
        return lang

    @ctx.guard("read", users=True)
    async def get_locale(request: Request) -> Response:
        lang = lang_of(request)
        return lang if isinstance(lang, Response) else JSONResponse(await state.locale(lang))

    @ctx.guard("write", users=True)
    async def save_locale(request: Request) -> Response:
        lang = lang_of(request)
        if isinstance(lang, Response):
            return lang
        value = json_body(request)
        if isinstance(value, Response):
            return value
        if not isinstance(value, dict):
            return error(400, "a language pack is a JSON object")
        await state.save_locale(lang, value)
        return ok()

    return [
        Route("/api/v1/components", components, methods=["GET"]),
        Route("/api/v1/shared-nodes", shared_nodes, methods=["GET"]),
        Route("/api/v1/marketplace/components", empty_list, methods=["GET"]),
        Route("/api/v1/marketplace/chains", empty_list, methods=["GET"]),
        Route("/api/v1/dynamic-components", empty_list, methods=["GET"]),
        Route("/api/v1/dynamic-components/{id}", dynamic_component, methods=["GET"]),
        Route("/api/v1/locales", get_locale, methods=["GET"]),
        Route("/api/v1/locales", save_locale, methods=["POST"]),
    ]


__all__ = ["DEFAULT_LANG", "routes"]
