"""The JSON Schema of flow documents (for editors and `chainreact flow schema`)."""

from __future__ import annotations

from typing import Any


def flow_json_schema() -> dict[str, Any]:
    from .model import FlowDef

    schema = FlowDef.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["title"] = "chainreact flow"
    return schema


__all__ = ["flow_json_schema"]
