"""The builtin `ask_user`: ask the user a question and wait for the answer (the run stops until it comes).

`ask_user(question, schema?)`: the answer is the tool's result (a string as is, anything else as JSON).
`schema` (from the model's call, else the descriptor's `config.schema`) is the JSON Schema the answer must
match; a store checks it before a resume (state/checkpoint.py `check_answers`). The first call raises
ToolInterrupt (tools/interrupt.py); on resume the call runs again with the answer in `ctx.state["answer"]`.
"""

from __future__ import annotations

from typing import Any

import orjson

from ...errors import ConfigError
from ..base import Tool, ToolContext, ToolOutput
from ..interrupt import ANSWER, ToolInterrupt
from ..jsonschema_lite import validate

ASK_USER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "question": {"type": "string", "description": "The question, as the user will read it."},
        "schema": {"type": "object", "description": "Optional JSON Schema the answer must match, e.g. "
                   '{"enum": ["yes", "no"]}. Without it the answer is free text.'},
    },
    "required": ["question"],
}


class AskUserTool(Tool):
    """Ask the user a question and wait for the answer (the run stops until it comes)."""

    def __init__(self, *, name: str = "ask_user", description: str | None = None,
                 schema: dict[str, Any] | None = None):
        self.name = name
        self.description = description or (
            "Ask the user a question and wait for the answer. Use it only for information or a decision "
            "that only the user can give; the run pauses until the user answers.")
        self.parameters = ASK_USER_PARAMETERS
        self.schema = schema  # a fixed answer schema (descriptor config), used when the call gives none

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        question = str(args.get("question") or "").strip()
        if not question:
            return ToolOutput("Error: ask_user needs a non-empty question", True)
        schema = args.get("schema") or self.schema
        if schema is not None and not isinstance(schema, dict):
            return ToolOutput("Error: ask_user: schema must be a JSON Schema object", True)
        if ANSWER not in ctx.state:
            raise ToolInterrupt(question, kind="ask_user", schema=schema)
        answer = ctx.state[ANSWER]
        # A store checks answers before resuming; a hand-made Resume may not have: never pass on an
        # answer the schema refuses, ask again naming what was wrong.
        problems = list(validate(answer, schema if schema is not None else {"type": "string"}))
        if problems:
            raise ToolInterrupt(f"{question} (the previous answer was refused: {'; '.join(problems[:3])})",
                                kind="ask_user", schema=schema)
        return answer if isinstance(answer, str) else orjson.dumps(answer).decode()


def create(config: dict[str, Any], descriptor: Any = None) -> Tool:
    """The builtin factory (`"ask_user"` or `{"type": "builtin", "name": "ask_user", "config": {"schema":
    {...}}}`)."""
    unknown = set(config) - {"schema"}
    if unknown:
        raise ConfigError(f"ask_user: unknown config key(s) {', '.join(sorted(unknown))}; known: schema")
    schema = config.get("schema")
    if schema is not None and not isinstance(schema, dict):
        raise ConfigError("ask_user: config.schema must be a JSON Schema object")
    desc = getattr(descriptor, "description", "") or None
    return AskUserTool(description=desc, schema=schema)


__all__ = ["ASK_USER_PARAMETERS", "AskUserTool", "create"]
