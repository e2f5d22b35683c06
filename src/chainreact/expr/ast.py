"""Syntax tree of the expression language. Every node knows its source offset and its depth (the
compiler refuses trees deeper than a bound, so evaluation cannot exhaust the Python stack)."""

from __future__ import annotations

from typing import Any


class Node:
    __slots__ = ("depth", "pos")
    depth: int
    pos: int

    def __init__(self, pos: int, *children: Node | None) -> None:
        self.pos = pos
        self.depth = 1 + max((c.depth for c in children if c is not None), default=0)


class Lit(Node):
    __slots__ = ("value",)

    def __init__(self, pos: int, value: Any) -> None:
        super().__init__(pos)
        self.value = value


class Name(Node):
    """A top-level name (`$env` is the whole environment); `let` names are resolved by the compiler."""

    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name


class Pointer(Node):
    """`#` (the current element in a predicate), `#index`, `#acc`."""

    __slots__ = ("name",)

    def __init__(self, pos: int, name: str) -> None:
        super().__init__(pos)
        self.name = name


class Member(Node):
    """`obj.name`, `obj?.name`, `obj[key]`. `path` is the dotted source text (`global.a.b`) when the chain
    is made of names, for error messages."""

    __slots__ = ("key", "obj", "optional", "path")

    def __init__(self, pos: int, obj: Node, key: Node, optional: bool, path: str | None) -> None:
        super().__init__(pos, obj, key)
        self.obj, self.key, self.optional, self.path = obj, key, optional, path


class Slice(Node):
    __slots__ = ("hi", "lo", "obj")

    def __init__(self, pos: int, obj: Node, lo: Node | None, hi: Node | None) -> None:
        super().__init__(pos, obj, lo, hi)
        self.obj, self.lo, self.hi = obj, lo, hi


class Call(Node):
    """`name(args)` (a function from the environment or a builtin) or `obj.method(args)`."""

    __slots__ = ("args", "func", "name")

    def __init__(self, pos: int, func: Node, name: str, args: list[Node]) -> None:
        super().__init__(pos, func, *args)
        self.func, self.name, self.args = func, name, args


class Closure(Node):
    """A predicate argument (`filter(xs, # > 1)`, `map(xs, {.name})`)."""

    __slots__ = ("body",)

    def __init__(self, pos: int, body: Node) -> None:
        super().__init__(pos, body)
        self.body = body


class Unary(Node):
    __slots__ = ("op", "x")

    def __init__(self, pos: int, op: str, x: Node) -> None:
        super().__init__(pos, x)
        self.op, self.x = op, x


class Binary(Node):
    __slots__ = ("left", "op", "right")

    def __init__(self, pos: int, op: str, left: Node, right: Node) -> None:
        super().__init__(pos, left, right)
        self.op, self.left, self.right = op, left, right


class Cond(Node):
    __slots__ = ("cond", "no", "yes")

    def __init__(self, pos: int, cond: Node, yes: Node, no: Node) -> None:
        super().__init__(pos, cond, yes, no)
        self.cond, self.yes, self.no = cond, yes, no


class Array(Node):
    __slots__ = ("items",)

    def __init__(self, pos: int, items: list[Node]) -> None:
        super().__init__(pos, *items)
        self.items = items


class MapLit(Node):
    __slots__ = ("pairs",)

    def __init__(self, pos: int, pairs: list[tuple[Node, Node]]) -> None:
        super().__init__(pos, *[x for kv in pairs for x in kv])
        self.pairs = pairs


class Let(Node):
    __slots__ = ("body", "name", "value")

    def __init__(self, pos: int, name: str, value: Node, body: Node) -> None:
        super().__init__(pos, value, body)
        self.name, self.value, self.body = name, value, body
