"""Typed config models for the parts of tool descriptors: HTTP `execution` and its auth, MCP `config` and
`mcpClient`, the options of `agent`, `rulechain` and `python` tools.

They live here, not in chainreact.config, because config sits below tools; `ToolDescriptor` keeps these
parts as plain objects and the tool factories validate them with `validate_part`, which gives the same
kind of errors as the document loader (a JSON path per problem, all problems at once) and warns once,
with config.loader's UnknownFieldWarning, about keys it does not know (a newer document still loads).
`descriptor_json_schema()` describes a descriptor with these parts, for `chainreact schema` and editors.
Builtin tools' `config` is described by the builtins themselves.
"""

from __future__ import annotations

import re
import urllib.parse
import warnings
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ..config.loader import UnknownFieldWarning
from ..errors import ConfigError

__all__ = [
    "AgentToolOptions",
    "HttpAuth",
    "HttpExecution",
    "McpAuth",
    "McpConfig",
    "McpToolFilter",
    "PythonToolConfig",
    "RuleChainToolOptions",
    "descriptor_json_schema",
    "validate_part",
]

_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


def _seconds(description: str = "Seconds.") -> Any:
    return Field(None, gt=0, le=86_400, allow_inf_nan=False, description=description)


class DescriptorPart(BaseModel):
    # extra="allow": unknown keys are collected and warned about by validate_part, not refused.
    model_config = ConfigDict(extra="allow", populate_by_name=True)


# --- HTTP tools (the flow spec's ToolForAIDef.execution) --------------------------------------------------

class HttpAuth(DescriptorPart):
    """`{"type": "bearer", "bearerToken"}`, `{"type": "header", "headers"}` or `{"type": "basic", ...}`."""

    type: Literal["bearer", "header", "basic"]
    bearerToken: str = ""
    token: str = Field("", description="Same as bearerToken.")
    headers: dict[str, str] = Field(default_factory=dict)
    username: str = ""
    password: str = ""

    @field_validator("type", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v

    @model_validator(mode="after")
    def _required(self) -> HttpAuth:
        if self.type == "bearer" and not (self.bearerToken or self.token):
            raise ValueError("bearerToken is required when type is 'bearer'")
        if self.type == "header" and not self.headers:
            raise ValueError("headers (a non-empty object) is required when type is 'header'")
        if self.type == "basic" and not self.username:
            raise ValueError("username is required when type is 'basic'")
        return self


class HttpExecution(DescriptorPart):
    """Where and how an HTTP tool calls: `{name}` placeholders in `endpoint` come from the arguments."""

    endpoint: str = Field(description="http(s) URL; {name} placeholders are filled from the arguments.")
    method: Literal["GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS"] = "GET"
    headers: dict[str, str | int | float | bool] = Field(default_factory=dict)
    auth: HttpAuth | None = None
    timeout: float | None = _seconds()
    maxResponseBytes: int | None = Field(None, gt=0, le=2**40, description="Larger bodies are cut.")

    @field_validator("method", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v

    @field_validator("endpoint")
    @classmethod
    def _http_url(cls, v: str) -> str:
        scheme = urllib.parse.urlsplit(_PLACEHOLDER.sub("x", v)).scheme.lower()
        if scheme not in ("http", "https"):
            raise ValueError(f"must be an http:// or https:// URL, got {v!r}")
        return v


# --- MCP tools (rule-chain `config` and the flow spec's `mcpClient`) --------------------------------------

class McpAuth(DescriptorPart):
    """The flow spec's McpAuthDef."""

    type: Literal["bearer", "header"]
    bearerToken: str = ""
    headers: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _required(self) -> McpAuth:
        if self.type == "bearer" and not self.bearerToken:
            raise ValueError("bearerToken is required when type is 'bearer'")
        if self.type == "header" and not self.headers:
            raise ValueError("headers (a non-empty object) is required when type is 'header'")
        return self


class McpToolFilter(DescriptorPart):
    """The flow spec's McpToolFilterDef."""

    type: Literal["all", "include", "exclude", "expression"] = "all"
    includedTools: list[str] = Field(default_factory=list)
    excludedTools: list[str] = Field(default_factory=list)
    expression: str = Field("", description="jq; see docs/tools-mcp.md for how its output is read.")


class McpConfig(DescriptorPart):
    """An MCP server: a host provider, a command (stdio) or a URL (streamable HTTP / SSE). `mcpClient` takes
    the same keys; its keys win over `config`'s."""

    server: str = Field("", description="A host provider name (e.g. 'self'), an http(s):// URL (streamable "
                                        "HTTP, as RuleGo) or a command line (stdio, as RuleGo).")
    transport: str = Field("", description="stdio, streamable-http (http) or sse; inferred when omitted.")
    command: str = ""
    args: list[str | int | float] = Field(default_factory=list)
    env: dict[str, str | int | float | bool] = Field(default_factory=dict)
    cwd: str = ""
    url: str = ""
    headers: dict[str, str | int | float | bool] = Field(default_factory=dict)
    auth: McpAuth | None = None
    tools: list[str] | str | None = Field(
        None, description="Tool names to keep; '*' (or ['*'], or omitted) = all of them.")
    toolFilter: McpToolFilter | None = None
    listTimeout: float | None = _seconds()
    callTimeout: float | None = _seconds()
    timeout: float | None = _seconds("RuleGo's connect timeout in seconds (the listTimeout default).")
    client_name: str = Field("", description="RuleGo: the name this client gives the server.")
    client_version: str = Field("", description="RuleGo: the version this client gives the server.")
    retryNonIdempotent: bool | list[str] = Field(
        False, description="Re-send a tool call after the session was lost mid-call (it may run twice): "
                           "true for every tool, or a list of tool names. Tools the server marks "
                           "idempotentHint are retried anyway.")
    name: str = ""


# --- sub-agents, rule chains, Python functions -------------------------------------------------------------

class AgentToolOptions(DescriptorPart):
    """`config` of an `agent` tool."""

    full_history: bool = Field(False, description="Give the sub-agent the caller's whole conversation.")
    emit_internal_events: bool = Field(False, description="Forward the sub-agent's events to the caller.")


class RuleChainToolOptions(DescriptorPart):
    """`config` of a `rulechain` tool (RuleGo reads none: targetId, parameters and timeout say it all)."""


class PythonToolConfig(DescriptorPart):
    """`config` of a `python` tool."""

    function: str = Field("", description="module:function (else the descriptor's name).")
    thread: bool = Field(True, description=(
        "Run a sync function in a worker thread (the default). false: call it on the event loop, for quick "
        "non-blocking functions only (a blocking one stalls every run; its timeout cannot interrupt it)."))


M = TypeVar("M", bound=BaseModel)


def validate_part(model: type[M], data: Any, where: str, *, warn_unknown: bool = True) -> M:
    """`data` as `model`. Invalid: ConfigError listing every problem as `where.path: message`. Keys the
    model does not know: one UnknownFieldWarning naming them (they are ignored)."""
    try:
        part = model.model_validate({} if data is None else data)
    except ValidationError as e:
        errors: list[tuple[str, str]] = []
        for err in e.errors(include_url=False):
            path = where + "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"]
                                   if not _is_branch(x))
            msg = err["msg"].removeprefix("Value error, ")
            if err["type"] not in ("missing",) and "input" in err and not isinstance(err["input"], dict):
                msg += f" (got {err['input']!r:.80})"
            if path not in dict(errors):
                errors.append((path, msg))
        lines = "\n".join(f"  {p}: {m}" for p, m in errors)
        first = f"{errors[0][0]}: {errors[0][1]}" if len(errors) == 1 else f"{where}: {len(errors)} errors"
        raise ConfigError(f"{first}" + (f":\n{lines}" if len(errors) > 1 else ""), errors=errors) from None
    unknown = unknown_keys(part, where)
    if unknown and warn_unknown:
        warnings.warn(f"{where}: unknown field(s) ignored: {', '.join(unknown)}", UnknownFieldWarning,
                      stacklevel=2)
    return part


