"""The command policy of the `bash` builtin: allow/deny lists checked on every command of a line.

A command line is split (shlex, with shell operators as punctuation) into simple commands at `|`,
`||`, `&&`, `;`, `&`, newlines and parentheses; command substitutions (`$(...)`, backticks, `<(...)`,
`>(...)`), `bash -c '...'`, `eval ...`, `find -exec ...` and wrappers such as `env`, `nohup`,
`timeout`, `xargs` are checked as commands too. When in doubt the checker refuses: text it cannot
split (unbalanced quotes or parentheses) and command names computed at run time (`$cmd`, globs).
Constructs that make bash run code from a variable's value are in bash_hidden.py: `${x@P}` is refused
always; with an allow list, so are arithmetic and subscripts over variables, `${!x}`, computed variable
names, assignments to `PATH`/`LD_PRELOAD`/..., and commands given by a path the allow list does not name.

This is a guardrail against a model's mistakes, not a sandbox: an interpreter (`python -c`, a script
file) can still do anything the user running chainreact can.
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from . import bash_hidden
from .bash_hidden import Refused

OPERATOR_CHARS = "();<>|&\n"
MAX_DEPTH = 8

# Command names refused by default (fnmatch patterns against the command's base name).
DEFAULT_DENY_NAMES: tuple[str, ...] = (
    "sudo", "su", "doas", "dd", "mkfs", "mkfs.*", "mke2fs", "shutdown", "reboot", "halt", "poweroff",
)
# Whole-command patterns refused by default (fnmatch against "name arg1 arg2 ...").
DEFAULT_DENY_TEXT: tuple[str, ...] = (
    "systemctl poweroff*", "systemctl reboot*", "systemctl halt*", "init 0", "init 6",
)
# rm/chmod/chown/chgrp with a recursive flag are refused when a target is one of these (after
# collapsing repeated and trailing slashes); see _is_sweeping_target for the full rule.
SWEEPING_TARGETS = frozenset({
    "/", "/*", "/.*", "~", "~/", "~/*", "~/.*", "$HOME", "${HOME}", "$HOME/*", "${HOME}/*",
    ".", "./", "./*", "*", ".*", "..", "../", "../*",
})
RECURSIVE_DESTROYERS = frozenset({"rm", "chmod", "chown", "chgrp"})

# In allow mode these shell builtins need no entry (they cannot change anything outside the shell).
SAFE_BUILTINS = frozenset({"cd", "pwd", "echo", "printf", "true", "false", "test", "[", "[[", "exit", ":"})
# Words that start a compound command; the real command follows them.
RESERVED_PREFIX = frozenset({"!", "{", "}", "if", "then", "elif", "else", "fi", "do", "done", "while",
                             "until", "time", "coproc", "]]", "esac"})
# System directories: read-only in the sandbox, so a command there is the one its name says.
SYSTEM_BIN_DIRS = ("/usr/", "/bin/", "/sbin/")
# Segments that start with these do not run a command themselves (`for x in a b`, `case $x in`).
NON_COMMAND = frozenset({"for", "select", "case"})
# Run the command given in their arguments.
WRAPPERS = frozenset({"env", "nohup", "nice", "ionice", "time", "timeout", "stdbuf", "setsid", "xargs",
                      "exec", "command", "builtin", "unbuffer", "chronic", "strace", "ltrace", "watch",
                      "flock", "chrt", "taskset", "caffeinate", "catchsegv"})
SHELLS = frozenset({"bash", "sh", "dash", "zsh", "ksh", "ash", "mksh", "fish", "rbash"})
FIND_EXEC = frozenset({"-exec", "-execdir", "-ok", "-okdir"})

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\[[^\]]*\])?\+?=")
_DURATION = re.compile(r"^[0-9.]+[smhd]?$")


@dataclass(slots=True)
class SimpleCommand:
    words: list[str]
    start: int  # token index of words[0] in the line (for function-body checks)


@dataclass(frozen=True, slots=True)
class CommandPolicy:
    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    default_deny: bool = True
    _names: tuple[str, ...] = field(init=False, repr=False, default=())
    _texts: tuple[str, ...] = field(init=False, repr=False, default=())

    def __post_init__(self) -> None:
        names = [p for p in self.deny if " " not in p.strip()]
        texts = [p.strip() for p in self.deny if " " in p.strip()]
        if self.default_deny:
            names[:0] = DEFAULT_DENY_NAMES
            texts[:0] = DEFAULT_DENY_TEXT
        object.__setattr__(self, "_names", tuple(n.strip() for n in names))
        object.__setattr__(self, "_texts", tuple(texts))

    def check(self, command: str) -> None:
        """Raise Refused naming the offending command, or return if every command may run."""
        bash_hidden.check_prompt_expansion(command)
        if self.allow:
            bash_hidden.check_runtime_code(command)
        self._check_line(command, 0)

    # --- line level ---------------------------------------------------------------------------------

    def _check_line(self, line: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise Refused(f"commands are nested more than {MAX_DEPTH} levels deep; simplify the command")
        line = line.replace("\\\n", "")  # line continuations: bash joins the lines before parsing
        for body in substitutions(line):
            self._check_line(body, depth + 1)
        tokens = tokenize(line)
        commands = split_commands(tokens)
        check_fork_bomb(tokens, commands)
        for cmd in commands:
            self._check_command(cmd.words, depth)

    # --- command level ------------------------------------------------------------------------------

    def _check_command(self, words: list[str], depth: int) -> None:
        i = 0
        while i < len(words) and (_ASSIGNMENT.match(words[i]) or words[i] in RESERVED_PREFIX):
            i += 1
        if self.allow:
            rest = words[i + 1:] if i < len(words) else []
            bash_hidden.check_command(words[i] if i < len(words) else "", rest, words[:i])
        if i == len(words) or words[i] in NON_COMMAND:
            return
        if words[i] == "function":  # `function name { ...`: a definition, the body is checked separately
            return
        name, args = words[i], words[i + 1 :]
        if name not in ("[", "[[") and (
            any(c in name for c in "$`*?[]{}") or any(c.isspace() or ord(c) < 32 for c in name)
        ):
            raise Refused(f"command name {name!r} is computed at run time (variable, glob or "
                          "substitution), so the policy cannot check it; write the command literally")
        base = os.path.basename(name) or name
        text = " ".join([base, *args])
        self._check_deny(base, args, text)
        self._check_allow(name, base, text)
        self._check_nested(base, args, depth)

    def _check_deny(self, base: str, args: list[str], text: str) -> None:
        for pattern in self._names:
            if fnmatch.fnmatchcase(base, pattern):
                raise Refused(f"{base!r} is not allowed ({self._origin(pattern, DEFAULT_DENY_NAMES)} "
                              f"deny rule {pattern!r})")
        for pattern in self._texts:
            if fnmatch.fnmatchcase(text, pattern):
                raise Refused(f"{_short(text)!r} is not allowed ({self._origin(pattern, DEFAULT_DENY_TEXT)} "
                              f"deny rule {pattern!r})")
        if self.default_deny and base in RECURSIVE_DESTROYERS:
            check_recursive_destroyer(base, args)

    def _origin(self, pattern: str, defaults: Sequence[str]) -> str:
        default = self.default_deny and pattern in defaults and pattern not in self.deny
        return "default" if default else "configured"

    def _check_allow(self, name: str, base: str, text: str) -> None:
        if not self.allow or (base in SAFE_BUILTINS and "/" not in name):
            return
        # `./ls` runs whatever file is there: a path matches only an entry that names a path, or, in the
        # system directories (read-only in the sandbox), the entry of its base name.
        by_base = "/" not in name or name.startswith(SYSTEM_BIN_DIRS)
        for pattern in self.allow:
            p = pattern.strip()
            if "/" in p.split(" ", 1)[0]:
                target = " ".join([name, *text.split(" ")[1:]]) if " " in p else name
            elif not by_base:
                continue
            else:
                target = text if " " in p else base
            if fnmatch.fnmatchcase(target, p):
                return
        if not by_base:
            raise Refused(f"{_short(name)!r} runs the file at that path, which the allow list does not name "
                          f"({', '.join(self.allow)}); list the path itself to allow it")
        raise Refused(f"{_short(text)!r} is not on the allow list ({', '.join(self.allow)})")

    def _check_nested(self, base: str, args: list[str], depth: int) -> None:
        """Commands that run other commands: check what they run."""
        if base in WRAPPERS:
            # Conservative: any later word naming a denied command refuses the line (`timeout 5 sudo x`).
            for word in args:
                wb = os.path.basename(word)
                for pattern in self._names:
                    if fnmatch.fnmatchcase(wb, pattern):
                        raise Refused(f"{wb!r} is not allowed, also not when run through {base!r} "
                                      f"(deny rule {pattern!r})")
            inner = wrapped_command(base, args)
            if inner:
                self._check_command(inner, depth + 1)
        elif base in SHELLS:
            script = shell_script_arg(args)
            if script is not None:
                self._check_line(script, depth + 1)
            elif not [a for a in args if not a.startswith("-")]:
                raise Refused(f"{base!r} reading commands from its input cannot be checked; "
                              f"pass the commands directly (or as {base} -c '...')")
        elif base == "eval":
            self._check_line(" ".join(args), depth + 1)
        elif base == "trap":  # `trap 'commands' SIGNAL`: the handler is a command line
            handler = [a for a in args if a != "--"][:1]
            if handler and not handler[0].startswith("-"):
                self._check_line(handler[0], depth + 1)
        elif base == "find":
            for inner in find_exec_commands(args):
                self._check_command(inner, depth + 1)


def _short(s: str, n: int = 80) -> str:
    return s if len(s) <= n else s[:n] + "…"


# --- parsing -----------------------------------------------------------------------------------------


def tokenize(line: str) -> list[str]:
    lex = shlex.shlex(line, posix=True, punctuation_chars=OPERATOR_CHARS)
    lex.whitespace_split = True
    lex.whitespace = " \t\r"  # newline separates commands, so it is an operator here
    # No comments: shlex would end a word at `#` where bash does not (`a#b; sudo x`). Checking comment
    # text as commands can only refuse more, never less.
    lex.commenters = ""
    try:
        return list(lex)
    except ValueError as e:
        raise Refused(f"the command cannot be parsed safely ({e}); check its quoting") from None


def is_operator(token: str) -> bool:
    return bool(token) and all(c in OPERATOR_CHARS for c in token)


def split_commands(tokens: list[str], offset: int = 0) -> list[SimpleCommand]:
    """Simple commands between operators. A word after a redirection operator is a file name.

    `$(...)`, `<(...)` and `>(...)` groups become commands of their own while the command around them
    goes on (`echo $(date) x`: `x` is still an argument of echo).
    """
    out: list[SimpleCommand] = []
    words: list[str] = []
    start = 0
    skip_next = False
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok.startswith("(("):
            end = _arith_end(tokens, i)
            if end is not None:  # `((...))`, `$((...))`: arithmetic, no command inside (bash_hidden.py)
                if set(tokens[end]) - {"(", ")"} and words:
                    out.append(SimpleCommand(words, start + offset))
                    words = []
                i = end + 1
                continue
        if is_operator(tok):
            prev = tokens[i - 1] if i else ""
            inline = tok.startswith(("<(", ">(")) or (
                tok.startswith("(") and prev.endswith("$") and not is_operator(prev) and bool(words)
            )
            if inline:
                j = _group_end(tokens, i)
                out.extend(split_commands(tokens[i + 1 : j], offset + i + 1))
                if j < len(tokens) and set(tokens[j]) - {"(", ")"}:
                    # The closing token also holds a separator (`)|`, `);`): the command ends here.
                    if words:
                        out.append(SimpleCommand(words, start + offset))
                    words = []
                i = j + 1
                continue
            if ("<" in tok or ">" in tok) and "(" not in tok:
                skip_next = True  # `> file`, `2>&1`, `<<EOF`: the next word is not a command
                i += 1
                continue
            if words:
                out.append(SimpleCommand(words, start + offset))
            words, skip_next = [], False
            i += 1
            continue
        if skip_next:
            skip_next = False
        else:
            if not words:
                start = i
            words.append(tok)
        i += 1
    if words:
        out.append(SimpleCommand(words, start + offset))
    return out


def _arith_end(tokens: list[str], i: int) -> int | None:
    """Index of the token closing the `((` at tokens[i] when it is arithmetic, else None.

    Bash reads `((` as arithmetic only when the two parentheses close together (`))`); otherwise, as in
    `((ls); (id))`, they are two subshells, whose commands must be checked."""
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j]
        if not is_operator(t):
            continue
        for k, c in enumerate(t):
            if c == "(":
                depth += 1
            elif c == ")":
                depth -= 1
                if depth == 1 and j > i:
                    return j if t[k + 1:k + 2] == ")" else None
    return None


def _group_end(tokens: list[str], i: int) -> int:
    """Index of the token closing the parenthesis group opened at tokens[i] (len(tokens) if none)."""
    depth = 0
    for j in range(i, len(tokens)):
        t = tokens[j]
        if is_operator(t):
            depth += t.count("(") - t.count(")")
            if depth <= 0:
                return j
    return len(tokens)


def substitutions(line: str) -> list[str]:
    """Bodies of `$(...)`, `<(...)`, `>(...)` and backticks, found regardless of quoting.

    Ignoring quotes over-approximates (text in single quotes is checked too), which can only refuse
    more. Unbalanced delimiters are refused.
    """
    bodies: list[str] = []
    if line.count("`") % 2:
        raise Refused("the command has an unmatched backtick; it cannot be parsed safely")
    parts = line.split("`")
    bodies.extend(parts[1::2])
    for m in re.finditer(r"[$<>]\(", line):
        start = m.end()
        if line.startswith("(", start):  # `$((...))` is arithmetic; nested `$(` inside is found anyway
            continue
        depth, j = 1, start
        while j < len(line) and depth:
            if line[j] == "(":
                depth += 1
            elif line[j] == ")":
                depth -= 1
            j += 1
        if depth:
            raise Refused("the command has an unmatched '(' in a substitution; it cannot be parsed safely")
        bodies.append(line[start : j - 1])
    return bodies


def check_fork_bomb(tokens: list[str], commands: list[SimpleCommand]) -> None:
    """Refuse a shell function that calls itself (the shape of `:(){ :|:& };:`)."""
    for i, tok in enumerate(tokens[:-1]):
        if is_operator(tok):
            continue
        nxt = tokens[i + 1]
        if nxt == "()" or (nxt == "(" and i + 2 < len(tokens) and tokens[i + 2] == ")"):
            name = tok
        elif tok == "function" and not is_operator(nxt):
            name = nxt
        else:
            continue
        body_start = i + 2
        body_end = _body_end(tokens, body_start)
        for cmd in commands:
            if body_start <= cmd.start < body_end and _command_name(cmd.words) == name:
                raise Refused(f"function {name!r} calls itself (fork-bomb shape); recursive shell "
                              "functions are not allowed")


def _body_end(tokens: list[str], start: int) -> int:
    depth = 0
    for j in range(start, len(tokens)):
        t = tokens[j]
        if t == "{" or (is_operator(t) and "(" in t):
            depth += t.count("(") if t != "{" else 1
        elif t == "}" or (is_operator(t) and ")" in t):
            depth -= t.count(")") if t != "}" else 1
            if depth <= 0 and j > start:
                return j + 1
    return len(tokens)


def _command_name(words: list[str]) -> str:
    for w in words:
        if not (_ASSIGNMENT.match(w) or w in RESERVED_PREFIX):
            return w
    return ""


def _options(args: Iterable[str]) -> list[str]:
    return [a for a in args if a.startswith("-") and a != "-"]


def check_recursive_destroyer(base: str, args: list[str]) -> None:
    flags_done = False
    recursive = False
    targets = []
    for a in args:
        if not flags_done and a == "--":
            flags_done = True
        elif not flags_done and a.startswith("--"):
            recursive |= a == "--recursive"
            if a == "--no-preserve-root":
                raise Refused(f"{base} --no-preserve-root is not allowed (default deny rule)")
        elif not flags_done and a.startswith("-") and len(a) > 1:
            # rm takes -r or -R; chmod/chown/chgrp only -R (their -r is not recursion).
            recursive |= "R" in a[1:] or (base == "rm" and "r" in a[1:])
        else:
            targets.append(a)
    if not recursive:
        return
    for t in targets:
        if _is_sweeping_target(t):
            raise Refused(f"{base} with a recursive flag on {t!r} is not allowed (default deny rule: "
                          "recursive rm/chmod/chown/chgrp on /, a top-level directory, ~, . , .. or *)")


def _is_sweeping_target(target: str) -> bool:
    t = re.sub(r"/+", "/", target)
    if len(t) > 1:
        t = t.rstrip("/") or "/"
    if t in SWEEPING_TARGETS:
        return True
    # `/usr`, `/etc/`, `/home/*`: a top-level directory or everything in one.
    return bool(re.fullmatch(r"/[^/]+(/\*)?", t)) or bool(re.fullmatch(r"(~|\$HOME|\$\{HOME\})/[^/]+", t))


def wrapped_command(base: str, args: list[str]) -> list[str]:
    """The command a wrapper runs: the first word that is not an option, assignment or number."""
    for i, a in enumerate(args):
        if a.startswith("-") or _ASSIGNMENT.match(a) or _DURATION.match(a):
            continue
        if base == "flock" and i == 0:
            continue  # `flock FILE cmd`
        return args[i:]
    return []


def shell_script_arg(args: list[str]) -> str | None:
    """The script of `sh -c SCRIPT` (also `-lc`, `-ec`, ...), or None when there is no -c."""
    for i, a in enumerate(args):
        if a.startswith("-") and not a.startswith("--") and "c" in a[1:]:
            rest = [x for x in args[i + 1 :] if not (x.startswith("-") and x != "-")]
            return rest[0] if rest else ""
    return None


def find_exec_commands(args: list[str]) -> list[list[str]]:
    out = []
    for i, a in enumerate(args):
        if a in FIND_EXEC:
            inner = []
            for w in args[i + 1 :]:
                if w in (";", "+"):
                    break
                inner.append(w)
            out.append(inner)
    return out
