"""HTTP tools: the flow spec's ToolForAIDef with an `execution` block, called with httpx.

    {"name": "orderLookup", "type": "http", "description": "...",
     "parameters": {"schema": {...}},            # or a bare JSON Schema
     "output": {"schema": {...}},                # optional: the response must match it
     "execution": {"endpoint": "https://api/orders/{orderId}", "method": "GET",
                   "headers": {...}, "auth": {...}, "timeout": 30}}   # execution.timeout: seconds

`{name}` placeholders in the endpoint are filled (URL-encoded) from the arguments; the other arguments go
to the query string (GET, DELETE, HEAD, OPTIONS) or to a JSON body (POST, PUT, PATCH). Failures (non-2xx,
timeouts, connection errors, output schema mismatches) become error results for the model, never
exceptions; a bad descriptor is a ConfigError at creation.
"""

from __future__ import annotations

import asyncio
import base64
import re
import urllib.parse
from typing import Any

from ..errors import ConfigError
from .base import Tool, ToolContext, ToolOutput
from .descriptors import HttpAuth, HttpExecution, validate_part
from .jsonschema_lite import SchemaError, SchemaValidator

__all__ = ["HttpTool", "create_http_tool"]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")
_QUERY_METHODS = frozenset({"GET", "DELETE", "HEAD", "OPTIONS"})
_BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
DEFAULT_TIMEOUT = 30.0  # seconds
EXCERPT = 500  # characters of a failing response shown to the model
MAX_RESPONSE_BYTES = 10 * 1024 * 1024  # larger bodies are cut, with a marker


def _as_dict(descriptor: Any) -> dict[str, Any]:
    if isinstance(descriptor, dict):
        return dict(descriptor)
    dump = getattr(descriptor, "model_dump", None)
    if callable(dump):
        return dict(dump(exclude_none=True))
    raise ConfigError(f"http tool: expected a tool descriptor (dict or ToolDescriptor), got {descriptor!r}")


def _schema_of(value: Any, where: str) -> dict[str, Any] | None:
    """`{"schema": {...}}` (the flow spec's DataSchemaDef) or a bare JSON Schema; JSON text is accepted."""
    if value is None or value == {} or value == "":
        return None
    if isinstance(value, str):
        import orjson

        try:
            value = orjson.loads(value)
        except orjson.JSONDecodeError as e:
            raise ConfigError(f"{where}: not valid JSON ({e})", errors=[(where, "invalid JSON")]) from None
    if not isinstance(value, dict):
        raise ConfigError(
            f"{where}: expected a JSON Schema object, got {type(value).__name__}",
            errors=[(where, "expected an object")],
        )
    if (
        "schema" in value
        and isinstance(value["schema"], dict)
        and "type" not in value
        and "properties" not in value
    ):
        value = value["schema"]
    return value


def _str_value(v: Any) -> str:
    if v is True:
        return "true"
    if v is False:
        return "false"
    if isinstance(v, dict | list):
        import orjson

        return orjson.dumps(v).decode()
    return str(v)


def auth_headers(auth: HttpAuth | None) -> dict[str, str]:
    """The request headers of an `auth` part (bearer, header, basic); also the a2a tool's."""
    if auth is None:
        return {}
    if auth.type == "bearer":
        return {"Authorization": f"Bearer {auth.bearerToken or auth.token}"}
    if auth.type == "header":
        return dict(auth.headers)
    token = base64.b64encode(f"{auth.username}:{auth.password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def _display_url(url: str) -> str:
    """The URL without its query string (which may carry keys) for messages."""
    parts = urllib.parse.urlsplit(url)
    return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path, "", ""))


def _excerpt(text: str, limit: int = EXCERPT) -> str:
    text = text.strip()
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… [truncated: {len(text)} characters in total]"


