"""Tool calling for the embedded model: the prompt, the grammar of one assistant turn, and its parsing.

SmolLM2-135M was not trained to call tools, so every assistant turn of a tool-bearing request is written
in a small line format that a worked example in the prompt teaches, and a grammar (grammar.py) makes
every sampled token fit it:

    call add {"a": 17, "b": 25}        a tool call: an offered tool's name, arguments valid for its schema
    answer: 17 + 25 is 42.             the answer, one line

A tool result goes back as a user turn `Result: 42`. Measured on the 20 bench tasks (bench/local_model.py,
docs/local-model.md), this shape beat the model's other options: JSON objects ({"tool_call": ...} /
{"response": ...}, llama.cpp's generic format) made it answer sums in its head, and llama-cpp-python's
`functions.add:` format made it call the tool again after every result.

`choice` is what the turn may be: "auto" (call or answer), "required" (a call), "answer", a tool name (a
call of that tool). The server (llama_entry.py) makes a turn that follows the user's message a call when
the request's tool_choice is "auto": asked without its tools, the model answers arithmetic wrongly
(17 + 25 = 32), and an agent offers it tools for exactly that. After a tool result it may answer or call
another tool; a call of a tool already called since the user's message becomes the answer instead
(calls_again). The worked example is not commutative (8 divided by 2), so it shows the numbers copied in
the question's order: with a multiplication example the model wrote subtract(15, 40) for "40 - 15".

Everything here is pure (no llama_cpp), so it is tested without the model.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Sequence
from typing import Any

from .grammar import GrammarBuilder, literal

CALL = "call "
ANSWER = "answer: "
ANSWER_ONLY = "answer"  # a turn_grammar choice: the answer, no call
MAX_ANSWER = 400  # characters: one line, not the essay a small model drifts into
FORMAT_NOTE = (
    "To call a tool, write: call <tool> {arguments as JSON}. You then get its result. "
    "To answer, write: answer: <your answer>. Always call a tool before you answer."
)
EXAMPLE = (
    "Example:\n"
    "user: What is 8 divided by 2?\n"
    'assistant: call divide {"a": 8, "b": 2}\n'
    "user: Result: 4\n"
    "assistant: answer: 8 divided by 2 is 4."
)


def _fn(tool: dict[str, Any]) -> dict[str, Any]:
    fn = tool.get("function") if tool.get("type", "function") == "function" else None
    return fn if isinstance(fn, dict) else {}


def tool_names(tools: Sequence[dict[str, Any]]) -> list[str]:
    return [str(_fn(t).get("name")) for t in tools if _fn(t).get("name")]


def tool_listing(tools: Sequence[dict[str, Any]]) -> str:
    """One line per tool: `- add(a, b): Add two numbers.`"""
    lines = []
    for t in tools:
        fn = _fn(t)
        if not fn.get("name"):
            continue
        params = fn.get("parameters") or {}
        names = ", ".join(params.get("properties") or {}) if isinstance(params, dict) else ""
        desc = " ".join(str(fn.get("description") or "").split())
        lines.append(f"- {fn['name']}({names})" + (f": {desc}" if desc else ""))
    return "\n".join(lines)


def text_of(content: Any) -> str:
    """A message content's text (a string, or the text parts of a list)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content)


def _args_text(raw: Any) -> str:
    """A call's arguments as compact one-line JSON (what the grammar makes the model write)."""
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return " ".join(raw.split())
    return json.dumps(raw, ensure_ascii=False, separators=(", ", ": "))


def schema_note(schema: dict[str, Any] | None) -> str:
    """What the answer must look like when the request asks for JSON (response_format): its fields."""
    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        return "Write the answer as JSON."
    kinds = {k: v.get("type", "any") if isinstance(v, dict) else "any" for k, v in props.items()}
    fields = ", ".join(f"{k} ({t})" for k, t in kinds.items())
    return f"Write the answer as a JSON object with the fields {fields}."


