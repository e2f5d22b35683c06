"""Go text/template's lexer: the same items, trim markers, comments and error texts as
text/template/parse/lex.go. Positions are character offsets into the template text."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from .printf import sprintf

# item types, in Go's order (keywords after KEYWORD)
(ERROR, BOOL, CHAR, CHAR_CONSTANT, COMMENT, COMPLEX, ASSIGN, DECLARE, EOF, FIELD, IDENTIFIER,
 LEFT_DELIM, LEFT_PAREN, NUMBER, PIPE, RAW_STRING, RIGHT_DELIM, RIGHT_PAREN, SPACE, STRING, TEXT,
 VARIABLE, KEYWORD, BLOCK, BREAK, CONTINUE, DOT, DEFINE, ELSE, END, IF, NIL, RANGE, TEMPLATE,
 WITH) = range(35)

KEYWORDS = {".": DOT, "block": BLOCK, "break": BREAK, "continue": CONTINUE, "define": DEFINE,
            "else": ELSE, "end": END, "if": IF, "range": RANGE, "nil": NIL, "template": TEMPLATE,
            "with": WITH}
SPACE_CHARS = " \t\r\n"
LEFT_COMMENT, RIGHT_COMMENT = "/*", "*/"


class Item(NamedTuple):
    typ: int
    pos: int
    val: str
    line: int

    def __str__(self) -> str:
        if self.typ == EOF:
            return "EOF"
        if self.typ == ERROR:
            return self.val
        if self.typ > KEYWORD:
            return f"<{self.val}>"
        if len(self.val) > 10:
            return sprintf("%.10q...", self.val)
        return sprintf("%q", self.val)


_StateFn = Callable[[], Any]  # a lexer state: returns the next state, or None once it set an item


def _alnum(c: str) -> bool:
    return c == "_" or c.isalpha() or c.isdigit()


def _trim_left_len(s: str, i: int) -> int:
    j = i
    while j < len(s) and s[j] in SPACE_CHARS:
        j += 1
    return j - i


class Lexer:
    """Go's lexer, driven by the parser one item at a time (`next_item`)."""

    def __init__(self, text: str, left: str = "{{", right: str = "}}", break_ok: bool = True,
                 continue_ok: bool = True):
        self.input = text
        self.left, self.right = left or "{{", right or "}}"
        self.pos = self.start = 0
        self.line = self.start_line = 1
        self.paren_depth = 0
        self.inside = False
        self.break_ok, self.continue_ok = break_ok, continue_ok
        self.item: Item | None = None

    # ---- helpers (Go's next/backup with a sentinel for EOF) ----------------------------------------

    def next(self) -> str:
        if self.pos >= len(self.input):
            self.pos = len(self.input) + 1  # past the end: backup() returns to len(input)
            return ""
        c = self.input[self.pos]
        self.pos += 1
        if c == "\n":
            self.line += 1
        return c

    def backup(self) -> None:
        if self.pos > len(self.input):
            self.pos = len(self.input)
            return
        if self.pos > 0:
            self.pos -= 1
            if self.input[self.pos] == "\n":
                self.line -= 1

    def peek(self) -> str:
        return self.input[self.pos] if self.pos < len(self.input) else ""

    def emit(self, typ: int) -> None:
        self.item = Item(typ, self.start, self.input[self.start:self.pos], self.start_line)
        self.start = self.pos
        self.start_line = self.line

    def ignore(self) -> None:
        self.line += self.input.count("\n", self.start, self.pos)
        self.start = self.pos
        self.start_line = self.line

    def errorf(self, fmt: str, *args: object) -> None:
        self.item = Item(ERROR, self.start, sprintf(fmt, *args) if args else fmt, self.start_line)
        self.input = ""
        self.start = self.pos = 0

    def _has_left_trim(self, i: int) -> bool:
        s = self.input
        return i + 1 < len(s) and s[i] == "-" and s[i + 1] in SPACE_CHARS

    def _has_right_trim(self, i: int) -> bool:
        s = self.input
        return i + 1 < len(s) and s[i] in SPACE_CHARS and s[i + 1] == "-"

    def at_right_delim(self) -> tuple[bool, bool]:
        if self._has_right_trim(self.pos) and self.input.startswith(self.right, self.pos + 2):
            return True, True
        return self.input.startswith(self.right, self.pos), False

    def at_terminator(self) -> bool:
        c = self.peek()
        if c in SPACE_CHARS and c:
            return True
        if c in ("", ".", ",", "|", ":", ")", "("):
            return True
        return self.input.startswith(self.right, self.pos)

    # ---- states ------------------------------------------------------------------------------------

    def next_item(self) -> Item:
        self.item = None
        state: _StateFn = self.lex_inside_action if self.inside else self.lex_text
        while self.item is None:
            state = state() or state
        return self.item

    def lex_text(self) -> _StateFn | None:
        x = self.input.find(self.left, self.pos)
        if x >= 0:
            if x > self.pos:
                self.pos = x
                trim = 0
                delim_end = self.pos + len(self.left)
                if self._has_left_trim(delim_end):
                    text = self.input[self.start:self.pos]
                    trim = len(text) - len(text.rstrip(SPACE_CHARS))
                self.pos -= trim
                self.line += self.input.count("\n", self.start, self.pos)
                item = Item(TEXT, self.start, self.input[self.start:self.pos], self.start_line)
                self.start, self.start_line = self.pos, self.line
                self.pos += trim
                self.ignore()
                if item.val:
                    self.item = item
                    return None
            return self.lex_left_delim
        self.pos = len(self.input)
        if self.pos > self.start:
            self.line += self.input.count("\n", self.start, self.pos)
            self.emit(TEXT)
        else:
            self.emit(EOF)
        return None

    def lex_left_delim(self) -> _StateFn | None:
        self.pos += len(self.left)
        trim = self._has_left_trim(self.pos)
        after = 2 if trim else 0
        if self.input.startswith(LEFT_COMMENT, self.pos + after):
            self.pos += after
            self.ignore()
            return self.lex_comment
        item = Item(LEFT_DELIM, self.start, self.input[self.start:self.pos], self.start_line)
        self.start, self.start_line = self.pos, self.line
        self.inside = True
        self.pos += after
        self.ignore()
        self.paren_depth = 0
        self.item = item
        return None

    def lex_comment(self) -> _StateFn | None:
        self.pos += len(LEFT_COMMENT)
        x = self.input.find(RIGHT_COMMENT, self.pos)
        if x < 0:
            self.errorf("unclosed comment")
            return None
        self.pos = x + len(RIGHT_COMMENT)
        delim, trim = self.at_right_delim()
        if not delim:
            self.errorf("comment ends before closing delimiter")
            return None
        self.line += self.input.count("\n", self.start, self.pos)
        self.start, self.start_line = self.pos, self.line  # the comment item is not emitted
        if trim:
            self.pos += 2
        self.pos += len(self.right)
        if trim:
            self.pos += _trim_left_len(self.input, self.pos)
        self.ignore()
        return self.lex_text

    def lex_right_delim(self) -> _StateFn | None:
        _, trim = self.at_right_delim()
        if trim:
            self.pos += 2
            self.ignore()
        self.pos += len(self.right)
        item = Item(RIGHT_DELIM, self.start, self.input[self.start:self.pos], self.start_line)
        self.start, self.start_line = self.pos, self.line
        if trim:
            self.pos += _trim_left_len(self.input, self.pos)
            self.ignore()
        self.inside = False
        self.item = item
        return None

    def lex_inside_action(self) -> _StateFn | None:
        delim, _ = self.at_right_delim()
        if delim:
            if self.paren_depth == 0:
                return self.lex_right_delim
            self.errorf("unclosed left paren")
            return None
        c = self.next()
        if c == "":
            self.errorf("unclosed action")
        elif c in SPACE_CHARS:
            self.backup()
            return self.lex_space
        elif c == "=":
            self.emit(ASSIGN)
        elif c == ":":
            if self.next() != "=":
                self.errorf("expected :=")
            else:
                self.emit(DECLARE)
        elif c == "|":
            self.emit(PIPE)
        elif c == '"':
            return self.lex_quote
        elif c == "`":
            return self.lex_raw_quote
        elif c == "$":
            return self.lex_variable
        elif c == "'":
            return self.lex_char
        elif c == "." and self.pos < len(self.input) and not "0" <= self.input[self.pos] <= "9":
            return self.lex_field
        elif c in ".+-" or "0" <= c <= "9":
            self.backup()
            return self.lex_number
        elif _alnum(c):
            self.backup()
            return self.lex_identifier
        elif c == "(":
            self.paren_depth += 1
            self.emit(LEFT_PAREN)
        elif c == ")":
            self.paren_depth -= 1
            if self.paren_depth < 0:
                self.errorf("unexpected right paren")
            else:
                self.emit(RIGHT_PAREN)
        elif ord(c) < 0x80 and c.isprintable():
            self.emit(CHAR)
        else:
            self.errorf("unrecognized character in action: %#U", ord(c))
        return None

    def lex_space(self) -> _StateFn | None:
        n = 0
        while self.peek() in SPACE_CHARS and self.peek():
            self.next()
            n += 1
        if self._has_right_trim(self.pos - 1) and self.input.startswith(self.right, self.pos + 1):
            self.backup()
            if n == 1:
                return self.lex_right_delim
        self.emit(SPACE)
        return None

    def lex_identifier(self) -> _StateFn | None:
        while True:
            c = self.next()
            if not (c and _alnum(c)):
                self.backup()
                word = self.input[self.start:self.pos]
                if not self.at_terminator():
                    self.errorf("bad character %#U", ord(c) if c else -1)
                    return None
                kw = KEYWORDS.get(word, 0)
                if kw > KEYWORD:
                    if (kw == BREAK and not self.break_ok) or (kw == CONTINUE and not self.continue_ok):
                        self.emit(IDENTIFIER)
                    else:
                        self.emit(kw)
                elif word[0] == ".":
                    self.emit(FIELD)
                elif word in ("true", "false"):
                    self.emit(BOOL)
                else:
                    self.emit(IDENTIFIER)
                return None

    def lex_field(self) -> _StateFn | None:
        return self._field_or_variable(FIELD)

    def lex_variable(self) -> _StateFn | None:
        if self.at_terminator():
            self.emit(VARIABLE)
            return None
        return self._field_or_variable(VARIABLE)

    def _field_or_variable(self, typ: int) -> _StateFn | None:
        if self.at_terminator():
            self.emit(VARIABLE if typ == VARIABLE else DOT)
            return None
        while True:
            c = self.next()
            if not (c and _alnum(c)):
                self.backup()
                break
        if not self.at_terminator():
            self.errorf("bad character %#U", ord(c) if c else -1)
            return None
        self.emit(typ)
        return None

    def _quoted(self, quote: str, what: str) -> bool:
        while True:
            c = self.next()
            if c == "\\":
                c = self.next()
                if c and c != "\n":
                    continue
            if c in ("", "\n"):
                self.errorf("unterminated %s", what)
                return False
            if c == quote:
                return True

    def lex_char(self) -> _StateFn | None:
        if self._quoted("'", "character constant"):
            self.emit(CHAR_CONSTANT)
        return None

    def lex_quote(self) -> _StateFn | None:
        if self._quoted('"', "quoted string"):
            self.emit(STRING)
        return None

    def lex_raw_quote(self) -> _StateFn | None:
        x = self.input.find("`", self.pos)
        if x < 0:
            self.errorf("unterminated raw quoted string")
            return None
        self.line += self.input.count("\n", self.pos, x + 1)
        self.pos = x + 1
        self.emit(RAW_STRING)
        return None

    def lex_number(self) -> _StateFn | None:
        if not self._scan_number():
            self.errorf("bad number syntax: %q", self.input[self.start:self.pos])
            return None
        if self.peek() in ("+", "-") and self.peek():
            if not self._scan_number() or self.input[self.pos - 1] != "i":
                self.errorf("bad number syntax: %q", self.input[self.start:self.pos])
                return None
            self.emit(COMPLEX)
            return None
        self.emit(NUMBER)
        return None

    def _accept(self, valid: str) -> bool:
        c = self.next()
        if c and c in valid:
            return True
        self.backup()
        return False

    def _accept_run(self, valid: str) -> None:
        while True:
            c = self.next()
            if not (c and c in valid):
                self.backup()
                return

    def _scan_number(self) -> bool:
        self._accept("+-")
        digits = "0123456789_"
        if self._accept("0"):
            if self._accept("xX"):
                digits = "0123456789abcdefABCDEF_"
            elif self._accept("oO"):
                digits = "01234567_"
            elif self._accept("bB"):
                digits = "01_"
        self._accept_run(digits)
        if self._accept("."):
            self._accept_run(digits)
        if len(digits) == 11 and self._accept("eE"):
            self._accept("+-")
            self._accept_run("0123456789_")
        if len(digits) == 23 and self._accept("pP"):
            self._accept("+-")
            self._accept_run("0123456789_")
        self._accept("i")
        c = self.peek()
        if c and _alnum(c):
            self.next()
            return False
        return True