class HttpTool(Tool):
    """One HTTP endpoint as a tool. Holds one httpx.AsyncClient, created on first use."""

    def __init__(
        self,
        *,
        name: str,
        endpoint: str,
        method: str = "GET",
        description: str = "",
        parameters: dict[str, Any] | None = None,
        output_schema: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        max_response_bytes: int = MAX_RESPONSE_BYTES,
    ):
        self.name = name
        self.endpoint = endpoint
        self.method = method.upper()
        self.placeholders = list(dict.fromkeys(_PLACEHOLDER.findall(endpoint)))
        self.description = description or f"{self.method} {_display_url(endpoint)}"
        self.parameters = parameters if parameters is not None else self._default_parameters()
        self.output_schema = output_schema
        self._output_validator = SchemaValidator(output_schema) if output_schema is not None else None
        self.headers = dict(headers or {})
        self.request_timeout = timeout
        self.max_response_bytes = max_response_bytes
        self._client: Any = None

    def _default_parameters(self) -> dict[str, Any]:
        # Without a schema, the placeholders are the (string) arguments.
        return {
            "type": "object",
            "properties": {p: {"type": "string"} for p in self.placeholders},
            "required": list(self.placeholders),
        }

    def _get_client(self) -> Any:
        if self._client is None:
            import httpx

            self._client = httpx.AsyncClient(
                timeout=httpx.Timeout(self.request_timeout), follow_redirects=True
            )
        return self._client

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def build_request(self, args: dict[str, Any]) -> tuple[str, dict[str, Any] | None, list[tuple[str, str]]]:
        """(url, json_body, query_params) for `args`. Raises KeyError naming a missing placeholder."""
        rest = dict(args)
        missing = [p for p in self.placeholders if rest.get(p) is None]
        if missing:
            raise KeyError(missing[0])

        def fill(m: re.Match[str]) -> str:
            return urllib.parse.quote(_str_value(rest[m.group(1)]), safe="")

        url = _PLACEHOLDER.sub(fill, self.endpoint)
        for p in self.placeholders:
            rest.pop(p, None)
        body: dict[str, Any] | None = None
        query: list[tuple[str, str]] = []
        if self.method in _BODY_METHODS:
            body = rest
        else:
            for k, v in rest.items():
                if v is None:
                    continue
                if isinstance(v, list):
                    query.extend((k, _str_value(x)) for x in v if x is not None)
                else:
                    query.append((k, _str_value(v)))
        return url, body, query

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        import httpx

        try:
            url, body, query = self.build_request(args or {})
        except KeyError as e:
            return ToolOutput(
                f"Error: missing required argument {e.args[0]!r} (used in the URL {self.endpoint})",
                is_error=True,
            )
        if query:
            # Keep a query already in the endpoint and add the arguments to it.
            sep = "&" if urllib.parse.urlsplit(url).query else "?"
            url = url + sep + urllib.parse.urlencode(query)
        shown = f"{self.method} {_display_url(url)}"
        headers = dict(self.headers)
        content: bytes | None = None
        if body is not None:
            import orjson

            content = orjson.dumps(body)
            headers.setdefault("Content-Type", "application/json")
        client = self._get_client()
        try:
            async with asyncio.timeout(self.request_timeout):
                async with client.stream(self.method, url, headers=headers, content=content) as resp:
                    raw, cut = await self._read_capped(resp)
        except (TimeoutError, httpx.TimeoutException):
            return ToolOutput(f"Error: {shown} timed out after {self.request_timeout:g} s", is_error=True)
        except httpx.HTTPError as e:
            return ToolOutput(f"Error: {shown} failed: {type(e).__name__}: {e}", is_error=True)
        return self._result(resp, raw, cut, shown)

    async def _read_capped(self, resp: Any) -> tuple[bytes, bool]:
        chunks: list[bytes] = []
        size = 0
        async for chunk in resp.aiter_bytes():
            chunks.append(chunk)
            size += len(chunk)
            if size > self.max_response_bytes:
                return b"".join(chunks)[: self.max_response_bytes], True
        return b"".join(chunks), False

    def _result(self, resp: Any, raw: bytes, cut: bool, shown: str) -> str | ToolOutput:
        ctype = resp.headers.get("content-type", "").split(";")[0].strip().lower()
        charset = resp.charset_encoding or "utf-8"
        is_json = ctype == "application/json" or ctype.endswith("+json")
        is_text = (
            is_json
            or ctype.startswith("text/")
            or ctype in ("", "application/xml", "application/javascript", "application/x-www-form-urlencoded")
            or ctype.endswith("+xml")
        )
        text = raw.decode(charset, errors="replace") if is_text else ""
        marker = f"\n[response truncated at {self.max_response_bytes} bytes]" if cut else ""
        if not 200 <= resp.status_code < 300:
            detail = _excerpt(text) if is_text else f"[{ctype or 'binary'} body, {len(raw)} bytes]"
            reason = f" {resp.reason_phrase}" if resp.reason_phrase else ""
            return ToolOutput(
                f"Error: {shown} returned HTTP {resp.status_code}{reason}: {detail}", is_error=True
            )
        if not is_text:
            if self._output_validator is not None:
                return ToolOutput(
                    f"Error: {shown} returned {ctype or 'binary'} data ({len(raw)} bytes), "
                    "not the JSON its output schema describes",
                    is_error=True,
                )
            return f"[binary response: {ctype or 'unknown type'}, {len(raw)} bytes]"
        if not raw:
            if self._output_validator is not None and not self._output_validator.is_valid(None):
                return ToolOutput(
                    f"Error: {shown} returned an empty body (HTTP {resp.status_code}), "
                    "not the JSON its output schema describes",
                    is_error=True,
                )
            return f"(empty response, HTTP {resp.status_code})"
        if cut:
            # A cut body cannot be parsed or validated; say so rather than pretend it was complete.
            return text + marker
        if is_json or self._output_validator is not None:
            import orjson

            try:
                data = orjson.loads(raw)
            except orjson.JSONDecodeError:
                if self._output_validator is not None:
                    return ToolOutput(
                        f"Error: {shown} did not return JSON (expected by the output schema): "
                        f"{_excerpt(text)}",
                        is_error=True,
                    )
                return text
            if self._output_validator is not None:
                errs = self._output_validator.errors(data, limit=5)
                if errs:
                    return ToolOutput(
                        f"Error: the response of {shown} does not match the tool's output schema: "
                        + "; ".join(errs)
                        + f". Response: {_excerpt(text)}",
                        is_error=True,
                    )
            return orjson.dumps(data).decode()
        return text


