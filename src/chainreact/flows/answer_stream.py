"""A turn's answers as they are generated: the text of each agent node's message, decoded out of the JSON
answer while the model is still writing it.

An agent node's answer is a JSON object (its `output.schema`); the user sees its text field (the rule of
agent_node: `response`, else `answer`, `message`, `reply` or `text`, the first the schema declares).
`FieldText` decodes that field's string value out of the JSON arriving in pieces, so the text can be shown
token by token instead of as raw JSON; a node whose schema has no text field streams nothing.

- `AnswerText` follows the `agent` events of `Flow.stream(agent_events=True)` and gives each piece of a
  node's answer text (`chainreact chat` prints them);
- `text_deltas` turns such a stream into the default one (the agent's events mapped as without
  `agent_events`) plus `text_delta` events (`{"text"}`) whose texts never repeat one another, even when the
  answer is asked again after failing validation (the server streams them to HTTP clients), and with
  `keep_agent` the agent's own events as well.

The turn's `message` event stays the authority: it comes after a node's deltas with the complete text.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

from .events import FlowEvent, from_agent_event
from .node_steps import TEXT_FIELDS

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/"}


class FieldText:
    """The string value of the field `name` of a JSON object arriving in pieces, decoded incrementally.
    `feed(piece)` returns the text decoded by that piece (possibly empty, e.g. half an escape)."""

    def __init__(self, name: str):
        self._key = re.compile(r'"' + re.escape(name) + r'"\s*:\s*"')
        self._buf = ""
        self._pos = -1  # index in _buf of the next undecoded character of the value; -1: not found yet
        self.done = False
        self.text = ""

    def feed(self, piece: str) -> str:
        self._buf += piece
        if self.done:
            return ""
        if self._pos < 0:
            m = self._key.search(self._buf)
            if m is None:
                return ""
            self._pos = m.end()
        out: list[str] = []
        buf, pos = self._buf, self._pos
        while pos < len(buf):
            c = buf[pos]
            if c == '"':
                self.done = True
                break
            if c != "\\":
                out.append(c)
                pos += 1
                continue
            if pos + 1 >= len(buf):
                break  # the escape's second half has not arrived yet
            e = buf[pos + 1]
            if e != "u":
                out.append(_ESCAPES.get(e, e))
                pos += 2
                continue
            decoded = _unicode_escape(buf, pos)
            if decoded is None:
                break
            char, pos = decoded
            out.append(char)
        self._pos = pos
        text = "".join(out)
        self.text += text
        return text


def _unicode_escape(buf: str, pos: int) -> tuple[str, int] | None:
    """`\\uXXXX` (a surrogate pair when it is a high surrogate) at `pos`: (character, next position), or
    None while incomplete."""
    if pos + 6 > len(buf):
        return None
    try:
        code = int(buf[pos + 2:pos + 6], 16)
    except ValueError:
        return "\ufffd", pos + 6
    if 0xD800 <= code < 0xDC00:
        if pos + 12 > len(buf):
            return None
        if buf[pos + 6:pos + 8] == "\\u":
            try:
                low = int(buf[pos + 8:pos + 12], 16)
            except ValueError:
                low = 0
            if 0xDC00 <= low < 0xE000:
                return chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)), pos + 12
        return "\ufffd", pos + 6
    return chr(code), pos + 6


def text_field(schema: Any) -> str | None:
    """The output field whose string is the node's message (agent_node's rule), or None."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return None
    return next((n for n in TEXT_FIELDS if n in props), None)


def starts_answer(ev: Any) -> bool:
    """Whether the agent event `ev` starts a node's answer over: a new run of the node's own agent (the
    first, or a retry after an answer that did not validate), or its tool call (the text before it was a
    preamble, not the answer). A collaborator's events (a longer `path`) never do."""
    return ev.type in ("run_start", "tool_call") and len(ev.path) <= 1


class AnswerText:
    """The answer text of a turn's agent nodes from their agent events (`feed`), piece by piece."""

    def __init__(self, definition: Any):
        self.definition = definition
        self._fields: dict[str, FieldText | None] = {}  # agent node -> its answer field being decoded

    def feed(self, node: str, ev: Any) -> str:
        """The text that the agent event `ev` of `node` adds to the node's answer ("" for none). After
        `starts_answer(ev)` the pieces are a new answer's."""
        if starts_answer(ev):
            node_def = self.definition.node(node)
            field = text_field(getattr(getattr(node_def, "output", None), "schema_", None))
            self._fields[node] = FieldText(field) if field is not None else None
            return ""
        if ev.type != "text_delta" or len(ev.path) > 1:
            return ""
        decoder = self._fields.get(node)
        return decoder.feed(ev.text) if decoder is not None else ""


async def text_deltas(definition: Any, events: AsyncIterator[FlowEvent], *,
                      keep_agent: bool = False) -> AsyncIterator[FlowEvent]:
    """A turn streamed with `agent_events=True` (`events`) as the default stream's events plus
    `text_delta` events (`{"text"}`) with the pieces of each agent node's answer text as they arrive.
    `keep_agent`: each `agent` event is passed on too, after the `text_delta` it made and before its
    flow form (the server maps its tool calls and results as it does an agent's).

    A node's deltas since its last `message` only ever extend what they gave before: when an answer
    starts over (asked again after failing validation, or after a tool call), its text is given from
    where the earlier deltas stopped, and not at all if it differs from what they gave. The `message` that
    follows holds the complete text (usually the deltas joined; it is the one to keep when not).
    """
    answers = AnswerText(definition)
    given: dict[str, str] = {}  # node -> text given as deltas since its last message
    current: dict[str, str] = {}  # node -> the text of its answer being generated
    try:
        async for ev in events:
            if ev.type != "agent":
                if ev.type == "message" and ev.node is not None:
                    given.pop(ev.node, None)
                    current.pop(ev.node, None)
                yield ev
                continue
            node, aev = ev.node or "", ev.data["agent_event"]
            if starts_answer(aev):
                current[node] = ""
            piece = answers.feed(node, aev)
            if piece:
                text = current[node] = current.get(node, "") + piece
                before = given.get(node, "")
                if len(text) > len(before) and text.startswith(before):
                    given[node] = text
                    yield FlowEvent("text_delta", ev.node, {"text": text[len(before):]})
            if keep_agent:
                yield ev
            mapped = from_agent_event(aev, node)
            if mapped is not None:
                yield mapped
    finally:
        await events.aclose()  # type: ignore[attr-defined]


__all__ = ["AnswerText", "FieldText", "starts_answer", "text_deltas", "text_field"]
