"""How `chainreact chat` shows a turn's events: answers streamed as they are generated, tool activity on
stderr as it runs.

An agent node's answer is a JSON object (its `output.schema`); the user sees its text field, decoded out
of the JSON while the model is still writing it (chainreact.flows.answer_stream, which the server's
streams use too), so the text appears token by token instead of as raw JSON. The turn's `message` event
is the authority: a streamed text that turns out different (e.g. the answer failed validation and was
asked again) is followed by the real message.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from ..flows.answer_stream import AnswerText, starts_answer, text_field
from .common import write


def _short(text: str, limit: int = 200) -> str:
    text = text.replace("\n", "\\n")
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit} more chars]"


def activity_line(ev: Any, indent: str) -> str | None:
    """The stderr line of an agent event that is activity, not answer: a tool call `→ name(args)`, its
    result `← name: result` (✗ for an error), a collaborator agent's start `»` and answer `«`, a retry or
    failover; None for other events. The flow chat and the agent chat (chat_agent.py) both show these."""
    t = ev.type
    if t == "tool_call":
        return f"{indent}→ {ev.call.name}({_short(ev.call.arguments)})"
    if t == "tool_result":
        mark = "✗" if ev.is_error else "←"
        return f"{indent}{mark} {ev.name}: {_short(ev.content)}"
    if t == "run_start" and len(ev.path) > 1:  # a collaborator agent starts (multiAgentCollaboration)
        return f"{indent[2:]}» {ev.agent}: {_short(str(ev.input or ''), 120)}"
    if t == "final" and len(ev.path) > 1:
        return f"{indent[2:]}« {ev.agent}: {_short(ev.content, 120)}"
    if t in ("retry", "failover"):
        return f"{indent}! {t}: {getattr(ev, 'error', '')}"
    return None


class TurnPrinter:
    """Writes one turn's FlowEvents: `node: text` lines on stdout (an agent's streamed as it arrives),
    tool calls, results, warnings and the flow's end on stderr."""

    def __init__(self, flow: Any, out: Any = None, err: Any = None):
        self.flow = flow
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self._open = False  # stdout holds a line without its newline
        self._answers = AnswerText(flow.definition)
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
        if starts_answer(ev):
            if t == "run_start" and name in self._shown:
                # A new run of the node: a retry after an answer that did not validate.
                self._note(f"  [{name}: the answer did not match the output schema; asking again]")
            elif name in self._shown and self._open:
                self._newline()  # text before a tool call was a preamble, not the answer
            self._shown.pop(name, None)
        piece = self._answers.feed(name, ev)
        if piece:
            if name not in self._shown:
                self._newline()
                write(f"{name}: ", self.out)
                self._shown[name] = ""
            write(piece, self.out)
            self._shown[name] += piece
            self._open = True
        elif (note := activity_line(ev, indent)) is not None:
            self._note(note)
        elif t == "error":
            self._note(f"error: {ev.error}")

    def finish(self) -> None:
        self._newline()


__all__ = ["TurnPrinter", "activity_line"]
