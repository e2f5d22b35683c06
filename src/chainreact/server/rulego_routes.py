"""RuleGo's rule-chain routes: the chains as RuleGo's server (rulego-server internal/controller/rule.go)
lists, reads, saves, deploys and undeploys them, in the shapes its web UI reads.

    GET    /api/v1/rules                        {"total", "page", "size", "items": [chain DSL]}, newest first;
                                                ?keywords= (in id or name) &root= &disabled= &page=1 &size=20
    GET    /api/v1/rules/{id}                   the chain's DSL (`ruleChain.configuration.secrets` never)
    GET    /api/v1/rules/{id}/latest            the DSL of the chain saved last ({id} is ignored, as RuleGo)
    POST   /api/v1/rules/{id}                   save a DSL under id: loaded (deployed unless `disabled`), then
                                                written where the chain came from (server/rulego_state.py)
    POST   /api/v1/rules/{id}/base              RuleChainBaseInfo {name, root, debugMode, additionalInfo,
                                                configuration}: update it (configuration merged), or create
                                                a chain without nodes
    POST   /api/v1/rules/{id}/config/{varType}  body = a JSON value: ruleChain.configuration[varType]
    POST   /api/v1/rules/{id}/operate/{type}    start (deploy) | stop (undeploy: the chain refuses messages,
                                                `disabled: true` saved) | set-to-main (recorded)
    DELETE /api/v1/rules/{id}                   unload, delete its document and its run logs

Success is 200 with an empty body, as RuleGo answers; failures are JSON errors ({"error": {"message",
"code"}}; a DSL that does not load: every problem with its JSON path). Every route takes an API key, or a
logged-in user's token when that user has permissions (server/users.py). The message routes (execute,
notify, chat) are server/rulego_exec.py, the shared helpers server/rulego_http.py.
"""

from __future__ import annotations

import copy
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from .context import ServerContext
from .openai_api import error
from .rulego_http import dsl_view, json_body, not_found, ok, page_of, paged, query_bool
from .rulego_state import LATEST, MAIN, STORE_SOURCE, prepared

JsonHandler = Callable[[Request, str, Any], Awaitable[Response]]


