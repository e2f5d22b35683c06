"""Shell constructs that run code the command policy cannot see (bash_policy.py calls these checks).

The policy reads the command line; bash also runs code that is only known at run time, from the
*value* of a variable, which a model can fill with text the line never shows (`$'\\x24(rm ...)'`, a
file it wrote, `printf -v`). Bash evaluates such a value as code in these places:

- prompt expansion `${x@P}` runs the command substitutions in the value (refused always: nothing
  legitimate needs it). The other transformations (@Q @E @A @K @k @U @u @L @a) only produce text;
  that text is harmless unless something below evaluates it, so they pass.
- arithmetic evaluation: a variable's value is itself evaluated as an expression, and an array
  subscript in it (`a[$(cmd)]`) is expanded, which runs `cmd`. Arithmetic happens in `$((...))`,
  `$[...]`, `((...))`, `let`, `for ((...))`, the `-eq`/`-lt`/... tests of `[[ ]]`, indexed-array
  subscripts (`${a[i]}`, `a[i]=`), substring offsets (`${s:i:n}`), `[[ -v name ]]`/`test -v`, and
  in builtins that take a variable *name* (`printf -v`, `read`, `unset`, `declare`, ...);
- indirection `${!name}` evaluates the named variable, subscript included;
- assignments that change which program a command name runs (`PATH`, `LD_PRELOAD`, `BASH_ENV`, ...).

With an allow list the policy promises that every command that runs is one it checked, so these are
refused there unless what is evaluated is literal (numbers; names without computed subscripts).
Without an allow list (deny rules only) the policy is a guardrail against mistakes that any
interpreter gets around (`python3 -c ...`), so only `@P` is refused. Quoting is ignored while
scanning (text in single quotes is looked at too): that can only refuse more.
"""

from __future__ import annotations

import re


class Refused(Exception):
    """The command line is not allowed; the message says which command and which rule."""


# Variables whose value decides which code a later command runs.
CODE_VARIABLES = frozenset({
    "PATH", "BASH_ENV", "ENV", "SHELLOPTS", "BASHOPTS", "PS4", "PROMPT_COMMAND", "BASH_LOADABLES_PATH",
    "LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "TEXTDOMAIN", "TEXTDOMAINDIR", "GCONV_PATH",
})
# Builtins whose operands are variable names (a computed name is evaluated like a subscript).
NAME_BUILTINS = frozenset({"read", "unset", "declare", "typeset", "local", "export", "readonly",
                           "mapfile", "readarray", "getopts"})
_DECLARERS = frozenset({"declare", "typeset", "local"})
# Options of these builtins that take a value (the value is not a name).
_VALUE_OPTS = {"read": "dinNptu", "mapfile": "dnOsuCc", "readarray": "dnOsuCc"}
ARITH_TESTS = frozenset({"-eq", "-ne", "-lt", "-le", "-gt", "-ge"})

_PROMPT = re.compile(r"\$\{[^}]*@P\}")
_NUMBER = re.compile(r"\b(?:0[xX][0-9A-Fa-f]+|[0-9]+#[0-9A-Za-z@_]+|[0-9]+)\b")
_IDENT = re.compile(r"[A-Za-z_]")
_LITERAL_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\[(?:[0-9]+|@|\*)\])?")
_LITERAL_SUB = re.compile(r"\s*(?:[0-9]+|@|\*)?\s*")
_SUBSCRIPT = re.compile(r"\$\{[!#]?([A-Za-z_][A-Za-z0-9_]*)\[")
_ASSIGN_SUBSCRIPT = re.compile(r"(?:^|(?<=[\s;&|(]))([A-Za-z_][A-Za-z0-9_]*)\[")
_INDIRECT = re.compile(r"\$\{!([A-Za-z_][A-Za-z0-9_]*)")
_KEYS = ("*}", "@}", "[@]}", "[*]}")
_OFFSET = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?:\[[^\]]*\])?:(?![-=?+])")
_ASSIGN = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)(?:\[[^\]]*\])?\+?=")


def check_prompt_expansion(line: str) -> None:
    if _PROMPT.search(line):
        raise Refused("${...@P} (prompt expansion) runs the command substitutions inside a variable's "
                      "value, which the policy cannot see; use ${x} or ${x@Q}")


