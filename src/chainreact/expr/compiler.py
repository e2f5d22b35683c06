"""Turns a syntax tree into nested Python closures, one per node: `fn(scope) -> value`.

No Python `eval`/`compile` is involved; an expression can only do what these closures do. A closure tree
runs a typical condition in a few microseconds. Constant subtrees are folded at compile time.
"""

from __future__ import annotations

import operator
from collections.abc import Callable, Mapping
from typing import Any

from . import values as V
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
from .errors import ExprError, ExprSyntaxError, UndefinedName
from .scope import NIL, STRICT, Scope

Fn = Callable[["Scope"], Any]

_MISSING: Any = object()


class Compiler:
    def __init__(self, src: str) -> None:
        self.src = src
        self.lets: list[str] = []

    def compile(self, node: Node) -> Fn:
        fn = self._compile(node)
        return fn

    def _compile(self, node: Node) -> Fn:
        method = getattr(self, "c_" + type(node).__name__)
        fn: Fn = method(node)
        return fn

    # -- leaves ---------------------------------------------------------------------------------------

    def c_Lit(self, node: Lit) -> Fn:
        v = node.value
        return lambda s: v

    def c_Name(self, node: Name) -> Fn:
        name = node.name
        if name in self.lets:
            return lambda s: s.lets[name]
        if name == "$env":
            return lambda s: s.env

        def lookup(s: Scope) -> Any:
            v = s.env.get(name, _MISSING)
            if v is _MISSING:
                return s.undefined(name)
            return v

        return lookup

    def c_Pointer(self, node: Pointer) -> Fn:
        if node.name == "index":
            return lambda s: s.index
        if node.name == "acc":
            return lambda s: s.acc
        return lambda s: s.ptr

    def c_Let(self, node: Let) -> Fn:
        value = self._compile(node.value)
        self.lets.append(node.name)
        try:
            body = self._compile(node.body)
        finally:
            self.lets.pop()
        name = node.name

        def let(s: Scope) -> Any:
            old = s.lets.get(name, _MISSING)
            s.lets[name] = value(s)
            try:
                return body(s)
            finally:
                if old is _MISSING:
                    del s.lets[name]
                else:
                    s.lets[name] = old

        return let

    # -- access ---------------------------------------------------------------------------------------

    def c_Member(self, node: Member) -> Fn:
        obj = self._compile(node.obj)
        optional, path = node.optional, node.path
        if isinstance(node.key, Lit):
            key = node.key.value

            def member(s: Scope) -> Any:
                o = obj(s)
                if type(o) is dict:
                    v = o.get(key, _MISSING)
                    return s.missing_key(path, key) if v is _MISSING else v
                return _fetch(s, o, key, optional, path)

            return member
        keyfn = self._compile(node.key)

        def index(s: Scope) -> Any:
            o = obj(s)
            k = keyfn(s)
            if type(o) is dict:
                try:
                    v = o.get(k, _MISSING)
                except TypeError:  # an unhashable key
                    v = _MISSING
                return s.missing_key(path, k) if v is _MISSING else v
            return _fetch(s, o, k, optional, path)

        return index

    def c_Slice(self, node: Slice) -> Fn:
        obj = self._compile(node.obj)
        lo = self._compile(node.lo) if node.lo is not None else None
        hi = self._compile(node.hi) if node.hi is not None else None

        def sl(s: Scope) -> Any:
            o = obj(s)
            if not isinstance(o, list | tuple | str):
                raise ExprError(f"cannot slice {V.type_name(o)}")
            n = len(o)
            a = _int_index(lo(s)) if lo else 0
            b = _int_index(hi(s)) if hi else n
            if a < 0:
                a = max(n + a, 0)
            if b < 0:
                b = max(n + b, 0)
            b = min(b, n)
            a = min(a, b)
            return o[a:b]

        return sl

    # -- calls ----------------------------------------------------------------------------------------

    def c_Call(self, node: Call) -> Fn:
        from .builtins import FUNCTIONS, predicate_call

        args = node.args
        if isinstance(node.func, Name) and node.name not in self.lets:
            name = node.name
            takes_predicate = len(args) >= 2 and isinstance(args[1], Closure)
            if takes_predicate or (name in ("count", "sum") and len(args) == 1):
                fn = predicate_call(name, [self._compile(a) for a in args], self.src)
                if fn is not None:
                    return fn
            argfns = [self._compile(a) for a in args if not isinstance(a, Closure)]
            if any(isinstance(a, Closure) for a in args):
                raise ExprSyntaxError(f"{name}() does not take a predicate", expression=self.src,
                                      position=node.pos)
            if name == "now" and not argfns:
                # The common case in prompts; skip the lookup machinery.
                pass

            def call(s: Scope) -> Any:
                f = s.env.get(name)
                if f is None or not callable(f):
                    f = FUNCTIONS.get(name)
                    if f is None:
                        raise ExprError(f"unknown function {name}()")
                a = [g(s) for g in argfns]
                try:
                    return s.charge(f(*a))
                except ExprError:
                    raise
                except RecursionError:
                    raise ExprError(f"{name}(): value nested too deeply") from None
                except Exception as e:
                    raise ExprError(f"{name}(): {_describe(e)}") from None

            return call
        func = self._compile(node.func)
        argfns = [self._compile(a) for a in args]
        name = node.name

        def method(s: Scope) -> Any:
            f = func(s)
            if f is None and isinstance(node.func, Member) and (node.func.optional or s.optional):
                return None
            if not callable(f):
                raise ExprError(f"{name} is not a function ({V.type_name(f)})")
            try:
                return f(*[g(s) for g in argfns])
            except ExprError:
                raise
            except Exception as e:
                raise ExprError(f"{name}(): {_describe(e)}") from None

        return method

    def c_Closure(self, node: Closure) -> Fn:
        return self._compile(node.body)

    # -- operators ------------------------------------------------------------------------------------

    def c_Unary(self, node: Unary) -> Fn:
        x = self._compile(node.x)
        if node.op == "!":
            return self._fold(node, lambda s: not V.truth(x(s), "'!'"))
        if node.op == "-":
            return self._fold(node, lambda s: V.neg(x(s)))

        def plus(s: Scope) -> Any:
            v = x(s)
            if not V.is_num(v):
                raise ExprError(f"invalid operation: +{V.type_name(v)}")
            return v

        return self._fold(node, plus)

    def c_Cond(self, node: Cond) -> Fn:
        c, a, b = self._compile(node.cond), self._compile(node.yes), self._compile(node.no)
        if node.cond is node.yes:  # `x ?: y`
            return lambda s: v if V.truth(v := c(s), "'?:'") else b(s)
        return self._fold(node, lambda s: a(s) if V.truth(c(s), "'? :' condition") else b(s))

    def c_Array(self, node: Array) -> Fn:
        items = [self._compile(i) for i in node.items]
        return self._fold(node, lambda s: [f(s) for f in items])

    def c_MapLit(self, node: MapLit) -> Fn:
        pairs = [(self._compile(k), self._compile(v)) for k, v in node.pairs]

        def mp(s: Scope) -> Any:
            out: dict[Any, Any] = {}
            for k, v in pairs:
                key = k(s)
                try:
                    out[key] = v(s)
                except TypeError:
                    raise ExprError(f"a map key cannot be {V.type_name(key)}") from None
            return out

        return self._fold(node, mp)

    def c_Binary(self, node: Binary) -> Fn:
        op = node.op
        if op == "??":
            return self._coalesce(node)
        left, right = self._compile(node.left), self._compile(node.right)
        fn: Fn
        if op == "&&":
            def fn(s: Scope) -> Any:
                return V.truth(left(s), "'&&'") and V.truth(right(s), "'&&'")
        elif op == "||":
            def fn(s: Scope) -> Any:
                return V.truth(left(s), "'||'") or V.truth(right(s), "'||'")
        elif op == "==":
            def fn(s: Scope) -> Any:
                return V.eq(left(s), right(s))
        elif op == "!=":
            def fn(s: Scope) -> Any:
                return not V.eq(left(s), right(s))
        elif op in ("<", ">", "<=", ">="):
            pyop = {"<": operator.lt, ">": operator.gt, "<=": operator.le, ">=": operator.ge}[op]

            def fn(s: Scope) -> Any:
                a, b = left(s), right(s)
                ta, tb = type(a), type(b)
                if (ta is int or ta is float) and (tb is int or tb is float):
                    return pyop(a, b)
                return V.less(op, a, b)
        elif op == "+":
            def fn(s: Scope) -> Any:
                a, b = left(s), right(s)
                if type(a) is str and type(b) is str and len(a) + len(b) < 4096:
                    return a + b
                return s.charge(V.add(a, b))
        elif op in _ARITH:
            f2 = _ARITH[op]

            def fn(s: Scope) -> Any:
                return f2(left(s), right(s))
        elif op == "in":
            def fn(s: Scope) -> Any:
                return _in(left(s), right(s))
        elif op in ("contains", "startsWith", "endsWith"):
            strop: Callable[[str, str], bool] = {  # type: ignore[assignment]
                "contains": operator.contains, "startsWith": str.startswith, "endsWith": str.endswith}[op]

            def fn(s: Scope) -> Any:
                a, b = left(s), right(s)
                if type(a) is not str or type(b) is not str:
                    raise V.mismatch(op, a, b)
                return strop(a, b)
        elif op == "matches":
            fn = self._matches(node, left, right)
        elif op == "..":
            def fn(s: Scope) -> Any:
                a, b = left(s), right(s)
                if type(a) is not int or type(b) is not int:
                    raise V.mismatch("..", a, b)
                if b - a + 1 > V.MAX_ITEMS:
                    raise ExprError(f"range too large (more than {V.MAX_ITEMS} items)")
                return s.charge(list(range(a, b + 1)))
        elif op == ";":
            def fn(s: Scope) -> Any:
                left(s)
                return right(s)
        else:  # pragma: no cover - the parser only makes the operators above
            raise ExprSyntaxError(f"unknown operator {op}", expression=self.src, position=node.pos)
        names = [p for p in (_path(node.left), _path(node.right)) if p]
        if names and op not in ("&&", "||", "==", "!=", ";"):
            fn = _hint_nil(fn, names)
        return self._fold(node, fn)

    def _coalesce(self, node: Binary) -> Fn:
        left, right = self._compile(node.left), self._compile(node.right)

        def coalesce(s: Scope) -> Any:
            try:
                v = left(s)
            except UndefinedName:  # `x ?? 'default'` is how to say "x may be undefined", in every mode
                v = None
            return right(s) if v is None else v

        return coalesce

    def _matches(self, node: Binary, left: Fn, right: Fn) -> Fn:
        from .builtins import regex

        if isinstance(node.right, Lit) and isinstance(node.right.value, str):
            try:
                rx = regex(node.right.value)
            except ExprError as e:
                raise ExprSyntaxError(str(e), expression=self.src, position=node.right.pos) from None

            def fixed(s: Scope) -> Any:
                a = left(s)
                if type(a) is not str:
                    raise V.mismatch("matches", a, node.right.value)  # type: ignore[attr-defined]
                return rx.search(a) is not None

            return fixed

        def dynamic(s: Scope) -> Any:
            a, b = left(s), right(s)
            if type(a) is not str or type(b) is not str:
                raise V.mismatch("matches", a, b)
            return regex(b).search(a) is not None

        return dynamic

    def _fold(self, node: Node, fn: Fn) -> Fn:
        """Evaluate a subtree made only of literals once, now."""
        if not _constant(node):
            return fn
        try:
            v = fn(Scope({}, NIL, False))
        except ExprError:
            return fn  # let it fail at run time, where the caller expects errors
        if isinstance(v, list | dict):
            return fn  # mutable: a fresh value per run
        return lambda s: v


