"""A Pratt parser for expr-lang (https://expr-lang.org/docs/language-definition): same operators,
precedences and associativity as expr-lang's parser, producing the tree in `ast`."""

from __future__ import annotations

from .ast import (
    Array,
    Binary,
    Call,
    Closure,
    Cond,
    Let,
    Lit,
    MapLit,
    Member,
    Name,
    Node,
    Pointer,
    Slice,
    Unary,
)
from .errors import ExprSyntaxError
from .lexer import EOF, IDENT, NUM, OP, STR, Token, tokenize

MAX_LENGTH = 20_000  # characters of one expression
MAX_DEPTH = 120  # nesting of the tree; evaluation recurses once per level

# expr-lang's parser/operator/operator.go
BINARY: dict[str, tuple[int, bool]] = {  # op -> (precedence, right associative)
    "|": (0, False),
    "or": (10, False), "||": (10, False),
    "and": (15, False), "&&": (15, False),
    "==": (20, False), "!=": (20, False), "<": (20, False), ">": (20, False), ">=": (20, False),
    "<=": (20, False), "in": (20, False), "matches": (20, False), "contains": (20, False),
    "startsWith": (20, False), "endsWith": (20, False),
    "..": (25, False),
    "+": (30, False), "-": (30, False),
    "*": (60, False), "/": (60, False), "%": (60, False),
    "**": (100, True), "^": (100, True),
    "??": (500, False),
}
UNARY = {"not": 50, "!": 50, "-": 90, "+": 90}
WORD_OPS = frozenset({"or", "and", "in", "matches", "contains", "startsWith", "endsWith", "not"})
ORDERING = frozenset({"<", ">", "<=", ">="})
NEGATABLE = frozenset({"in", "matches", "contains", "startsWith", "endsWith"})
ALIASES = {"or": "||", "and": "&&", "^": "**", "not": "!"}

# Builtins whose second argument is a predicate (a closure over `#`).
PREDICATE_FUNCS = frozenset({
    "all", "none", "any", "one", "filter", "map", "find", "findIndex", "findLast", "findLastIndex",
    "count", "sum", "groupBy", "sortBy", "reduce",
})


def parse(src: str) -> Node:
    if len(src) > MAX_LENGTH:
        raise ExprSyntaxError(f"expression too long ({len(src)} characters, at most {MAX_LENGTH})",
                              expression=src[:200], position=MAX_LENGTH)
    p = _Parser(src)
    node = p.sequence()
    if p.tok.kind != EOF:
        p.fail(f"unexpected {p.tok.describe()}")
    return node


