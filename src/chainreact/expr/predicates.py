"""The predicate builtins, whose second argument is a closure: filter(xs, # > 1), map, all, any, ..."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from . import values as V
from .errors import ExprError
from .registry import arg_num, sort_key
from .scope import Scope

# --- predicates --------------------------------------------------------------------------------------


def predicate_call(name: str, fns: list[Callable[[Any], Any]], src: str) -> Callable[[Any], Any] | None:
    """The closure for a predicate builtin (`filter(arr, pred)` ...), None if `name` is not one."""

    arr_fn = fns[0]
    pred = fns[1] if len(fns) > 1 else None
    rest = fns[2:]

    def items(s: Scope) -> list[Any] | tuple[Any, ...]:
        a = arr_fn(s)
        if isinstance(a, Mapping) and name in ("all", "any", "none", "one", "count", "filter", "map"):
            a = list(a.values())
        if not isinstance(a, list | tuple):
            raise ExprError(f"{name}(): first argument must be an array, got {V.type_name(a)}")
        s.spend(len(a))
        return a

    def each(s: Scope, a: list[Any] | tuple[Any, ...]) -> Any:
        """Yield (item, predicate value) with # and #index set."""
        assert pred is not None
        saved = (s.ptr, s.index)
        try:
            for i, x in enumerate(a):
                s.ptr, s.index = x, i
                yield x, s.charge(pred(s))
        finally:
            s.ptr, s.index = saved

    def test(v: Any) -> bool:
        return V.truth(v, f"{name}() predicate")

    if name == "count" and pred is None:
        return lambda s: sum(1 for x in items(s) if x is True)
    if name == "sum" and pred is None:
        return lambda s: _sum(items(s))
    if pred is None:
        return None
    if name == "filter":
        return lambda s: [x for x, v in each(s, items(s)) if test(v)]
    if name == "map":
        return lambda s: [v for _, v in each(s, items(s))]
    if name == "all":
        return lambda s: all(test(v) for _, v in each(s, items(s)))
    if name == "any":
        return lambda s: any(test(v) for _, v in each(s, items(s)))
    if name == "none":
        return lambda s: not any(test(v) for _, v in each(s, items(s)))
    if name == "one":
        return lambda s: sum(1 for _, v in each(s, items(s)) if test(v)) == 1
    if name == "count":
        return lambda s: sum(1 for _, v in each(s, items(s)) if test(v))
    if name == "sum":
        return lambda s: _sum([v for _, v in each(s, items(s))])
    if name in ("find", "findIndex"):
        def find(s: Scope) -> Any:
            for i, (x, v) in enumerate(each(s, items(s))):
                if test(v):
                    return x if name == "find" else i
            return None if name == "find" else -1
        return find
    if name in ("findLast", "findLastIndex"):
        def find_last(s: Scope) -> Any:
            a = items(s)
            found: Any = None if name == "findLast" else -1
            for i, (x, v) in enumerate(each(s, a)):
                if test(v):
                    found = x if name == "findLast" else i
            return found
        return find_last
    if name == "groupBy":
        def group(s: Scope) -> Any:
            out: dict[Any, list[Any]] = {}
            for x, v in each(s, items(s)):
                try:
                    out.setdefault(v, []).append(x)
                except TypeError:
                    raise ExprError(f"groupBy(): cannot group by {V.type_name(v)}") from None
            return out
        return group
    if name == "sortBy":
        def sort_by(s: Scope) -> Any:
            order = rest[0](s) if rest else "asc"
            if order not in ("asc", "desc"):
                raise ExprError("sortBy(): order must be 'asc' or 'desc'")
            pairs = list(each(s, items(s)))
            pairs.sort(key=lambda p: sort_key(p[1]), reverse=order == "desc")
            return [x for x, _ in pairs]
        return sort_by
    if name == "reduce":
        def reduce(s: Scope) -> Any:
            a = items(s)
            if rest:
                acc, start = rest[0](s), 0
            elif a:
                acc, start = a[0], 1
            else:
                raise ExprError("reduce(): empty array and no initial value")
            saved = (s.ptr, s.index, s.acc)
            try:
                for i in range(start, len(a)):
                    s.ptr, s.index, s.acc = a[i], i, acc
                    acc = pred(s)
            finally:
                s.ptr, s.index, s.acc = saved
            return acc
        return reduce
    return None


def _sum(xs: Any) -> Any:
    total: Any = 0
    for x in xs:
        total = V.add(total, arg_num(x, "sum"))
    return total