_ARITH: dict[str, Callable[[Any, Any], Any]] = {
    "-": V.sub, "*": V.mul, "/": V.div, "%": V.mod, "**": V.power,
}


def _path(node: Node) -> str | None:
    if isinstance(node, Name):
        return node.name
    if isinstance(node, Member):
        return node.path
    return None


def _hint_nil(fn: Fn, names: list[str]) -> Fn:
    """`nil + 'x'` fails as in expr-lang; the message says which names may be undefined."""
    hint = f" (is {' or '.join(names)} defined?)"

    def hinted(s: Scope) -> Any:
        try:
            return fn(s)
        except ExprError as e:
            if e.detail.startswith("invalid operation") and "nil" in e.detail and hint not in e.detail:
                e.detail += hint
                e.args = (e.detail,)
            raise

    return hinted


def _constant(node: Node) -> bool:
    if isinstance(node, Lit):
        return True
    if isinstance(node, Unary):
        return _constant(node.x)
    if isinstance(node, Binary):
        return node.op not in ("..",) and _constant(node.left) and _constant(node.right)
    if isinstance(node, Cond):
        return _constant(node.cond) and _constant(node.yes) and _constant(node.no)
    return False


def _int_index(v: Any) -> int:
    if type(v) is int:
        return v
    if type(v) is float and v.is_integer():
        return int(v)
    raise ExprError(f"invalid index: {V.type_name(v)} ({V.short(v)})")


