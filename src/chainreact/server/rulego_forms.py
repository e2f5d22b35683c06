"""chainreact's chain components as RuleGo's component forms (api/types ComponentForm, the shape
utils/reflect GetComponentForm makes from a Go config struct), for `GET /api/v1/components`.

A form's fields come from the component's pydantic configuration model (`Component.form_fields()`: the
agent document's fields for `ai/agent`), one ComponentFormField per field:

    {"name", "type", "defaultValue", "label", "desc", "validate", "rules", "fields", "component",
     "required"}

`type` is the Go type name RuleGo's editor reads: string, int, float64, bool, map, array, struct (with
`fields`), "" for a field of any type; a Literal is a string with a select of its values
(`component: {"type": "select", "options": [...]}`), a number with bounds carries them (`component:
{"min", "max"}`). `relationTypes` follow RuleGo's rule on the Go type
name: a filter's True/False/Failure, a switch's free relations ([]), else Success/Failure; a component that
streams adds Stream. `category` is RuleGo's package (filter, transform, action, external, flow, ai).
"""

from __future__ import annotations

import types
import typing
from typing import Any, Literal

from pydantic import BaseModel
from pydantic_core import PydanticUndefined, to_jsonable_python

CATEGORIES = {
    "jsFilter": "filter", "exprFilter": "filter", "jsSwitch": "filter", "switch": "filter",
    "msgTypeSwitch": "filter", "groupFilter": "filter",
    "jsTransform": "transform", "exprTransform": "transform", "metadataTransform": "transform",
    "text/template": "transform",
    "restApiCall": "external", "flow": "flow", "ai/agent": "ai", "ai/llm": "ai",
}
REQUIRED_RULE = {"required": True, "message": "This field is required"}  # RuleGo's own text


def _unwrapped(annotation: Any) -> Any:
    """X for Optional[X] / X | None; the first member of another union."""
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        return args[0] if args else Any
    return annotation


def go_type(annotation: Any) -> tuple[str, Any]:
    """RuleGo's type name for a field's annotation, and the nested model of a struct (else None)."""
    annotation = _unwrapped(annotation)
    origin = typing.get_origin(annotation) or annotation
    if origin is Literal:
        return "string", None
    if isinstance(origin, type):
        if issubclass(origin, BaseModel):
            return "struct", origin
        if issubclass(origin, bool):
            return "bool", None
        if issubclass(origin, int):
            return "int", None
        if issubclass(origin, float):
            return "float64", None
        if issubclass(origin, str):
            return "string", None
        if issubclass(origin, dict):
            return "map", None
        if issubclass(origin, list | tuple | set | frozenset):
            return "array", None
    return "", None  # Go's interface{}: any value


def field_form(name: str, info: Any) -> dict[str, Any]:
    kind, nested = go_type(info.annotation)
    default = info.get_default(call_default_factory=True)
    default = None if default is PydanticUndefined else to_jsonable_python(default)
    required = info.is_required()
    form: dict[str, Any] = {
        "name": info.alias or name, "type": kind, "defaultValue": default, "label": info.title or name,
        "desc": info.description or "", "validate": "", "rules": [dict(REQUIRED_RULE)] if required else None,
        "fields": model_fields(nested) if nested is not None else None, "component": None,
        "required": required,
    }
    literal = _unwrapped(info.annotation)
    if typing.get_origin(literal) is Literal:
        form["component"] = {"type": "select", "filterable": True,
                             "options": [{"label": str(v) or "(default)", "value": v}
                                         for v in typing.get_args(literal)]}
    elif kind in ("int", "float64") and (bounds := _bounds(info)):
        form["component"] = bounds  # the editor's number input reads min and max
    return form


def _bounds(info: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for m in info.metadata:
        for attr, key in (("ge", "min"), ("gt", "min"), ("le", "max"), ("lt", "max")):
            if getattr(m, attr, None) is not None:
                out[key] = getattr(m, attr)
    return out


def model_fields(model: type[BaseModel]) -> list[dict[str, Any]]:
    return [field_form(n, f) for n, f in model.model_fields.items()]


def relation_types(cls: Any) -> list[str]:
    label = cls.__name__.lower()
    if "filter" in label:
        rels = ["True", "False", "Failure"]
    elif "switch" in label:
        rels = []
    else:
        rels = ["Success", "Failure"]
    return [*rels, "Stream"] if getattr(cls, "stream_capable", False) else rels


def _desc(cls: Any) -> str:
    text = cls.description or cls.__doc__ or ""
    return " ".join(text.split("\n\n")[0].split())


def component_form(type_name: str, cls: Any) -> dict[str, Any]:
    family = cls.__module__.rsplit(".", 1)[-1]
    return {
        "type": type_name,
        "category": CATEGORIES.get(type_name, "ai" if family == "ai" else "action"),
        "order": 0,
        "fields": [field_form(n, f) for n, f in cls.form_fields().items()],
        "label": cls.__name__,
        "desc": _desc(cls),
        "icon": "",
        "relationTypes": relation_types(cls),
        "disabled": False,
        "version": "",
        "componentKind": "nc",
    }


def component_forms(registry: dict[str, Any]) -> list[dict[str, Any]]:
    """Every component's form, sorted as RuleGo's ComponentFormList.Values (category, order, type)."""
    forms = [component_form(t, c) for t, c in registry.items()]
    forms.sort(key=lambda f: (f["category"], f["order"], f["type"]))
    return forms


__all__ = ["CATEGORIES", "component_form", "component_forms", "field_form", "go_type", "model_fields",
           "relation_types"]
