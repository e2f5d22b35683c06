"""What RuleGo's route modules share: its answers, its query parameters, a chain's DSL as its UI reads it."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from .openai_api import error

PAGE_SIZE = 20


def not_found(ident: str) -> Response:
    return JSONResponse({"error": {"message": f"no rule chain with id {ident!r}", "code": "not_found"}},
                        status_code=404)


def ok() -> Response:
    """RuleGo's answer to a change that worked: 200, an empty body."""
    return Response(status_code=200, media_type="application/json")


def dsl_view(chain: Any) -> dict[str, Any]:
    """A loaded chain's DSL as RuleGo's UI reads it: secrets left out; `additionalInfo` always an object,
    `configuration.vars` whenever there is a configuration, `metadata.nodes`/`connections` always lists,
    every node's `configuration` an object (the UI reads them without checking)."""
    dsl = chain.definition.model_dump(mode="json", exclude_none=True)
    info = dsl["ruleChain"]
    info["id"] = chain.id
    conf = info.get("configuration")
    if isinstance(conf, dict):
        conf.pop("secrets", None)
        conf.setdefault("vars", {})
    info.setdefault("additionalInfo", {})
    meta = dsl.setdefault("metadata", {})
    meta.setdefault("connections", [])
    for node in meta.setdefault("nodes", []):
        node.setdefault("configuration", {})  # Go marshals a node's nil configuration too
    return dsl


def query_bool(request: Request, name: str) -> bool | None:
    """Go's strconv.ParseBool of a query parameter, None when absent or not a boolean."""
    v = request.query_params.get(name, "").strip()
    if v in ("1", "t", "T", "true", "TRUE", "True"):
        return True
    if v in ("0", "f", "F", "false", "FALSE", "False"):
        return False
    return None


def query_int(request: Request, name: str, default: int) -> int:
    try:
        return int(request.query_params.get(name, ""))
    except ValueError:
        return default


def page_of(request: Request) -> tuple[int, int]:
    """RuleGo's paging parameters: page (1), size (20); page 0 means every item."""
    page, size = query_int(request, "page", 1), query_int(request, "size", PAGE_SIZE)
    return max(page, 0), size if size > 0 else PAGE_SIZE


def paged(items: list[Any], page: int, size: int) -> list[Any]:
    return items if page == 0 else items[(page - 1) * size:page * size]


def json_body(request: Request) -> Any:
    try:
        return orjson.loads(request.state.body or b"null")
    except orjson.JSONDecodeError as e:
        return error(400, f"the body is not valid JSON: {e}")


__all__ = ["PAGE_SIZE", "dsl_view", "json_body", "not_found", "ok", "page_of", "paged", "query_bool",
           "query_int"]