def _fetch(s: Scope, o: Any, key: Any, optional: bool, path: str | None) -> Any:
    if o is None:
        if optional or s.optional:
            return None
        parent = path.rsplit(".", 1)[0] if path and "." in path else None
        where = f" ({parent} is nil)" if parent else ""
        if s.mode == STRICT and parent:
            raise UndefinedName(f"'{parent}' is not defined", name=parent)
        raise ExprError(f"cannot fetch {key} from nil{where}")
    if isinstance(o, Mapping):
        try:
            v = o.get(key, _MISSING)
        except TypeError:
            v = _MISSING
        return s.missing_key(path, key) if v is _MISSING else v
    if isinstance(o, list | tuple | str):
        if type(key) is not int and not (type(key) is float and key.is_integer()):
            raise ExprError(f"cannot fetch {key} from {V.type_name(o)}")
        i = int(key)
        n = len(o)
        j = i + n if i < 0 else i
        if j < 0 or j >= n:
            raise ExprError(f"index out of range: {i} (array length is {n})")
        return o[j]
    if isinstance(key, str):
        from .builtins import method_of

        m = method_of(o, key)
        if m is not None:
            return m
    raise ExprError(f"cannot fetch {key} from {V.type_name(o)}")


def _in(a: Any, b: Any) -> bool:
    if isinstance(b, list | tuple):
        ta = type(a)
        if ta is str or ta is int:
            for x in b:
                if type(x) is ta and x == a:
                    return True
            if ta is str:
                return False
        return any(V.eq(a, x) for x in b)
    if isinstance(b, Mapping):
        try:
            return a in b
        except TypeError:
            return False
    raise ExprError(f'operator "in" not defined on {V.type_name(b)}')


def _describe(e: BaseException) -> str:
    msg = str(e)
    return f"{type(e).__name__}: {msg}" if isinstance(e, TypeError | AttributeError | KeyError) else msg
