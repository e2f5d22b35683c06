"""FieldText (chainreact.flows.answer_stream): a JSON string field decoded while the JSON arrives in pieces,
split at every position; and how `chainreact chat` prints a turn."""

from __future__ import annotations

import json

import pytest

from chainreact.flows.answer_stream import FieldText, text_field

VALUES = ["plain", 'quote " and \\ backslash', "line\nbreak\ttab", "é ü ß", "emoji 🎉 pair", "a/b", ""]


@pytest.mark.parametrize("value", VALUES)
@pytest.mark.parametrize("ascii_only", [True, False])
def test_decodes_the_field_split_anywhere(value: str, ascii_only: bool) -> None:
    doc = json.dumps({"note": "response: \"x\"", "response": value, "resolved": True},
                     ensure_ascii=ascii_only)
    for cut in range(len(doc) + 1):
        for step in (1, 3):
            ft = FieldText("response")
            pieces = [doc[:cut]] + [doc[i:i + step] for i in range(cut, len(doc), step)]
            out = "".join(ft.feed(p) for p in pieces)
            assert out == value, (cut, step)
            assert ft.done and ft.text == value


def test_waits_for_the_key_and_ignores_other_fields() -> None:
    ft = FieldText("answer")
    assert ft.feed('{"response": "not this", "ans') == ""
    assert ft.feed('wer"  :  "yes') == "yes"
    assert ft.feed('!", "answer": "again"}') == "!"
    assert ft.text == "yes!"


def test_text_field_follows_the_agent_node_rule() -> None:
    assert text_field({"properties": {"text": {}, "answer": {}}}) == "answer"
    assert text_field({"properties": {"score": {}}}) is None
    assert text_field(None) is None


def test_printer_nests_a_collaborators_events_and_streams_only_the_top_agent() -> None:
    import io
    from typing import Any

    from chainreact.cli.chat_render import TurnPrinter
    from chainreact.flows import Flow, FlowEvent
    from chainreact.types.events import Final, RunStart, TextDelta, ToolCallEvent, ToolResultEvent
    from chainreact.types.messages import ToolCall

    flow = Flow.from_dict({"id": "f", "nodes": [{
        "name": "boss", "type": "aiagent", "start": True, "userMessage": "{{userInput}}",
        "output": {"schema": {"type": "object", "properties": {"response": {"type": "string"}}}}}]})
    out, err = io.StringIO(), io.StringIO()
    p = TurnPrinter(flow, out, err)
    top, sub = ("boss",), ("boss", "billing")

    def agent(ev: Any) -> FlowEvent:
        return FlowEvent("agent", "boss", {"agent_event": ev})

    for ev in [RunStart(path=top, agent="boss", input="hi"),
               ToolCallEvent(path=top, agent="boss", call=ToolCall("c1", "billing", '{"q": "refund?"}')),
               RunStart(path=sub, agent="billing", input="refund?"),
               TextDelta(path=sub, agent="billing", text='{"response": "not mine"}'),
               ToolCallEvent(path=sub, agent="billing", call=ToolCall("c2", "ledger", "{}")),
               ToolResultEvent(path=sub, agent="billing", call_id="c2", name="ledger", content="ok"),
               Final(path=sub, agent="billing", content="Refund allowed."),
               ToolResultEvent(path=top, agent="boss", call_id="c1", name="billing",
                               content="Refund allowed."),
               TextDelta(path=top, agent="boss", text='{"response": "Yes, '),
               TextDelta(path=top, agent="boss", text='refunded."}')]:
        p.show(agent(ev))
    p.show(FlowEvent("message", "boss", {"role": "assistant", "content": "Yes, refunded."}))
    p.finish()
    assert out.getvalue() == "boss: Yes, refunded.\n"  # streamed once, the collaborator's text not shown
    assert err.getvalue().splitlines() == [
        '  → billing({"q": "refund?"})',
        "  » billing: refund?",
        "    → ledger({})",
        "    ← ledger: ok",
        "  « billing: Refund allowed.",
        "  ← billing: Refund allowed.",
    ]
