"""FieldText: a JSON string field decoded while the JSON arrives in pieces, split at every position."""

from __future__ import annotations

import json

import pytest

from chainreact.cli.chat_render import FieldText, text_field

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
