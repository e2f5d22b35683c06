"""GBNF grammars (llama.cpp's grammar language) for tool calls, built from the tools' JSON schemas.

The embedded model is too small to write a tool call reliably by itself; llama.cpp can constrain each
sampled token to a grammar, so whatever the model picks, the output parses. This module turns the
offered tools into one grammar for a whole assistant turn (tool_prompt.py decides the turn's shape) and
each tool's `parameters` schema into a rule for its arguments.

The JSON it allows is one canonical layout: no optional whitespace except one space after `:` and `,`,
properties in schema order (required first). Free whitespace is where a tiny model loops (newline after
newline until max_tokens); one layout also keeps the output the same from build to build. Strings and
numbers are bounded in length for the same reason.

Supported schema keywords: type (string, number, integer, boolean, null, object, array, or a list of
types), enum, const, properties, required, items, anyOf/oneOf. An object without properties is any JSON
object; anything else (a `$ref`, a pattern) falls back to "any JSON value"; an optional property that
would be either is left out of the calls the grammar allows (given the freedom, the model wrote on until
max_tokens). So a tool with an unusual schema still gets valid JSON, and chainreact's own argument
validation (agent/tool_exec.py) has the last word.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_STRING = 200  # characters in one string value
MAX_DIGITS = 15  # digits before the decimal point (and after it)
MAX_MEMBERS = 8  # members of a free-form object, items of a free-form array

# Shared rules, referenced by name from the generated ones.
BASE_RULES: dict[str, str] = {
    "char": r'[^"\\\x00-\x1f] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4})',
    "string": f'"\\"" char{{0,{MAX_STRING}}} "\\""',
    "integer": f'"-"? ("0" | [1-9] [0-9]{{0,{MAX_DIGITS - 1}}})',
    "number": f'integer ("." [0-9]{{1,{MAX_DIGITS}}})?',
    "boolean": '"true" | "false"',
    "null": '"null"',
    "value": "object | array | string | number | boolean | null",
    "object": f'"{{" (string ": " value (", " string ": " value){{0,{MAX_MEMBERS - 1}}})? "}}"',
    "array": f'"[" (value (", " value){{0,{MAX_MEMBERS - 1}}})? "]"',
}
FREE_FORM = ("value", "object")  # rules that let the model write any JSON (object)

_NAME_OK = re.compile(r"[^a-zA-Z0-9-]+")


def literal(text: str) -> str:
    """`text` as a GBNF string literal."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\r":
            out.append("\\r")
        elif ch == "\t":
            out.append("\\t")
        elif ord(ch) < 0x20:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def json_literal(value: Any) -> str:
    """A JSON value written in the canonical layout, as a GBNF literal (for enum and const)."""
    return literal(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))


class GrammarBuilder:
    """Collects named rules; `rule_for(schema, hint)` returns the name of a rule matching `schema`."""

    def __init__(self) -> None:
        self.rules: dict[str, str] = {}
        self._used_base: set[str] = set()

    def _name(self, hint: str) -> str:
        base = _NAME_OK.sub("-", hint).strip("-").lower() or "r"
        name, n = base, 1
        while name in self.rules or name in BASE_RULES or name == "root":
            n += 1
            name = f"{base}-{n}"
        return name

    def add(self, hint: str, body: str) -> str:
        name = self._name(hint)
        self.rules[name] = body
        return name

    def base(self, name: str) -> str:
        self._used_base.add(name)
        return name

    def rule_for(self, schema: Any, hint: str) -> str:
        if not isinstance(schema, dict):
            return self.base("value")
        if "const" in schema:
            return self.add(hint, json_literal(schema["const"]))
        if isinstance(schema.get("enum"), list) and schema["enum"]:
            return self.add(hint, " | ".join(json_literal(v) for v in schema["enum"]))
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options:
                names = [self.rule_for(o, f"{hint}-{i}") for i, o in enumerate(options)]
                return self.add(hint, " | ".join(names))
        typ = schema.get("type")
        if isinstance(typ, list):
            names = [self.rule_for({**schema, "type": t}, f"{hint}-{t}") for t in typ]
            return self.add(hint, " | ".join(names))
        if typ in ("string", "number", "integer", "boolean", "null"):
            return self.base(typ)
        if typ == "array" or (typ is None and "items" in schema):
            item = self.rule_for(schema.get("items"), f"{hint}-item")
            return self.add(hint, f'"[" ({item} (", " {item})*)? "]"')
        props = schema.get("properties")
        if (typ == "object" or typ is None) and isinstance(props, dict) and props:
            return self._object(schema, props, hint)
        # An object of any shape is still an object: ask_user's `schema` written as a string (the model
        # copying the question into it) was a refused call, and the small model answered with the error.
        return self.base("object" if typ == "object" else "value")

    def _object(self, schema: dict[str, Any], props: dict[str, Any], hint: str) -> str:
        required = [k for k in props if k in set(schema.get("required") or ())]
        optional = [k for k in props if k not in required]
        parts = []
        for key in required + optional:
            value = self.rule_for(props[key], f"{hint}-{key}")
            if key not in required and value in FREE_FORM:
                # Left out: free to write anything there, the model wrote on until max_tokens (ask_user's
                # optional `schema`: {"type": "math", "answer_type_name_type_type_...), and the cut-off
                # call became the answer.
                continue
            parts.append((key in required, f"{literal(json.dumps(key, ensure_ascii=False) + ': ')} {value}"))
        if not parts:
            return self.add(hint, '"{}"')
        if not required:
            # Nothing is required: any in-order subset, so the first one present has no separator before it.
            alts = [" ".join([p] + [f'(", " {q})?' for _, q in parts[i + 1:]])
                    for i, (_, p) in enumerate(parts)]
            body = f" ({' | '.join(alts)})?"
        else:
            # The required ones in order, each optional one after them (a separator always precedes it).
            body = ' ", " '.join(p for req, p in parts if req)
            body = " " + body + "".join(f' (", " {p})?' for req, p in parts if not req)
        return self.add(hint, f'"{{"{body} "}}"')

    def text(self, root: str) -> str:
        """The whole grammar: `root ::= <root>`, the generated rules, and the shared rules they use."""
        lines = [f"root ::= {root}"]
        lines += [f"{name} ::= {body}" for name, body in self.rules.items()]
        needed = self._base_closure()
        lines += [f"{name} ::= {BASE_RULES[name]}" for name in BASE_RULES if name in needed]
        return "\n".join(lines) + "\n"

    def _base_closure(self) -> set[str]:
        needed, todo = set(), list(self._used_base)
        for body in self.rules.values():
            todo += [n for n in BASE_RULES if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", body)]
        while todo:
            name = todo.pop()
            if name in needed:
                continue
            needed.add(name)
            body = BASE_RULES[name]
            todo += [n for n in BASE_RULES if re.search(rf"(?<![\w-]){re.escape(n)}(?![\w-])", body)]
        return needed