def routes(ctx: ServerContext) -> list[Route]:
    catalog = ctx.catalog
    state = ctx.rulego
    ctx.on_startup.append(state.load_saved)  # after the runs API's hook: the store is open (app.py order)
    guard = ctx.guard

    def chain_of(ident: str) -> Any:
        engine = catalog.engine
        return engine.get(ident) if engine is not None else None

    async def store_doc(ident: str, doc: dict[str, Any], previous: dict[str, Any] | None) -> Response:
        """Load `doc` under `ident` (a DSL that does not load changes nothing), then write it where the
        chain came from; when the write fails the previous version is loaded again."""
        from ..chains import ChainLoadError

        existing = catalog.entries.get(ident)
        if existing is not None and existing.kind != "chain":
            return error(409, f"id {ident!r} is the {existing.kind} of {existing.source}, not a chain")
        doc = prepared(doc, ident, previous)
        engine = catalog.chain_engine(catalog.globals)
        try:
            engine.load(doc, chain_id=ident)
        except ChainLoadError as e:
            paths = [{"path": p, "message": m} for p, m in (e.errors or [])]
            return JSONResponse({"error": {"message": str(e), "type": "invalid_request_error",
                                           "code": "invalid_chain", "errors": paths}}, status_code=400)
        try:
            where = await state.save(ident, doc)
        except Exception as e:
            if previous is not None:
                engine.load(previous, chain_id=ident)
            else:
                engine.remove(ident)
            return error(500, f"chain {ident!r} was not saved ({e}); nothing changed", "server_error",
                         "not_saved")
        if where == STORE_SOURCE or existing is None:
            catalog.add_chain(ident, where)
        await state.set_setting(LATEST, ident)
        return ok()

    @guard("read", users=True)
    async def list_rules(request: Request) -> Response:
        engine = catalog.engine
        keywords = request.query_params.get("keywords", "").strip()
        root, disabled = query_bool(request, "root"), query_bool(request, "disabled")
        key = getattr(request.state, "key", None)
        items = []
        for chain in (engine.chains.values() if engine is not None else ()):
            rc = chain.definition.ruleChain
            if key is not None and not key.allows("read", chain.id):
                continue
            if (root is not None and rc.root != root) or (disabled is not None and rc.disabled != disabled):
                continue
            if keywords and keywords not in chain.id and keywords not in (rc.name or ""):
                continue
            items.append(dsl_view(chain))
        # newest first, as RuleGo's index (its updateTime text), then by id
        items.sort(key=lambda d: d["ruleChain"]["id"])
        items.sort(key=lambda d: str(d["ruleChain"]["additionalInfo"].get("updateTime", "")), reverse=True)
        page, size = page_of(request)
        return JSONResponse({"total": len(items), "page": page, "size": size,
                             "items": paged(items, page, size)})

    @guard("read", "id", users=True)
    async def get_rule(request: Request) -> Response:
        chain = chain_of(request.path_params["id"])
        return JSONResponse(dsl_view(chain)) if chain is not None else not_found(request.path_params["id"])

    @guard("read", users=True)
    async def latest(request: Request) -> Response:
        ident = (await state.settings()).get(LATEST)
        chain = chain_of(ident) if isinstance(ident, str) else None
        if chain is None:
            return JSONResponse({"error": {"message": "no chain was saved yet", "code": "not_found"}},
                                status_code=404)
        return JSONResponse(dsl_view(chain))

    def with_json(fn: JsonHandler) -> Callable[[Request], Awaitable[Response]]:
        """A write route given the request, the path's id and the JSON body (malformed JSON: 400)."""
        @guard("write", "id", users=True)
        async def handler(request: Request) -> Response:
            value = json_body(request)
            return value if isinstance(value, Response) else \
                await fn(request, request.path_params["id"], value)

        handler.__name__ = fn.__name__
        return handler

    @with_json
    async def save_rule(request: Request, ident: str, doc: Any) -> Response:
        if not isinstance(doc, dict) or not isinstance(doc.get("ruleChain"), dict):
            return error(400, "the chain DSL must be a JSON object with a ruleChain object and metadata")
        return await store_doc(ident, doc, await state.document(ident) if chain_of(ident) else None)

    @with_json
    async def save_base(request: Request, ident: str, base: Any) -> Response:
        problem = _base_problem(base)
        if problem:
            return error(400, f"the base info (RuleChainBaseInfo) {problem}")
        previous = await state.document(ident) if chain_of(ident) else None
        if previous is None:
            doc = {"ruleChain": {**base, "id": ident},
                   "metadata": {"firstNodeIndex": 0, "nodes": [], "connections": []}}
        else:
            doc = copy.deepcopy(previous)
            rc = doc["ruleChain"]
            rc.update(name=base.get("name", ""), root=bool(base.get("root")),
                      debugMode=bool(base.get("debugMode")), additionalInfo=base.get("additionalInfo") or {})
            if base.get("configuration"):  # merged into the configuration, as RuleGo decodes it over
                rc["configuration"] = {**(rc.get("configuration") or {}), **base["configuration"]}
        return await store_doc(ident, doc, previous)

    @with_json
    async def save_config(request: Request, ident: str, value: Any) -> Response:
        previous = await state.document(ident) if chain_of(ident) else None
        if previous is None:
            return not_found(ident)
        doc = copy.deepcopy(previous)
        conf = doc["ruleChain"].get("configuration")
        doc["ruleChain"]["configuration"] = {**(conf if isinstance(conf, dict) else {}),
                                             request.path_params["varType"]: value}
        return await store_doc(ident, doc, previous)

    @guard("write", "id", users=True)
    async def operate(request: Request) -> Response:
        ident, op = request.path_params["id"], request.path_params["type"]
        if op not in ("start", "stop", "set-to-main"):
            return error(400, f"no operation {op!r}: start (deploy), stop (undeploy) or set-to-main")
        chain = chain_of(ident)
        if chain is None:
            return not_found(ident)
        if op == "set-to-main":
            if chain.disabled:
                return error(400, f"chain {ident!r} is stopped: deploy it first (operate/start)")
            await state.set_setting(MAIN, ident)
            return ok()
        previous = await state.document(ident)
        assert previous is not None  # the chain is loaded
        doc = copy.deepcopy(previous)
        doc["ruleChain"]["disabled"] = op == "stop"
        return await store_doc(ident, doc, previous)

    @guard("write", "id", users=True)
    async def delete_rule(request: Request) -> Response:
        from .rulego_runlog import run_logs

        ident = request.path_params["id"]
        if chain_of(ident) is None:
            return not_found(ident)
        try:
            await state.forget(ident)
        except OSError as e:
            return error(500, f"chain {ident!r}: its file cannot be deleted ({e}); nothing changed",
                         "server_error", "not_deleted")
        catalog.remove(ident)
        for run_id in await run_logs(state.store, ident):
            await state.store.delete_run(run_id)
        return ok()

    return [
        Route("/api/v1/rules", list_rules, methods=["GET"]),
        Route("/api/v1/rules/{id}", get_rule, methods=["GET"]),
        Route("/api/v1/rules/{id}", save_rule, methods=["POST", "PUT"]),
        Route("/api/v1/rules/{id}", delete_rule, methods=["DELETE"]),
        Route("/api/v1/rules/{id}/latest", latest, methods=["GET"]),
        Route("/api/v1/rules/{id}/base", save_base, methods=["POST"]),
        Route("/api/v1/rules/{id}/config/{varType}", save_config, methods=["POST"]),
        Route("/api/v1/rules/{id}/operate/{type}", operate, methods=["POST"]),
    ]


def _base_problem(base: Any) -> str | None:
    """Why a RuleChainBaseInfo body would not decode into RuleGo's Go struct, or None."""
    if not isinstance(base, dict):
        return "must be a JSON object"
    for name, kind in (("id", str), ("name", str), ("root", bool), ("debugMode", bool), ("disabled", bool),
                       ("additionalInfo", dict), ("configuration", dict)):
        if base.get(name) is not None and not isinstance(base[name], kind):
            return f"field {name!r} must be a {'string' if kind is str else kind.__name__}"
    return None
