"""A small Go text/template for the `text/template` node: `{{ .a.b }}`, pipelines (`.x | escape`,
`printf "%v" .x`), `if`/`else`/`end`, `range`/`end`, `{{-`/`-}}` trimming. Values print as Go prints them
(maps as `map[k:v]`, missing values as `<no value>`)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

_ACTION = re.compile(r"\{\{(-\s)?(.*?)(\s-)?\}\}", re.S)
_TOKEN = re.compile(r'\s*("(?:\\.|[^"\\])*"|`[^`]*`|\||\$?\.[\w.]*|\$\w*|[\w.+-]+)')


def _escape(s: Any) -> str:
    return (go_print(s).replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
            .replace("\r", "\\r").replace("\t", "\\t"))


def go_print(v: Any) -> str:
    if v is None:
        return "<no value>"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{go_print(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(go_print(x) for x in v) + "]"
    return str(v)


def _printf(fmt: str, *args: Any) -> str:
    conv = re.sub(r"%[-+# 0-9.]*[vdsqtfgex]", "%s", fmt)
    return conv % tuple(go_print(a) for a in args)


FUNCS: dict[str, Callable[..., Any]] = {
    "escape": _escape,
    "upper": lambda s: go_print(s).upper(),
    "lower": lambda s: go_print(s).lower(),
    "len": lambda v: len(v) if v is not None else 0,
    "print": lambda *a: "".join(go_print(x) for x in a),
    "printf": _printf,
    "eq": lambda a, *b: any(a == x for x in b),
    "ne": lambda a, b: a != b,
    "not": lambda a: not _truthy(a),
    "and": lambda *a: next((x for x in a if not _truthy(x)), a[-1] if a else None),
    "or": lambda *a: next((x for x in a if _truthy(x)), a[-1] if a else None),
    "index": lambda v, *k: _index(v, k),
    "lt": lambda a, b: a < b, "le": lambda a, b: a <= b, "gt": lambda a, b: a > b, "ge": lambda a, b: a >= b,
}


def _index(v: Any, keys: tuple[Any, ...]) -> Any:
    for k in keys:
        v = v[k] if isinstance(v, list) else (v or {}).get(k)
    return v


def _truthy(v: Any) -> bool:
    return bool(v) if v is not None else False


class GoTemplate:
    def __init__(self, text: str):
        self.nodes = self._parse(self._lex(text))

    @staticmethod
    def _lex(text: str) -> list[tuple[str, str]]:
        out: list[tuple[str, str]] = []
        pos = 0
        for m in _ACTION.finditer(text):
            lit = text[pos:m.start()]
            if m.group(1):
                lit = lit.rstrip()
            if out and out[-1][0] == "trim":
                out.pop()
                lit = lit.lstrip()
            out.append(("text", lit))
            out.append(("action", m.group(2).strip()))
            if m.group(3):
                out.append(("trim", ""))
            pos = m.end()
        lit = text[pos:]
        if out and out[-1][0] == "trim":
            out.pop()
            lit = lit.lstrip()
        out.append(("text", lit))
        return out

    def _parse(self, toks: list[tuple[str, str]]) -> list[Any]:
        stack: list[list[Any]] = [[]]
        blocks: list[Any] = []
        for kind, val in toks:
            if kind == "text":
                if val:
                    stack[-1].append(("text", val))
                continue
            word = val.split(None, 1)[0] if val else ""
            if val.startswith("/*"):
                continue
            if word in ("if", "range", "with"):
                block: list[Any] = [word, _pipeline(val[len(word):]), [], []]
                stack[-1].append(("block", block))
                blocks.append(block)
                stack.append(block[2])
            elif word == "else":
                if not blocks:
                    raise ValueError("{{else}} without {{if}}/{{range}}")
                stack.pop()
                stack.append(blocks[-1][3])
            elif word == "end":
                if not blocks:
                    raise ValueError("{{end}} without a block")
                stack.pop()
                blocks.pop()
            else:
                stack[-1].append(("out", _pipeline(val)))
        if blocks:
            raise ValueError(f"unclosed {{{{{blocks[-1][0]}}}}}")
        return stack[0]

    def render(self, data: Any) -> str:
        out: list[str] = []
        self._exec(self.nodes, data, data, out)
        return "".join(out)

    def _exec(self, nodes: list[Any], dot: Any, root: Any, out: list[str]) -> None:
        for kind, val in nodes:
            if kind == "text":
                out.append(val)
            elif kind == "out":
                out.append(go_print(_eval(val, dot, root)))
            else:
                word, pipe, body, other = val
                v = _eval(pipe, dot, root)
                if word == "range":
                    items = list(v.values()) if isinstance(v, dict) else (v or [])
                    if items:
                        for it in items:
                            self._exec(body, it, root, out)
                    else:
                        self._exec(other, dot, root, out)
                elif _truthy(v):
                    self._exec(body, v if word == "with" else dot, root, out)
                else:
                    self._exec(other, dot, root, out)


def _pipeline(src: str) -> list[list[str]]:
    toks = [t for t in _TOKEN.findall(src)]
    if "".join(toks).replace(" ", "") != src.replace(" ", "").replace("\n", "").replace("\t", ""):
        raise ValueError(f"unsupported template action {{{{{src.strip()}}}}}")
    cmds: list[list[str]] = [[]]
    for t in toks:
        if t == "|":
            cmds.append([])
        else:
            cmds[-1].append(t)
    if any(not c for c in cmds):
        raise ValueError(f"empty command in template action {{{{{src.strip()}}}}}")
    for c in cmds:
        if not _is_operand(c[0]) and c[0] not in FUNCS:
            raise ValueError(f"function {c[0]!r} not defined in template")
    return cmds


def _is_operand(t: str) -> bool:
    return (t.startswith((".", "$", '"', "`", "-")) or t in ("true", "false", "nil")
            or t[0].isdigit())


def _operand(t: str, dot: Any, root: Any) -> Any:
    if t.startswith("."):
        cur = dot
        for part in t[1:].split("."):
            if part:
                cur = cur.get(part) if isinstance(cur, dict) else None
        return cur
    if t.startswith("$"):
        cur = root
        for part in t[1:].split(".")[1:]:
            if part:
                cur = cur.get(part) if isinstance(cur, dict) else None
        return cur
    if t.startswith('"'):
        return bytes(t[1:-1], "utf-8").decode("unicode_escape")
    if t.startswith("`"):
        return t[1:-1]
    if t in ("true", "false"):
        return t == "true"
    if t == "nil":
        return None
    try:
        return int(t)
    except ValueError:
        return float(t)


def _eval(cmds: list[list[str]], dot: Any, root: Any) -> Any:
    value: Any = None
    for i, cmd in enumerate(cmds):
        if _is_operand(cmd[0]):
            value = _operand(cmd[0], dot, root)
            continue
        args = [_operand(t, dot, root) for t in cmd[1:]]
        if i > 0:
            args.append(value)
        value = FUNCS[cmd[0]](*args)
    return value
