"""A Python function's signature as one pydantic model: the JSON Schema for the model and the argument
conversion for the call come from the same place, so they cannot disagree.

`SignatureModel.schema()` is the `parameters` object of the tool spec (titles dropped, local `$ref`s
inlined where they are not recursive, `Optional[X] = None` shown as X); `convert(args)` turns the model's
JSON arguments into the declared Python types, or says what is wrong in one line with JSON paths.
"""

from __future__ import annotations

import inspect
import re
import sys
import typing
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue, PydanticJsonSchemaWarning
from pydantic_core import core_schema

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters)\s*:\s*$")
_OTHER_HEADER = re.compile(r"^\s*(Returns|Raises|Yields|Examples?)\s*:\s*$")
_ARG_LINE = re.compile(r"^\s*(\*{0,2}\w+)\s*(\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    """Summary (text before the first section) and Google-style `Args:` descriptions."""
    lines = doc.splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    i = 0
    while i < len(lines) and not _ARGS_HEADER.match(lines[i]):
        if _OTHER_HEADER.match(lines[i]):
            break
        summary.append(lines[i])
        i += 1
    if i < len(lines) and _ARGS_HEADER.match(lines[i]):
        i += 1
        current = None
        while i < len(lines):
            line = lines[i]
            if line.strip() and not line.startswith((" ", "\t")):
                break
            m = _ARG_LINE.match(line)
            if m and (current is None or len(line) - len(line.lstrip()) <= 4):
                current = m.group(1).lstrip("*")
                params[current] = m.group(3).strip()
            elif current and line.strip():
                params[current] += " " + line.strip()
            i += 1
    return "\n".join(summary).strip(), params


class _Schema(GenerateJsonSchema):
    """Types pydantic cannot describe (arbitrary classes, callables) get an unconstrained schema instead
    of failing the whole tool."""

    def handle_invalid_for_json_schema(self, schema: Any, error_info: str) -> JsonSchemaValue:
        return {}

    def callable_schema(self, schema: core_schema.CallableSchema) -> JsonSchemaValue:
        return {}


@dataclass(slots=True)
class _Param:
    name: str  # the parameter's name (the JSON key)
    field: str  # the model's field name (p0, p1, ...: never clashes with BaseModel attributes)
    positional_only: bool


class SignatureModel:
    """The pydantic model of one function's parameters (minus the ToolContext one)."""

    __slots__ = ("_params", "ctx_param", "model", "takes_extra")

    def __init__(self, model: type[BaseModel], params: list[_Param], ctx_param: str | None,
                 takes_extra: bool):
        self.model = model
        self._params = params
        self.ctx_param = ctx_param
        self.takes_extra = takes_extra

    def convert(self, args: dict[str, Any]) -> tuple[list[Any], dict[str, Any]] | str:
        """Positional and keyword arguments for the call, or what is wrong with `args` (for the model)."""
        try:
            m = self.model.model_validate(args)
        except ValidationError as e:
            return describe_errors(e)
        pos: list[Any] = []
        kw: dict[str, Any] = {}
        for p in self._params:
            value = getattr(m, p.field)
            if p.positional_only:
                pos.append(value)
            else:
                kw[p.name] = value
        if self.takes_extra and m.model_extra:
            kw.update(m.model_extra)
        return pos, kw

    def schema(self) -> dict[str, Any]:
        with warnings.catch_warnings():
            # A default JSON cannot hold is left out of the schema; the call still gets it.
            warnings.simplefilter("ignore", PydanticJsonSchemaWarning)
            raw = self.model.model_json_schema(by_alias=True, schema_generator=_Schema)
        return tidy_schema(raw)


def build_signature_model(fn: Callable[..., Any], docs: dict[str, str], tool_name: str,
                          ctx_type: type) -> SignatureModel:
    """The SignatureModel of `fn`. A parameter named `ctx` or annotated with `ctx_type` receives the
    context and is hidden; its annotation may name a type imported only under TYPE_CHECKING."""
    sig = inspect.signature(fn)
    hints = _resolve_hints(fn, sig, tool_name, ctx_type)
    fields: dict[str, Any] = {}
    params: list[_Param] = []
    ctx_param: str | None = None
    takes_extra = False
    for pname, p in sig.parameters.items():
        if p.kind == p.VAR_KEYWORD:
            takes_extra = True
            continue
        if pname == "self" or p.kind == p.VAR_POSITIONAL:
            continue
        ann = hints.get(pname, Any)
        if pname == "ctx" or _is_ctx(ann, ctx_type):
            ctx_param = pname
            continue
        desc = docs.get(pname) or _annotated_description(ann)
        default = ... if p.default is inspect.Parameter.empty else p.default
        field = f"p{len(params)}"
        fields[field] = (ann, Field(default, alias=pname, description=desc))
        params.append(_Param(pname, field, p.kind == p.POSITIONAL_ONLY))
    config = ConfigDict(extra="allow" if takes_extra else "forbid", arbitrary_types_allowed=True,
                        populate_by_name=False)
    try:
        model = create_model(f"{tool_name}_arguments", __config__=config, **fields)
    except Exception as e:  # a type pydantic cannot handle at all: say which tool, at decoration time
        raise TypeError(f"tool {tool_name!r}: cannot build an argument model from the signature: {e}") from e
    if not model.__pydantic_complete__:  # a forward reference nothing defines
        names = ", ".join(f"{p.name!r}: {hints.get(p.name)!r}" for p in params)
        raise TypeError(f"tool {tool_name!r}: a parameter's type names something undefined ({names}); "
                        "import it at run time, not only under TYPE_CHECKING")
    return SignatureModel(model, params, ctx_param, takes_extra)


def _resolve_hints(fn: Callable[..., Any], sig: inspect.Signature, tool_name: str,
                   ctx_type: type) -> dict[str, Any]:
    """Type hints per parameter. The context type resolves by name even when the module imports it only
    under TYPE_CHECKING; any other name that cannot be resolved is a TypeError naming the parameter."""
    globalns = getattr(fn, "__globals__", {})
    localns = {} if ctx_type.__name__ in globalns else {ctx_type.__name__: ctx_type}
    localns.update(_definer_locals(fn))
    try:
        return typing.get_type_hints(fn, localns=localns, include_extras=True)
    except Exception:
        pass
    hints: dict[str, Any] = {}
    for pname, p in sig.parameters.items():
        ann = p.annotation
        if ann is inspect.Parameter.empty:
            continue
        if not isinstance(ann, str):
            hints[pname] = ann
            continue
        try:
            value: Any = ann
            for _ in range(2):  # `x: "T"` under `from __future__ import annotations` is a string twice
                if isinstance(value, str):
                    value = eval(value, globalns, localns)
            hints[pname] = value
        except Exception as e:
            if pname == "ctx" or ctx_type.__name__ in ann:
                hints[pname] = ctx_type
                continue
            raise TypeError(
                f"tool {tool_name!r}: cannot resolve the type {ann!r} of parameter {pname!r} ({e}); "
                "import it at run time, not only under TYPE_CHECKING"
            ) from None
    return hints


def _definer_locals(fn: Callable[..., Any]) -> dict[str, Any]:
    """The local names of the function that defined `fn`: a tool defined inside another function may name
    types local to it (string annotations cannot see them otherwise). Only that frame counts (found by
    `fn`'s code object among its constants), never a caller that merely wraps `fn` (e.g. chainreact's own
    descriptor loading); a module-level `fn` gives nothing extra."""
    code = getattr(fn, "__code__", None)
    frame = sys._getframe(1)
    for _ in range(16):
        if frame is None or code is None:
            return {}
        if code in frame.f_code.co_consts:
            return {} if frame.f_locals is frame.f_globals else dict(frame.f_locals)
        frame = frame.f_back  # type: ignore[assignment]
    return {}


def _is_ctx(ann: Any, ctx_type: type) -> bool:
    if ann is ctx_type:
        return True
    return any(a is ctx_type for a in typing.get_args(ann))


def _annotated_description(ann: Any) -> str | None:
    if typing.get_origin(ann) is typing.Annotated:
        return next((a for a in typing.get_args(ann)[1:] if isinstance(a, str)), None)
    return None


# --- schema tidying -----------------------------------------------------------------------------------

# Keys whose value is a map from names to schemas (the names are data, not keywords).
_SCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties", "dependentSchemas")


def tidy_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """pydantic's schema made compact for a model: no titles, non-recursive `$ref`s inlined, an optional
    parameter defaulting to None shown as its type, no `additionalProperties: false` at the top."""
    defs: dict[str, Any] = schema.get("$defs", {})
    recursive = {name for name in defs if _refers_to(defs[name], name, defs, set())}
    out = _tidy(schema, defs, recursive)
    assert isinstance(out, dict)
    kept = {k: _tidy(v, defs, recursive) for k, v in defs.items() if k in recursive}
    out.pop("$defs", None)
    if kept:
        out["$defs"] = kept
    out.pop("additionalProperties", None)
    return out


def _ref_name(node: dict[str, Any]) -> str | None:
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return ref[len("#/$defs/"):]
    return None


def _refers_to(node: Any, target: str, defs: dict[str, Any], seen: set[str]) -> bool:
    if isinstance(node, list):
        return any(_refers_to(v, target, defs, seen) for v in node)
    if not isinstance(node, dict):
        return False
    name = _ref_name(node)
    if name is not None:
        if name == target:
            return True
        if name in seen or name not in defs:
            return False
        seen.add(name)
        return _refers_to(defs[name], target, defs, seen)
    return any(_refers_to(v, target, defs, seen) for v in node.values())


def _tidy(node: Any, defs: dict[str, Any], recursive: set[str]) -> Any:
    if isinstance(node, list):
        return [_tidy(v, defs, recursive) for v in node]
    if not isinstance(node, dict):
        return node
    name = _ref_name(node)
    if name is not None and name in defs and name not in recursive:
        extra = {k: v for k, v in node.items() if k != "$ref"}
        return _tidy({**defs[name], **extra}, defs, recursive)
    out: dict[str, Any] = {}
    for k, v in node.items():
        if k in ("title", "$defs"):
            continue
        if k in _SCHEMA_MAPS and isinstance(v, dict):
            out[k] = {pk: _tidy(pv, defs, recursive) for pk, pv in v.items()}
        else:
            out[k] = _tidy(v, defs, recursive)
    # `x: T | None = None`: the model may leave it out; showing T alone is what it needs to know.
    any_of = out.get("anyOf")
    if "default" in out and out["default"] is None and isinstance(any_of, list) and len(any_of) == 2:
        rest = [s for s in any_of if s != {"type": "null"}]
        if len(rest) == 1 and isinstance(rest[0], dict):
            merged = {**rest[0], **{k: v for k, v in out.items() if k not in ("anyOf", "default")}}
            return merged
    return out


def describe_errors(e: ValidationError, limit: int = 8) -> str:
    """pydantic's errors as `$.path: message (got value)` joined by `; ` (the jsonschema_lite style)."""
    parts: list[str] = []
    errors = e.errors(include_url=False)
    for err in errors[:limit]:
        path = "$" + "".join(f"[{x}]" if isinstance(x, int) else f".{x}" for x in err["loc"])
        msg = err["msg"]
        if err["type"] == "extra_forbidden":
            msg = "unexpected argument"
        elif err["type"] != "missing":
            got = repr(err.get("input"))
            msg += f" (got {got[:60] + '...' if len(got) > 60 else got})"
        parts.append(f"{path}: {msg}")
    if len(errors) > limit:
        parts.append(f"... and {len(errors) - limit} more")
    return "; ".join(parts)
