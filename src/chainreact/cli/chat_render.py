"""How `chainreact chat` shows a turn's events: answers streamed as they are generated, tool activity on
stderr as it runs.

An agent node's answer is a JSON object (its `output.schema`); the user sees its text field (the rule of
chainreact.flows.agent_node: `response`, else `answer`, `message`, `reply` or `text`, the first the schema
declares). `FieldText` decodes that field's string value out of the JSON while the model is still writing
it, so the text appears token by token instead of as raw JSON. The turn's `message` event is the
authority: a streamed text that turns out different (e.g. the answer failed validation and was asked
again) is followed by the real message.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any

from .common import write

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
    from ..flows.agent_node import TEXT_FIELDS

    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        return None
    return next((n for n in TEXT_FIELDS if n in props), None)


def _short(text: str, limit: int = 200) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


class TurnPrinter:
    """Writes one turn's FlowEvents: `node: text` lines on stdout (an agent's streamed as it arrives),
    tool calls, results, warnings and the flow's end on stderr."""

    def __init__(self, flow: Any, out: Any = None, err: Any = None):
        self.flow = flow
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._open = False  # stdout holds a line without its newline
        self._streams: dict[str, FieldText] = {}  # agent node -> its answer field being decoded
        self._shown: dict[str, str] = {}  # agent node -> the text streamed for it this run

    def _newline(self) -> None:
        if self._open:
            write("\n", self.out)
            self._open = False

    def _line(self, node: str | None, text: str) -> None:
        self._newline()
        write(f"{node}: {text}" + ("" if text.endswith("\n") else "\n"), self.out)

    def _note(self, text: str) -> None:
        self._newline()
        write(text + "\n", self.err)

    def show(self, ev: Any) -> None:
        t, node = ev.type, ev.node
        if t == "agent":
            self._agent(node, ev.data["agent_event"])
        elif t == "message":
            content = ev.data["content"]
            streamed = self._shown.pop(node, None) if node is not None else None
            if streamed is not None and streamed == content:
                self._newline()  # already on screen
            else:
                self._line(node, content)
        elif t == "output":
            node_def = self.flow.definition.node(node) if node else None
            schema = getattr(getattr(node_def, "output", None), "schema_", None)
            if schema is not None and text_field(schema) is None:
                # No text field: the answer is only data; show it rather than nothing.
                self._note(f"  [{node} output] {json.dumps(ev.data['output'], ensure_ascii=False)}")
        elif t == "warning":
            self._note(f"warning: {ev.data['message']}")
        elif t == "ignored":
            self._note(f"  [{node}: {ev.data.get('reason', 'ignored')}]")
        elif t == "turn_end" and ev.data.get("ended"):
            self._note("[the flow ended; the next message starts it again]")

    def _agent(self, node: str | None, ev: Any) -> None:
        name = node or ""
        t = ev.type
        indent = "  " * max(len(getattr(ev, "path", ()) or ()), 1)
        if t == "run_start" and len(ev.path) <= 1:
            # A new run of the node (the first, or a retry after an answer that did not validate).
            if name in self._shown:
                self._note(f"  [{name}: the answer did not match the output schema; asking again]")
                self._shown.pop(name, None)
            self._start_stream(name)
        elif t == "text_delta" and len(ev.path) <= 1:
            fs = self._streams.get(name)
            if fs is None:
                return
            piece = fs.feed(ev.text)
            if piece:
                if name not in self._shown:
                    self._newline()
                    write(f"{name}: ", self.out)
                    self._shown[name] = ""
                write(piece, self.out)
                self._shown[name] += piece
                self._open = True
        elif t == "tool_call":
            if len(ev.path) <= 1:
                self._start_stream(name)  # text before a tool call was a preamble, not the answer
            self._note(f"{indent}→ {ev.call.name}({_short(ev.call.arguments)})")
        elif t == "tool_result":
            mark = "✗" if ev.is_error else "←"
            self._note(f"{indent}{mark} {ev.name}: {_short(ev.content)}")
        elif t == "run_start":  # nested: a collaborator agent starts (multiAgentCollaboration)
            self._note(f"{indent[2:]}» {ev.agent}: {_short(str(ev.input or ''), 120)}")
        elif t == "final" and len(ev.path) > 1:
            self._note(f"{indent[2:]}« {ev.agent}: {_short(ev.content, 120)}")
        elif t in ("retry", "failover"):
            self._note(f"{indent}! {t}: {getattr(ev, 'error', '')}")
        elif t == "error":
            self._note(f"error: {ev.error}")

    def _start_stream(self, name: str) -> None:
        node_def = self.flow.definition.node(name)
        field = text_field(getattr(getattr(node_def, "output", None), "schema_", None))
        if field is None:
            self._streams.pop(name, None)
        else:
            self._streams[name] = FieldText(field)
        if name in self._shown and self._open:
            self._newline()
        self._shown.pop(name, None)

    def finish(self) -> None:
        self._newline()


__all__ = ["FieldText", "TurnPrinter", "text_field"]