def _is_branch(part: Any) -> bool:
    # pydantic names union branches in the location ("str", "list[str]", "function-after[...]").
    return isinstance(part, str) and (part in ("str", "int", "float", "bool") or "[" in part)


def unknown_keys(model: BaseModel, path: str) -> list[str]:
    """The JSON paths of keys no model field took, depth first; they are dropped from the model."""
    out: list[str] = []
    if model.model_extra:
        out.extend(f"{path}.{k}" for k in model.model_extra)
        model.model_extra.clear()
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, BaseModel):
            out.extend(unknown_keys(value, f"{path}.{name}"))
    return out


def descriptor_json_schema() -> dict[str, Any]:
    """JSON Schema of an object tool descriptor's typed parts, by `type` (an `allOf` of if/then rules to
    add to the ToolDescriptor definition of the document schema)."""
    rules: list[dict[str, Any]] = []
    defs: dict[str, Any] = {}

    def ref(model: type[BaseModel]) -> dict[str, Any]:
        schema = model.model_json_schema(ref_template="#/$defs/{model}")
        defs.update(schema.pop("$defs", {}))
        defs[model.__name__] = schema
        return {"$ref": f"#/$defs/{model.__name__}"}

    def when(types: list[str], props: dict[str, Any]) -> None:
        rules.append({"if": {"properties": {"type": {"enum": types}}, "required": ["type"]},
                      "then": {"properties": props}})

    when(["http", "standard"], {"execution": ref(HttpExecution)})
    mcp = ref(McpConfig)
    when(["mcp"], {"config": mcp, "mcpClient": mcp})
    when(["agent"], {"config": ref(AgentToolOptions)})
    when(["rulechain"], {"config": ref(RuleChainToolOptions)})
    when(["python"], {"config": ref(PythonToolConfig)})
    from .builtin.configs import MODELS as BUILTIN_CONFIGS  # each builtin's own config model

    for name, model in BUILTIN_CONFIGS.items():
        # `type` defaults to "builtin", so a descriptor without it matches too.
        rules.append({"if": {"properties": {"type": {"const": "builtin"}, "name": {"const": name}},
                             "required": ["name"]},
                      "then": {"properties": {"config": ref(model)}}})
    return {"allOf": rules, "$defs": defs}


def document_json_schema() -> dict[str, Any]:
    """config.json_schema() (the agent document) with the typed descriptor parts added to its
    ToolDescriptor definition: what `chainreact schema` prints."""
    from ..config import json_schema

    schema = json_schema()
    parts = descriptor_json_schema()
    defs = schema.setdefault("$defs", {})
    for name, part in parts["$defs"].items():
        defs.setdefault(name, part)
    for name in ("ToolDescriptor", "ToolDescriptorLenient"):  # strict, and for "unknownFields": "warn"
        if name in defs:
            defs[name] = {**defs[name], "allOf": parts["allOf"]}
    return schema
