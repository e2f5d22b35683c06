"""`askUserForToolsInput` at the flow level: an agent run that stopped to ask becomes questions to the user,
one per turn; the session's next messages are the answers; when all are in, the stored run is resumed.

The pending state is plain JSON kept in the session's checkpoint (`pending` in the run
`flow:<flow id>:<session>`), next to the agent run's own checkpoint in the same store, so the process that
gets the answer need not be the one that asked.

A question of the model's `ask_user` is asked as it is. A tool call missing required arguments
(tooling.AskForMissing) is asked one field at a time ("To use orderLookup I need orderId."), and the
fields' answers are put together into the object the tool gets.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..agent.interrupt import Question


@dataclass
class Prompt:
    """One thing to ask the user: a question (field None) or one missing field of a tool call."""

    id: str  # the agent question's id (the tool call's id)
    text: str
    schema: dict[str, Any] | None
    field: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "text": self.text, "schema": self.schema, "field": self.field}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Prompt:
        return cls(str(d["id"]), str(d["text"]), d.get("schema"), d.get("field"))


@dataclass
class Pending:
    """An agent run of `node` waiting for the user's answers (the session's `pending`)."""

    node: str
    run_id: str
    user_input: str  # the turn's userInput when the run started
    user_text: str  # the rendered userMessage (what memory records)
    key: str  # the memory key
    attempts: int  # answers asked for so far (output.maxRetries)
    tools_used: int  # maxToolExecutions spent before the pause
    prompts: list[Prompt]
    answers: dict[str, Any] = field(default_factory=dict)
    next: int = 0  # the prompt being asked

    @property
    def current(self) -> Prompt:
        return self.prompts[self.next]

    @property
    def complete(self) -> bool:
        return self.next >= len(self.prompts)

    def to_dict(self) -> dict[str, Any]:
        return {"node": self.node, "run_id": self.run_id, "userInput": self.user_input,
                "userText": self.user_text, "key": self.key, "attempts": self.attempts,
                "toolsUsed": self.tools_used, "prompts": [p.to_dict() for p in self.prompts],
                "answers": self.answers, "next": self.next}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Pending:
        return cls(str(d["node"]), str(d["run_id"]), str(d.get("userInput") or ""),
                   str(d.get("userText") or ""), str(d.get("key") or ""), int(d.get("attempts") or 0),
                   int(d.get("toolsUsed") or 0),
                   [Prompt.from_dict(p) for p in d.get("prompts") or []], dict(d.get("answers") or {}),
                   int(d.get("next") or 0))


def prompts_for(questions: list[Question]) -> list[Prompt]:
    out: list[Prompt] = []
    for q in questions:
        data = q.data if isinstance(q.data, dict) else {}
        missing = data.get("missing")
        fields = data.get("fields") or {}
        if isinstance(missing, list) and missing:
            for f in missing:
                found = fields.get(f)
                schema: dict[str, Any] = found if isinstance(found, dict) else {}
                desc = schema.get("description")
                text = f"To use {data.get('tool') or q.tool} I need {f}" + (f" ({desc})" if desc else "")
                text += "."
                out.append(Prompt(q.id, text, schema, str(f)))
        else:
            out.append(Prompt(q.id, q.question or f"{q.tool} needs your answer.", q.schema))
    return out


def coerce(text: str, schema: dict[str, Any] | None) -> Any:
    """The user's text as the asked value: JSON when the schema wants something other than a string and
    the text parses to something it accepts, else the text itself."""
    from ..tools.jsonschema_lite import validate

    if not schema or (schema.get("type") in (None, "string") and "enum" not in schema):
        return text
    try:
        value = json.loads(text)
    except ValueError:
        return text
    return value if not validate(value, schema) else text


def take_answer(pending: Pending, text: str) -> list[str]:
    """Record the user's answer to the current prompt; its problems against the asked schema (nothing is
    recorded then, and the same prompt is asked again)."""
    from ..tools.jsonschema_lite import validate

    p = pending.current
    value = coerce(text.strip(), p.schema)
    problems = validate(value, p.schema) if p.schema else []
    if problems:
        return problems
    if p.field is not None:
        got = pending.answers.setdefault(p.id, {})
        got[p.field] = value
    else:
        pending.answers[p.id] = value
    pending.next += 1
    return []


__all__ = ["Pending", "Prompt", "coerce", "prompts_for", "take_answer"]