def check_runtime_code(line: str) -> None:
    """Allow mode: refuse arithmetic, subscripts, offsets and indirection over run-time values."""
    for body in _arith_bodies(line):
        _literal_arith(body, f"$(({body}))" if len(body) < 60 else "an arithmetic expression")
    for rx, assigning in ((_SUBSCRIPT, False), (_ASSIGN_SUBSCRIPT, True)):
        for m in rx.finditer(line):
            sub = _until_close(line, m.end(), "[", "]")
            if sub is None or _LITERAL_SUB.fullmatch(sub):
                continue
            if assigning and not line.startswith(("=", "+="), m.end() + len(sub) + 1):
                continue  # `name[...]` not followed by `=` is a glob, not a subscript
            _literal_arith(sub, f"the array subscript {m.group(1)}[{_short(sub)}]")
    for m in _OFFSET.finditer(line):
        rest = _until_close(line, m.end(), "{", "}")
        if rest is not None:
            _literal_arith(rest.replace(":", " "), f"the substring offset in {_short(m.group(0) + rest)}}}")
    for m in _INDIRECT.finditer(line):
        if not line.startswith(_KEYS, m.end()):  # `${!name}`; `${!prefix*}` and `${!a[@]}` list names
            raise Refused(f"indirection ${{!{m.group(1)}...}} evaluates the variable its value names "
                          "(an array subscript there runs commands), which the policy cannot see; with an "
                          "allow list, name the variable directly")


def check_command(base: str, args: list[str], assignments: list[str]) -> None:
    """Allow mode: one simple command's assignments and variable-name operands."""
    for word in assignments:
        _check_assignment(word)
    if base == "let":
        for a in args:
            _literal_arith(a, f"let {_short(a)}")
    elif base == "[[":
        for i, a in enumerate(args):
            if a in ARITH_TESTS:
                for operand in (args[i - 1] if i else "", args[i + 1] if i + 1 < len(args) else ""):
                    _literal_arith(operand, f"the arithmetic test {a} in [[ ]]")
    if base in ("[[", "[", "test", "printf"):
        for i, a in enumerate(args[:-1]):
            if a == "-v":
                _literal_name(args[i + 1], f"{base} -v")
    if base in ("env",):
        for a in args:
            if _ASSIGN.match(a):
                _check_assignment(a)
    if base not in NAME_BUILTINS:
        return
    opts = _VALUE_OPTS.get(base, "")
    names: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a.startswith("-") and len(a) > 1 and not names:
            if base in _DECLARERS and ("i" in a[1:] or "n" in a[1:]):
                raise Refused(f"{base} {a}: an integer or name-reference variable evaluates every value "
                              "later given to it, which the policy cannot see; with an allow list, use a "
                              "plain variable")
            skip = bool(opts) and a[-1] in opts
            continue
        names.append(a)
    if base == "getopts":
        names = names[1:2]
    elif base in ("mapfile", "readarray"):
        names = names[-1:]
    for n in names:
        name = n.split("=", 1)[0] if base in _DECLARERS | {"export", "readonly"} else n
        _literal_name(name, base)
        if "=" in n and base != "read":
            _check_assignment(n)


def _check_assignment(word: str) -> None:
    m = _ASSIGN.match(word)
    if m and (m.group(1) in CODE_VARIABLES or m.group(1).startswith("BASH_FUNC_")):
        raise Refused(f"assigning {m.group(1)} changes which program or code a command name runs, so the "
                      "allow list could not vouch for it; with an allow list, leave it as it is")


def _literal_arith(text: str, where: str) -> None:
    rest = _NUMBER.sub(" ", text)
    if "$" in rest or "`" in rest or _IDENT.search(rest):
        raise Refused(f"{where} evaluates a variable's value as arithmetic (an array subscript in that "
                      "value runs commands), which the policy cannot see; with an allow list, arithmetic "
                      "may use literal numbers only")


def _literal_name(name: str, where: str) -> None:
    if not _LITERAL_NAME.fullmatch(name):
        raise Refused(f"{where} is given the variable name {_short(name)!r}, which is computed or has a "
                      "computed subscript (evaluated as arithmetic, where a subscript runs commands); "
                      "with an allow list, write names literally")


def _arith_bodies(line: str) -> list[str]:
    """Bodies of `$((...))`, `((...))` (also `for ((...))`) and `$[...]`."""
    out = []
    for m in re.finditer(r"\(\(", line):
        if m.start() and line[m.start() - 1] == "(":
            continue  # the inner pair of `(((`: found from the outer one
        body = _until_close(line, m.end(), "(", ")", depth=2)
        if body is not None:
            out.append(body)
    for m in re.finditer(r"\$\[", line):
        body = _until_close(line, m.end(), "[", "]")
        if body is not None:
            out.append(body)
    return out


def _until_close(line: str, start: int, opener: str, closer: str, depth: int = 1) -> str | None:
    """Text from `start` to the closer that ends `depth` open brackets (None when unbalanced)."""
    level = depth
    for j in range(start, len(line)):
        c = line[j]
        if c == opener:
            level += 1
        elif c == closer:
            level -= 1
            if level == 0:
                return line[start:j - depth + 1] if depth > 1 else line[start:j]
    return None


def _short(s: str, n: int = 40) -> str:
    return s if len(s) <= n else s[:n] + "…"