def create_http_tool(descriptor: Any, where: str | None = None) -> HttpTool:
    """An HttpTool from a ToolDescriptor or a dict (type "http" or "standard"). `where` names the entry in
    error messages (e.g. "tools[2]")."""
    d = _as_dict(descriptor)
    name = str(d.get("name") or "")
    where = where or (f"tools[{name}]" if name else "tools[http]")
    if not _NAME.match(name):
        raise ConfigError(
            f"{where}.name: an http tool needs a name of 1-64 letters, digits, '_' or '-', got {name!r}",
            errors=[(f"{where}.name", "invalid tool name")],
        )
    config = d.get("config") or {}
    if d.get("execution") is not None:
        raw, at = d["execution"], f"{where}.execution"
    elif isinstance(config, dict) and config.get("execution") is not None:
        raw, at = config["execution"], f"{where}.config.execution"
    elif isinstance(config, dict) and "endpoint" in config:
        raw, at = config, f"{where}.config"
    else:
        raise ConfigError(
            f"{where}.execution.endpoint: required (the URL to call, e.g. "
            "'https://api.example.com/orders/{orderId}')",
            errors=[(f"{where}.execution.endpoint", "required")],
        )
    if isinstance(raw, dict) and raw.get("auth") is None and d.get("auth") is not None:
        raw = {**raw, "auth": d["auth"]}  # a descriptor-level auth (older form) counts as execution.auth
    execution = validate_part(HttpExecution, raw, at)
    headers = {str(k): _str_value(v) for k, v in execution.headers.items()}
    auth = auth_headers(execution.auth)
    # Header names are case-insensitive: an auth header replaces a plain header of the same name.
    lowered = {k.lower() for k in auth}
    headers = {k: v for k, v in headers.items() if k.lower() not in lowered} | auth

    # descriptor.timeout: milliseconds (as for every tool); execution.timeout: seconds (the flow spec)
    timeout = DEFAULT_TIMEOUT
    if d.get("timeout"):
        timeout = float(d["timeout"]) / 1000
    elif execution.timeout:
        timeout = execution.timeout
    if timeout <= 0:
        raise ConfigError(f"{where}.timeout: must be positive", errors=[(f"{where}.timeout", "not positive")])
    endpoint, method = execution.endpoint, execution.method

    try:
        parameters = _schema_of(d.get("parameters"), f"{where}.parameters")
        output_schema = _schema_of(d.get("output"), f"{where}.output")
        if parameters is not None:
            SchemaValidator(parameters)
        tool = HttpTool(
            name=name,
            endpoint=endpoint,
            method=method,
            description=str(d.get("description") or ""),
            parameters=parameters,
            output_schema=output_schema,
            headers=headers,
            timeout=timeout,
            max_response_bytes=execution.maxResponseBytes or MAX_RESPONSE_BYTES,
        )
    except SchemaError as e:
        raise ConfigError(f"{where}: invalid schema: {e}") from None
    if parameters is not None:
        props = parameters.get("properties") or {}
        absent = [p for p in tool.placeholders if p not in props]
        if absent:
            # The model only sends what the schema declares: add the URL's placeholders it forgot.
            required = list(parameters.get("required") or [])
            tool.parameters = {
                **parameters,
                "type": parameters.get("type", "object"),
                "properties": {**props, **{p: {"type": "string"} for p in absent}},
                "required": required + [p for p in absent if p not in required],
            }
    return tool