class _Parser:
    def __init__(self, src: str) -> None:
        self.src = src
        self.toks = tokenize(src)
        self.i = 0
        self.tok: Token = self.toks[0]
        self.predicate_depth = 0
        self.nesting = 0

    # -- helpers --------------------------------------------------------------------------------------

    def fail(self, msg: str, tok: Token | None = None) -> None:
        t = tok or self.tok
        raise ExprSyntaxError(f"{msg} at position {t.pos}", expression=self.src, position=t.pos)

    def next(self) -> Token:
        t = self.tok
        self.i += 1
        self.tok = self.toks[min(self.i, len(self.toks) - 1)]
        return t

    def is_op(self, value: str) -> bool:
        return self.tok.kind == OP and self.tok.value == value

    def expect_op(self, value: str) -> Token:
        if not self.is_op(value):
            self.fail(f"expected '{value}', found {self.tok.describe()}")
        return self.next()

    def check(self, node: Node) -> Node:
        if node.depth > MAX_DEPTH:
            raise ExprSyntaxError(f"expression nested too deeply (more than {MAX_DEPTH} levels)",
                                  expression=self.src, position=node.pos)
        return node

    def binary_op(self) -> str | None:
        t = self.tok
        if t.kind == OP and t.value in BINARY:
            return str(t.value)
        if t.kind == IDENT and t.value in WORD_OPS:
            return str(t.value)
        return None

    # -- grammar --------------------------------------------------------------------------------------

    def sequence(self) -> Node:
        """`a; b; c` evaluates all and yields the last (expr-lang's sequence expression)."""
        node = self.expression(0)
        while self.is_op(";"):
            t = self.next()
            if self.tok.kind == EOF or self.is_op(")") or self.is_op("}"):
                break
            node = self.check(Binary(t.pos, ";", node, self.expression(0)))
        return node

    def expression(self, prec: int) -> Node:
        self.nesting += 1
        if self.nesting > MAX_DEPTH:
            self.fail(f"expression nested too deeply (more than {MAX_DEPTH} levels)")
        try:
            return self._expression(prec)
        finally:
            self.nesting -= 1

    def _expression(self, prec: int) -> Node:
        if prec == 0 and self.tok.kind == IDENT and self.tok.value == "let":
            return self.let()
        if prec == 0 and self.tok.kind == IDENT and self.tok.value == "if":
            return self.if_else()
        left = self.primary()
        # `a < b < c` is `a < b && b < c`, as in expr-lang: the last comparison of the chain, and the node
        # that holds the chain so far.
        cmp_tail: Binary | None = None
        cmp_root: Node | None = None
        while True:
            op = self.binary_op()
            if op is None:
                break
            op_tok = self.tok
            negate = False
            if op == "not":
                nxt = self.toks[self.i + 1]
                if nxt.kind == IDENT and nxt.value in NEGATABLE and BINARY[nxt.value][0] >= prec:
                    self.next()
                    op, negate = str(nxt.value), True
                else:
                    if nxt.kind == IDENT and nxt.value in NEGATABLE:
                        break
                    self.fail(f"unexpected {self.toks[self.i + 1].describe()} after 'not'",
                              self.toks[self.i + 1])
            op_prec, right_assoc = BINARY[op]
            if op_prec < prec:
                break
            self.next()
            if op == "|":
                left = self.pipe(left)
                continue
            right = self.expression(op_prec if right_assoc else op_prec + 1)
            if op in ORDERING and cmp_tail is not None and left is cmp_root:
                cmp_tail = Binary(op_tok.pos, op, cmp_tail.right, right)
                left = cmp_root = self.check(Binary(op_tok.pos, "&&", left, cmp_tail))
                continue
            built = Binary(op_tok.pos, ALIASES.get(op, op), left, right)
            left = self.check(built)
            cmp_tail, cmp_root = (built, built) if op in ORDERING else (None, None)
            if negate:
                left = self.check(Unary(op_tok.pos, "!", left))
        if prec == 0:
            while self.is_op("?"):
                q = self.next()
                if self.is_op(":"):  # `a ?: b` is `a ? a : b`
                    self.next()
                    left = self.check(Cond(q.pos, left, left, self.expression(0)))
                else:
                    yes = self.expression(0)
                    self.expect_op(":")
                    left = self.check(Cond(q.pos, left, yes, self.expression(0)))
        return left

    def let(self) -> Node:
        t = self.next()
        if self.tok.kind != IDENT:
            self.fail("expected a variable name after 'let'")
        name = str(self.next().value)
        self.expect_op("=")
        value = self.expression(0)
        self.expect_op(";")
        body = self.sequence()
        return self.check(Let(t.pos, name, value, body))

    def if_else(self) -> Node:
        t = self.next()
        cond = self.expression(0)
        self.expect_op("{")
        yes = self.sequence()
        self.expect_op("}")
        if not (self.tok.kind == IDENT and self.tok.value == "else"):
            self.fail("expected 'else'")
        self.next()
        if self.tok.kind == IDENT and self.tok.value == "if":
            no = self.if_else()
        else:
            self.expect_op("{")
            no = self.sequence()
            self.expect_op("}")
        return self.check(Cond(t.pos, cond, yes, no))

    def pipe(self, left: Node) -> Node:
        if self.tok.kind != IDENT:
            self.fail("expected a function name after '|'")
        name_tok = self.next()
        return self.call(name_tok, [left])

    def primary(self) -> Node:
        t = self.tok
        if (t.kind == OP and t.value in UNARY) or (t.kind == IDENT and t.value == "not"):
            self.next()
            x = self.expression(UNARY[str(t.value)])
            return self.postfix(self.check(Unary(t.pos, ALIASES.get(str(t.value), str(t.value)), x)))
        if t.kind == OP and t.value == "(":
            self.next()
            node = self.sequence()
            self.expect_op(")")
            return self.postfix(node)
        if self.predicate_depth > 0 and t.kind == OP and t.value in ("#", "."):
            self.next()
            if t.value == "#":
                name = ""
                if self.tok.kind == IDENT and self.tok.pos == t.pos + 1:
                    name = str(self.next().value)
                    if name not in ("index", "acc"):
                        self.fail(f"unknown predicate variable '#{name}'", t)
                return self.postfix(Pointer(t.pos, name))
            # `.field` inside a predicate is `#.field`
            if self.tok.kind != IDENT:
                self.fail("expected a field name after '.'")
            ft = self.next()
            return self.postfix(Member(t.pos, Pointer(t.pos, ""), Lit(ft.pos, ft.value), False, None))
        return self.secondary()

    def secondary(self) -> Node:
        t = self.next()
        if t.kind == IDENT:
            v = t.value
            if v == "true":
                return Lit(t.pos, True)
            if v == "false":
                return Lit(t.pos, False)
            if v == "nil":
                return Lit(t.pos, None)
            if v in WORD_OPS or v in ("let", "if", "else"):
                self.fail(f"unexpected '{v}'", t)
            if self.is_op("("):
                return self.postfix(self.call(t, []))
            return self.postfix(Name(t.pos, str(v)))
        if t.kind in (NUM, STR):
            return self.postfix(Lit(t.pos, t.value))
        if t.kind == OP and t.value == "[":
            items: list[Node] = []
            while not self.is_op("]"):
                items.append(self.expression(0))
                if not self.is_op(","):
                    break
                self.next()
            self.expect_op("]")
            return self.postfix(self.check(Array(t.pos, items)))
        if t.kind == OP and t.value == "{":
            pairs: list[tuple[Node, Node]] = []
            while not self.is_op("}"):
                k = self.tok
                if k.kind in (IDENT, STR, NUM):
                    self.next()
                    key: Node = Lit(k.pos, k.value)
                elif self.is_op("("):
                    self.next()
                    key = self.expression(0)
                    self.expect_op(")")
                else:
                    self.fail(f"a map key must be a name, a string, a number or (expression), "
                              f"found {k.describe()}")
                self.expect_op(":")
                pairs.append((key, self.expression(0)))
                if not self.is_op(","):
                    break
                self.next()
            self.expect_op("}")
            return self.postfix(self.check(MapLit(t.pos, pairs)))
        self.fail(f"unexpected {t.describe()}", t)
        raise AssertionError  # unreachable

    def call(self, name_tok: Token, args: list[Node]) -> Node:
        name = str(name_tok.value)
        if self.is_op("("):
            self.next()
            while not self.is_op(")"):
                if len(args) == 1 and name in PREDICATE_FUNCS:
                    args.append(self.predicate())
                else:
                    args.append(self.expression(0))
                if not self.is_op(","):
                    break
                self.next()
            self.expect_op(")")
        return self.check(Call(name_tok.pos, Name(name_tok.pos, name), name, args))

    def predicate(self) -> Node:
        t = self.tok
        self.predicate_depth += 1
        try:
            if self.is_op("{"):
                self.next()
                body = self.sequence()
                self.expect_op("}")
            else:
                body = self.expression(0)
        finally:
            self.predicate_depth -= 1
        return self.check(Closure(t.pos, body))

    def postfix(self, node: Node) -> Node:
        # Once a chain has `?.`, the rest of it short-circuits too: `a?.b.c` is nil when a is nil.
        chain_optional = False
        while True:
            t = self.tok
            if t.kind != OP:
                return node
            if t.value in (".", "?."):
                optional = chain_optional = chain_optional or t.value == "?."
                self.next()
                if optional and self.is_op("["):
                    node = self.index(node, optional=True)
                    continue
                if self.tok.kind != IDENT:
                    self.fail(f"expected a field name after '{t.value}', found {self.tok.describe()}")
                ft = self.next()
                path = None
                if isinstance(node, Name):
                    path = f"{node.name}.{ft.value}"
                elif isinstance(node, Member) and node.path:
                    path = f"{node.path}.{ft.value}"
                member = self.check(Member(t.pos, node, Lit(ft.pos, ft.value), optional, path))
                node = self.method_call(member, str(ft.value), ft) if self.is_op("(") else member
            elif t.value == "[":
                node = self.index(node, optional=chain_optional)
            else:
                return node

    def method_call(self, member: Node, name: str, tok: Token) -> Node:
        self.next()  # (
        args: list[Node] = []
        while not self.is_op(")"):
            args.append(self.expression(0))
            if not self.is_op(","):
                break
            self.next()
        self.expect_op(")")
        return self.check(Call(tok.pos, member, name, args))

    def index(self, node: Node, *, optional: bool) -> Node:
        t = self.expect_op("[")
        if self.is_op(":"):
            self.next()
            hi = None if self.is_op("]") else self.expression(0)
            self.expect_op("]")
            return self.check(Slice(t.pos, node, None, hi))
        key = self.expression(0)
        if self.is_op(":"):
            self.next()
            hi = None if self.is_op("]") else self.expression(0)
            self.expect_op("]")
            return self.check(Slice(t.pos, node, key, hi))
        self.expect_op("]")
        path = None
        if isinstance(key, Lit) and isinstance(key.value, str):
            base = node.name if isinstance(node, Name) else node.path if isinstance(node, Member) else None
            if base:
                path = f"{base}.{key.value}"
        return self.check(Member(t.pos, node, key, optional, path))
