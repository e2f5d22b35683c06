"""A run's answer format: the `response_format` a caller asks one run for (`json_object`, or
`json_schema` with its schema, strict or not), sent with every model call of the run and checked on the
answer.

The check is part of the model call (the run's `plan.model`, wrapped by `run_options.RunModel`): a final
answer (a model message without tool calls) that is not a JSON object, or does not match the schema, is
asked again in the same call, with its problems, at most `retries` times; each re-ask is a `retry` event
(error_type `AnswerFormatError`). The answer that passes is the call's response, so the run's history
holds only that one (the rejected attempts and the re-ask prompts are not part of the conversation).
When every attempt failed: a `strict` format fails the run with AnswerFormatError naming the problems;
a format that is not strict gives the last answer as it is (a schema that is not strict is a request to
the model, as on OpenAI's API). An answer wrapped in a ```json fence (endpoints that ignore
`response_format` do this) counts as its content, and the fence is removed from the answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import orjson

from ..errors import ChainreactError, ConfigError

FORMAT_TYPES = ("text", "json_object", "json_schema")
DEFAULT_RETRIES = 2  # re-asks after the first answer
_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_FENCE = re.compile(r"^\s*```(?:json)?\s*\n(.*?)\n\s*```\s*$", re.DOTALL)

REASK_PROMPT = ("Your answer does not match the response format this request requires:\n{problems}\n"
                "Reply again, with only the JSON object, and make it match.")


class AnswerFormatError(ChainreactError):
    """A run's answer still did not match its strict response format after the re-asks."""

    def __init__(self, problems: list[str], attempts: int):
        self.problems = problems
        self.attempts = attempts
        shown = "; ".join(problems[:5])
        super().__init__(f"the answer does not match the requested response format after {attempts} "
                         f"attempt(s): {shown}")


@dataclass(frozen=True, slots=True)
class AnswerFormat:
    """`type` json_object or json_schema; `schema` (json_schema) the JSON Schema, `name` its name."""

    type: str
    schema: dict[str, Any] | None = None
    name: str = "response"
    strict: bool = False
    retries: int = DEFAULT_RETRIES

    def params(self) -> dict[str, Any]:
        """The ModelParams override that puts this format into the model request."""
        if self.type == "json_object":
            return {"responseFormat": "json_object"}
        wrapper: dict[str, Any] = {"name": self.name, "schema": self.schema or {}}
        if self.strict:
            wrapper["strict"] = True
        return {"responseFormat": "json_schema", "jsonSchema": wrapper}

    def check(self, text: str) -> tuple[str, list[str]]:
        """The answer as it should be given (a ```json fence removed) and its problems (empty: it fits)."""
        m = _FENCE.match(text)
        raw = m.group(1) if m else text
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError as e:
            return text, [f"$: not JSON ({e})"]
        if not isinstance(value, dict):
            return text, [f"$: expected a JSON object, got {_kind(value)}"]
        if self.type == "json_schema" and self.schema:
            from ..tools.jsonschema_lite import validate

            problems = validate(value, self.schema)
            if problems:
                return text, list(problems)
        return raw.strip() if m else text, []

    def reask(self, problems: list[str]) -> str:
        return REASK_PROMPT.format(problems="\n".join(f"- {p}" for p in problems[:10]))

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "schema": self.schema, "name": self.name, "strict": self.strict,
                "retries": self.retries}


def answer_format(spec: Any, where: str = "response_format") -> AnswerFormat | None:
    """OpenAI's `response_format` object (chat completions: `{"type", "json_schema": {"name", "schema",
    "strict"}}`; the Responses API's `text.format` has the same fields flat: `{"type", "name", "schema",
    "strict"}`) as an AnswerFormat; None for `text`. ConfigError naming the field for anything else."""
    if spec is None:
        return None
    if not isinstance(spec, dict):
        raise ConfigError(f"{where} must be an object with a 'type' ({', '.join(FORMAT_TYPES)})")
    kind = spec.get("type")
    if kind not in FORMAT_TYPES:
        raise ConfigError(f"{where}.type must be one of {', '.join(FORMAT_TYPES)}, got {kind!r}")
    if kind == "text":
        return None
    if kind == "json_object":
        return AnswerFormat("json_object")
    inner = spec.get("json_schema", spec)  # chat's nested form, or the Responses API's flat one
    path = f"{where}.json_schema" if "json_schema" in spec else where
    if not isinstance(inner, dict):
        raise ConfigError(f"{path} must be an object with 'name' and 'schema'")
    name = inner.get("name", "response")
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"{path}.name must be 1 to 64 letters, digits, '_' or '-', got {name!r}")
    schema = inner.get("schema")
    if schema is None:
        schema = {}
    if not isinstance(schema, dict):
        raise ConfigError(f"{path}.schema must be a JSON Schema object")
    strict = inner.get("strict")
    if strict is not None and not isinstance(strict, bool):
        raise ConfigError(f"{path}.strict must be true or false")
    return AnswerFormat("json_schema", schema, name, bool(strict))


def format_from_dict(data: Any) -> AnswerFormat | None:
    """`AnswerFormat.to_dict()` back (a run's saved options); None for anything else."""
    if not isinstance(data, dict) or data.get("type") not in ("json_object", "json_schema"):
        return None
    return AnswerFormat(data["type"], data.get("schema"), str(data.get("name") or "response"),
                        bool(data.get("strict")), int(data.get("retries", DEFAULT_RETRIES)))


def _kind(value: Any) -> str:
    return {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")
