"""The embedded model's tool calling, without the model: prompt, grammar, parsing, the turn's choice.

The grammars are also compiled by llama.cpp's own parser when the `local` extra is installed (a grammar it
rejects would fail every tool call of the embedded model)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from chainreact.local import tool_prompt
from chainreact.local.grammar import GrammarBuilder, json_literal, literal
from chainreact.local.server import local_extra_available


def fn(name: str, params: dict[str, Any], desc: str = "") -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "description": desc, "parameters": params}}


NUM = {"type": "number"}
ADD = fn("add", {"type": "object", "properties": {"a": NUM, "b": NUM}, "required": ["a", "b"]},
         "Add two numbers\nand return their sum.")
ODD = fn("odd", {"type": "object", "properties": {
    "mode": {"enum": ["fast", "slow"]},
    "tags": {"type": "array", "items": {"type": "string"}},
    "where": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": ["integer", "null"]}},
              "required": ["x"]},
    "any": {},
    "either": {"anyOf": [{"type": "boolean"}, {"const": "auto"}]},
}})
SYSTEM = {"role": "system", "content": "You add."}
USER = {"role": "user", "content": "What is 17 + 25?"}
CALL = {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{ "a" : 17, "b": 25 }'}}


def test_prompt_lists_the_tools_teaches_the_format_and_renders_calls_and_results() -> None:
    msgs = [SYSTEM, USER, {"role": "assistant", "content": None, "tool_calls": [CALL]},
            {"role": "tool", "tool_call_id": "c1", "content": "42"}]
    prompt = tool_prompt.render_prompt(msgs, [ADD])
    assert prompt.startswith("<|im_start|>system\nYou add.\n\nTools:\n- add(a, b): Add two numbers and")
    assert tool_prompt.EXAMPLE in prompt
    # the call as the grammar makes the model write it (canonical JSON), the result as a user turn
    assert ('<|im_start|>assistant\ncall add {"a": 17, "b": 25}<|im_end|>\n'
            "<|im_start|>user\nResult: 42<|im_end|>\n<|im_start|>assistant\n") in prompt
    assert "&#34;" not in prompt  # no HTML escaping (llama-cpp-python's template did that)
    # the example is not commutative: it shows the numbers copied in the question's order
    assert 'call divide {"a": 8, "b": 2}' in tool_prompt.EXAMPLE


def test_grammar_of_a_turn() -> None:
    auto = tool_prompt.turn_grammar([ADD], "auto")
    assert auto.splitlines()[0] == "root ::= call-add | answer"
    assert 'call-add ::= "call add " add-args' in auto
    assert 'add-args ::= "{" "\\"a\\": " number ", " "\\"b\\": " number "}"' in auto
    assert tool_prompt.turn_grammar([ADD, ODD], "required").splitlines()[0] == "root ::= call-add | call-odd"
    assert tool_prompt.turn_grammar([ADD, ODD], "odd").splitlines()[0] == "root ::= call-odd"
    assert_closed(tool_prompt.turn_grammar([ADD, ODD], "auto"))
    answer_only = tool_prompt.turn_grammar([ADD, ODD], tool_prompt.ANSWER_ONLY)
    assert answer_only.splitlines()[0] == "root ::= answer" and "call-" not in answer_only
    with pytest.raises(ValueError, match="'sub'"):
        tool_prompt.turn_grammar([ADD], "sub")


OUTPUT = {"type": "object", "properties": {"response": {"type": "string"}, "resolved": {"type": "boolean"}},
          "required": ["response", "resolved"]}


def test_a_requested_json_answer_is_written_from_its_schema() -> None:
    # a flow node with tools and an output.schema: the answer branch is JSON of that schema, not free text
    g = tool_prompt.turn_grammar([ADD], "auto", OUTPUT)
    rules = dict(line.split(" ::= ", 1) for line in g.splitlines())
    assert rules["root"] == "call-add | answer"
    assert rules["answer"] == '"answer: " answer-json'
    assert rules["answer-json"] == ('"{" "\\"response\\": " string ", " "\\"resolved\\": " boolean "}"')
    assert "[^\\n]" not in g  # no free-text line left
    assert_closed(g)
    # the prompt says so, and the answer parses to the JSON text the schema check reads
    prompt = tool_prompt.render_prompt([SYSTEM, USER], [ADD], OUTPUT)
    assert "answer as a JSON object with the fields response (string), resolved (boolean)" in prompt
    msg = tool_prompt.parse_turn('answer: {"response": "Done.", "resolved": true}', [ADD])
    assert json.loads(msg["content"]) == {"response": "Done.", "resolved": True}
    # without a schema nothing changes
    assert "answer-json" not in tool_prompt.turn_grammar([ADD], "auto")


def test_answer_schema_of_a_response_format() -> None:
    from chainreact.local.llama_entry import answer_schema

    assert answer_schema({"type": "json_object", "schema": OUTPUT}) == OUTPUT
    assert answer_schema({"type": "json_schema", "json_schema": {"name": "o", "schema": OUTPUT}}) == OUTPUT
    assert answer_schema({"type": "json_object"}) == {}
    assert answer_schema({"type": "text"}) is None and answer_schema(None) is None


def test_schema_rules() -> None:
    b = GrammarBuilder()
    name = b.rule_for(ODD["function"]["parameters"], "odd-args")
    text = b.text(name)
    # nothing required: any in-order subset, without a leading separator
    assert re.search(r'^odd-args ::= "\{" \(.* \| .*\)\? "\}"$', text, re.M)
    assert 'odd-args-mode ::= "\\"fast\\"" | "\\"slow\\""' in text
    assert 'odd-args-where ::= "{" "\\"x\\": " integer (", " "\\"y\\": " odd-args-where-y)? "}"' in text
    assert "value ::= " in text and "string ::= " in text  # `any` falls back to any JSON value
    assert json_literal("auto") == '"\\"auto\\""' and literal('a"\n') == '"a\\"\\n"'
    assert_closed(text)


def assert_closed(grammar: str) -> None:
    """Every rule a grammar refers to is defined in it."""
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    for body in rules.values():
        bare = re.sub(r'"(?:\\.|[^"\\])*"|\[(?:\\.|[^\]\\])*\]|\{[0-9,]*\}', " ", body)
        for ref in re.findall(r"[a-z][a-z0-9-]*", bare):
            assert ref in rules, f"rule {ref!r} is used but not defined in:\n{grammar}"


@pytest.mark.skipif(bool(local_extra_available()), reason="needs the 'local' extra (llama_cpp)")
def test_llama_cpp_compiles_the_grammars() -> None:
    from llama_cpp.llama_grammar import LlamaGrammar

    for tools, choice in (([ADD], "auto"), ([ADD, ODD], "required"), ([ODD], "odd")):
        LlamaGrammar.from_string(tool_prompt.turn_grammar(tools, choice), verbose=False)
    LlamaGrammar.from_string(tool_prompt.turn_grammar([ADD], "auto", OUTPUT), verbose=False)
    free = {"type": "function", "function": {"name": "free", "parameters": {
        "type": "object", "properties": {"meta": {"type": "object"}, "rows": {"type": "array"}},
        "required": ["meta", "rows"]}}}
    LlamaGrammar.from_string(tool_prompt.turn_grammar([free], "auto"), verbose=False)


def test_parse_turn() -> None:
    msg = tool_prompt.parse_turn('call add {"a": 17, "b": 25}', [ADD])
    (call,) = msg["tool_calls"]
    assert msg["content"] is None and call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"] == {"name": "add", "arguments": '{"a": 17, "b": 25}'}
    assert tool_prompt.parse_turn("answer: 17 + 25 is 42.", [ADD]) == {"role": "assistant",
                                                                       "content": "17 + 25 is 42."}
    # cut off by max_tokens, or a tool that is not offered: text, never a broken call
    assert tool_prompt.parse_turn('call add {"a": 1', [ADD])["content"] == 'call add {"a": 1'
    assert "tool_calls" not in tool_prompt.parse_turn('call sub {"a": 1}', [ADD])


@pytest.mark.parametrize(("choice", "last", "expected"), [
    ("auto", USER, "required"),  # right after the user's message: a call
    (None, USER, "required"),  # a missing tool_choice is "auto" (OpenAI)
    ("auto", {"role": "tool", "tool_call_id": "c1", "content": "42"}, "auto"),  # after a result: either
    ("required", {"role": "tool", "tool_call_id": "c1", "content": "42"}, "required"),
    ({"type": "function", "function": {"name": "add"}}, USER, "add"),
    ("none", USER, None),
])
def test_effective_choice(choice: Any, last: dict[str, Any], expected: str | None) -> None:
    assert tool_prompt.effective_choice([SYSTEM, USER, last], [ADD], choice) == expected
    assert tool_prompt.effective_choice([SYSTEM, USER], [], choice) is None  # no tools, no tool turn


def test_rendered_call_is_what_the_grammar_allows() -> None:
    # The history shows the model its own calls in exactly the layout it is made to write.
    args = json.loads(CALL["function"]["arguments"])
    turn = {"role": "assistant", "content": "", "tool_calls": [CALL]}
    shown = tool_prompt.render_prompt([USER, turn], [ADD])
    assert f"call add {json.dumps(args, separators=(', ', ': '))}" in shown


def test_calls_again_since_the_users_message() -> None:
    result = {"role": "tool", "tool_call_id": "c1", "content": "42"}
    earlier = [SYSTEM, USER, {"role": "assistant", "content": "", "tool_calls": [CALL]}, result]
    again = tool_prompt.parse_turn('call add {"a": 42, "b": 25}', [ADD])  # other arguments: still again
    other = tool_prompt.parse_turn('call odd {"mode": "fast"}', [ADD, ODD])
    answer = tool_prompt.parse_turn("answer: 42", [ADD])
    assert tool_prompt.calls_again(earlier, again)
    assert not tool_prompt.calls_again(earlier, other)  # another tool may follow
    assert not tool_prompt.calls_again(earlier, answer)
    # a new user message starts afresh
    assert not tool_prompt.calls_again([*earlier, {"role": "assistant", "content": "42"},
                                        {"role": "user", "content": "And 42 + 25?"}], again)


def test_an_object_without_properties_is_still_an_object() -> None:
    # ask_user's `schema` ({"type": "object"}): the model wrote a string there (the team flow's desk,
    # "schema": "20 + 22"), the call was refused and the 135M model answered with the error text.
    from chainreact.agent.interrupts import ASK_USER_PARAMETERS

    b = GrammarBuilder()
    assert b.rule_for({"type": "object"}, "x") == "object" and b.rule_for({}, "y") == "value"
    assert re.search(r'^object ::= "\{" .*\{0,7\}', b.text("x"), re.M)  # at most 8 members
    # ... and given that freedom in an optional property, it wrote on until max_tokens ({"type": "math",
    # "answer_type_name_type_type_...): an optional free-form property is left out of the call.
    text = b.text(b.rule_for(ASK_USER_PARAMETERS, "ask-args"))
    assert 'ask-args ::= "{" "\\"question\\": " string "}"' in text, text
    assert b.rule_for({"type": "object", "properties": {"meta": {}}}, "bare") == "bare"
    assert b.rules["bare"] == '"{}"'
    required = {"type": "object", "properties": {"meta": {"type": "object"}}, "required": ["meta"]}
    text = b.text(b.rule_for(required, "kept"))
    assert 'kept ::= "{" "\\"meta\\": " object "}"' in text
    assert_closed(text)