def render_prompt(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]],
                  answer_schema: dict[str, Any] | None = None) -> str:
    """The ChatML prompt for a tool-bearing request, ending where the assistant's turn starts.
    `answer_schema`: the request's response_format schema, if any (the answer is then JSON)."""
    turns: list[tuple[str, str]] = []
    system = [text_of(m.get("content")) for m in messages if m.get("role") in ("system", "developer")]
    head = "\n\n".join(s for s in system if s.strip())
    note = FORMAT_NOTE if answer_schema is None else f"{FORMAT_NOTE} {schema_note(answer_schema)}"
    guide = f"Tools:\n{tool_listing(tools)}\n\n{note}\n\n{EXAMPLE}"
    turns.append(("system", f"{head}\n\n{guide}" if head else guide))
    for m in messages:
        role = m.get("role")
        if role in ("system", "developer"):
            continue
        if role == "tool":
            turns.append(("user", f"Result: {text_of(m.get('content'))}"))
            continue
        if role == "assistant":
            text = text_of(m.get("content")).strip()
            lines = [f"{ANSWER}{' '.join(text.split())}"] if text else []
            for call in m.get("tool_calls") or []:
                fn = call.get("function") or {}
                lines.append(f"{CALL}{fn.get('name')} {_args_text(fn.get('arguments'))}")
            if lines:
                turns.append(("assistant", "\n".join(lines)))
            continue
        turns.append((str(role or "user"), text_of(m.get("content"))))
    body = "".join(f"<|im_start|>{role}\n{text}<|im_end|>\n" for role, text in turns)
    return body + "<|im_start|>assistant\n"


def turn_grammar(tools: Sequence[dict[str, Any]], choice: str = "auto",
                 answer_schema: dict[str, Any] | None = None) -> str:
    """GBNF for one assistant turn. `choice`: "auto", "required", "answer" (no call), or the name of the
    tool to call. With `answer_schema` (the request's response_format) the answer is JSON valid against it,
    one line, instead of free text: a flow node's output schema holds on this model too."""
    builder = GrammarBuilder()
    calls = []
    for t in tools if choice != ANSWER_ONLY else ():
        fn = _fn(t)
        name = fn.get("name")
        if not name or (choice not in ("auto", "required") and name != choice):
            continue
        args = builder.rule_for(fn.get("parameters") or {"type": "object"}, f"{name}-args")
        calls.append(builder.add(f"call-{name}", f"{literal(f'{CALL}{name} ')} {args}"))
    if not calls and choice not in ("auto", "required", ANSWER_ONLY):
        raise ValueError(f"tool_choice names {choice!r}, which is not among the offered tools")
    alternatives = list(calls)
    if choice in ("auto", ANSWER_ONLY) or not calls:
        if answer_schema is None:
            body = f'[^\\n] [^\\n]{{0,{MAX_ANSWER - 1}}}'
        else:
            body = builder.rule_for(answer_schema, "answer-json")
        alternatives.append(builder.add("answer", f"{literal(ANSWER)} {body}"))
    return builder.text(" | ".join(alternatives))


def parse_turn(text: str, tools: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The model's turn (as the grammar allows it) as an OpenAI assistant message: `content`, or
    `tool_calls` with one call. Text that is neither (no grammar, a cut-off) is returned as content."""
    stripped = text.strip()
    if stripped.startswith(CALL):
        name, _, args = stripped[len(CALL):].partition(" ")
        if name in tool_names(tools):
            try:
                json.loads(args)
            except ValueError:
                pass  # cut off by max_tokens: fall through, the text is the answer
            else:
                call = {"id": f"call_{secrets.token_hex(6)}", "type": "function",
                        "function": {"name": name, "arguments": args}}
                return {"role": "assistant", "content": None, "tool_calls": [call]}
    if stripped.startswith(ANSWER):
        stripped = stripped[len(ANSWER):].strip()
    return {"role": "assistant", "content": stripped}


def effective_choice(messages: Sequence[dict[str, Any]], tools: Sequence[dict[str, Any]] | None,
                     tool_choice: Any) -> str | None:
    """What the turn may be (see turn_grammar), or None for a request that offers no tools.

    OpenAI's rules (a missing tool_choice is "auto" when tools are given), except that an "auto" turn
    right after the user's message must call a tool (the module docstring says why)."""
    if not tools or tool_choice == "none":
        return None
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name")
        return str(name) if name else "required"
    if tool_choice == "required":
        return "required"
    last = next((m for m in reversed(messages) if m.get("role") not in ("system", "developer")), None)
    return "required" if last is not None and last.get("role") == "user" else "auto"


def calls_again(messages: Sequence[dict[str, Any]], message: dict[str, Any]) -> bool:
    """Whether `message` (a parsed turn) calls a tool that was already called since the user's last
    message. The embedded model then answers instead (llama_entry.py): its result is above, and this model
    does not chain a tool with itself sensibly. Measured: after add(50, 50) = 100 it went on with
    add(100, 50), add(150, 50), ... until maxStep, then answered 20; after other results it called the
    same tool with the same arguments again."""
    names = {(c.get("function") or {}).get("name") for c in message.get("tool_calls") or []}
    if not names:
        return False
    for m in reversed(messages):
        if m.get("role") == "user":
            return False
        if m.get("role") == "assistant" and any(
                (c.get("function") or {}).get("name") in names for c in m.get("tool_calls") or []):
            return True
    return False
