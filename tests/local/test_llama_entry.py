"""The message repairs of the embedded server's chat format (pure functions; the real server is in
test_llama_e2e.py)."""

from __future__ import annotations

from typing import Any

from chainreact.local.llama_entry import prepare_messages


class Safe(str):
    """Stands for markupsafe.Markup: a str subclass that marks 'no escaping needed'."""


CALL: dict[str, Any] = {
    "id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'}
}
HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": 'Be "brief".'},
    {"role": "user", "content": "1+2?"},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "3"},
]


def test_tool_results_become_user_turns_naming_the_call() -> None:
    out = prepare_messages(HISTORY)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[3]["content"] == 'Result of add({"a": 1, "b": 2}): 3'


def test_strings_are_marked_safe_and_input_is_not_mutated() -> None:
    out = prepare_messages(HISTORY, Safe)
    assert isinstance(out[0]["content"], Safe) and out[0]["content"] == 'Be "brief".'
    assert isinstance(out[2]["tool_calls"][0]["function"]["arguments"], Safe)
    assert isinstance(out[3]["content"], Safe)
    assert type(HISTORY[0]["content"]) is str and type(CALL["function"]["arguments"]) is str
    assert HISTORY[3]["role"] == "tool"


def test_without_tools_bare_calls_are_dropped_but_text_is_kept() -> None:
    with_text: dict[str, Any] = {"role": "assistant", "content": "Let me add.", "tool_calls": [CALL]}
    out = prepare_messages([*HISTORY[:2], with_text, HISTORY[3]], with_tools=False)
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user"]
    assert out[2]["content"] == "Let me add."
    out = prepare_messages(HISTORY, with_tools=False)
    assert [m["role"] for m in out] == ["system", "user", "user"]
    assert out[2]["content"] == 'Result of add({"a": 1, "b": 2}): 3'


def test_unknown_call_id_list_content_and_missing_content() -> None:
    msgs: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": "zz", "name": "lookup", "content": [{"type": "text", "text": "x"}]},
        {"role": "tool", "tool_call_id": "zz", "content": None},
        {"role": "assistant", "tool_calls": [CALL]},  # content missing stays missing (server answers 500)
    ]
    out = prepare_messages(msgs)
    assert out[0]["content"] == "Result of lookup: x"
    assert out[1]["content"] == "Result of the tool: "
    assert "content" not in out[2]
