"""expr-lang's builtin functions (https://expr-lang.org/docs/language-definition): strings, numbers,
arrays and maps, conversions. Times are in timefns.py, RuleGo's `include`/`fileExists` in files.py, the
predicate functions (`filter(xs, # > 1)`) in predicates.py; importing this module registers them all.

Every result that can grow (repeat, replace, join, concat, flatten, ranges) is bounded; `matches` and the
regex builtins use RE2 (linear time), so no pattern can freeze the process.
"""

from __future__ import annotations

import base64
import math
from collections.abc import Callable, Mapping
from functools import lru_cache
from typing import Any

from . import values as V
from .errors import ExprError, quote
from .registry import FUNCTIONS, MAX_PATTERN, arg_arr, arg_num, arg_str, builtin, register_function, sort_key

# --- strings -----------------------------------------------------------------------------------------


@builtin("len")
def _len(v: Any) -> int:
    if isinstance(v, str | list | tuple | Mapping):
        return len(v)
    raise ExprError(f"invalid argument for len (type {V.type_name(v)})")


@builtin("upper")
def _upper(s: Any) -> str:
    return arg_str(s, "upper").upper()


@builtin("lower")
def _lower(s: Any) -> str:
    return arg_str(s, "lower").lower()


@builtin("trim")
def _trim(s: Any, chars: Any = None) -> str:
    return arg_str(s, "trim").strip() if chars is None else arg_str(s, "trim").strip(arg_str(chars, "trim"))


@builtin("trimPrefix")
def _trim_prefix(s: Any, p: Any) -> str:
    return arg_str(s, "trimPrefix").removeprefix(arg_str(p, "trimPrefix"))


@builtin("trimSuffix")
def _trim_suffix(s: Any, p: Any) -> str:
    return arg_str(s, "trimSuffix").removesuffix(arg_str(p, "trimSuffix"))


@builtin("hasPrefix")
def _has_prefix(s: Any, p: Any) -> bool:
    return arg_str(s, "hasPrefix").startswith(arg_str(p, "hasPrefix"))


@builtin("hasSuffix")
def _has_suffix(s: Any, p: Any) -> bool:
    return arg_str(s, "hasSuffix").endswith(arg_str(p, "hasSuffix"))


def _go_split(s: str, sep: str, n: int, after: bool) -> list[str]:
    if n == 0:
        return []
    if sep == "":
        parts = list(s)
        if n > 0 and len(parts) > n:
            parts = [*parts[:n - 1], "".join(parts[n - 1:])]
        return parts
    if n < 0 and s.count(sep) >= V.MAX_ITEMS:
        raise ExprError(f"split(): result too large (more than {V.MAX_ITEMS} items)")
    pieces = s.split(sep, n - 1) if n > 0 else s.split(sep)
    if after:
        pieces = [p + sep for p in pieces[:-1]] + pieces[-1:]
    return pieces


@builtin("split")
def _split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    return _go_split(arg_str(s, "split"), arg_str(sep, "split", "delimiter"), int(arg_num(n, "split")), False)


@builtin("splitAfter")
def _split_after(s: Any, sep: Any, n: Any = -1) -> list[str]:
    return _go_split(arg_str(s, "splitAfter"), arg_str(sep, "splitAfter", "delimiter"),
                     int(arg_num(n, "split")), True)


@builtin("replace")
def _replace(s: Any, old: Any, new: Any) -> str:
    s, old, new = arg_str(s, "replace"), arg_str(old, "replace"), arg_str(new, "replace")
    # Bound before building: "" matches len(s)+1 times.
    count = len(s) + 1 if old == "" else s.count(old)
    if len(s) + count * (len(new) - len(old)) > V.MAX_STRING:
        raise ExprError(f"replace(): result too large (more than {V.MAX_STRING} characters)")
    return s.replace(old, new)


@builtin("repeat")
def _repeat(s: Any, n: Any) -> str:
    s = arg_str(s, "repeat")
    if type(n) is not int or n < 0:
        raise ExprError("repeat(): count must be a non-negative int")
    if len(s) * n > V.MAX_STRING:
        raise ExprError(f"repeat(): result too large (more than {V.MAX_STRING} characters)")
    return s * n


@builtin("indexOf")
def _index_of(s: Any, sub: Any) -> int:
    return arg_str(s, "indexOf").find(arg_str(sub, "indexOf"))


@builtin("lastIndexOf")
def _last_index_of(s: Any, sub: Any) -> int:
    return arg_str(s, "lastIndexOf").rfind(arg_str(sub, "lastIndexOf"))


@builtin("join")
def _join(arr: Any, sep: Any = "") -> str:
    items = arg_arr(arr, "join")
    sep = arg_str(sep, "join", "delimiter")
    total = sum(len(x) if type(x) is str else 0 for x in items) + len(sep) * max(len(items) - 1, 0)
    if total > V.MAX_STRING:
        raise ExprError(f"join(): result too large (more than {V.MAX_STRING} characters)")
    return sep.join(arg_str(x, "join", "every item") for x in items)


@lru_cache(maxsize=512)
def regex(pattern: str) -> Any:
    """A compiled RE2 pattern (Go's regexp syntax, linear-time matching)."""
    if len(pattern) > MAX_PATTERN:
        raise ExprError(f"regular expression too long (more than {MAX_PATTERN} characters)")
    import re2

    options = re2.Options()
    options.log_errors = False  # the error goes to the caller, not to stderr
    try:
        return re2.compile(pattern, options)
    except Exception as e:
        detail = e.args[0] if e.args else e
        detail = detail.decode("utf-8", "replace") if isinstance(detail, bytes) else str(detail)
        # RE2's reason quotes the pattern again: both are cut
        raise ExprError(f"invalid regular expression {quote(pattern)!r}: {quote(detail, 100)}") from None


# --- numbers -----------------------------------------------------------------------------------------


@builtin("abs")
def _abs(x: Any) -> Any:
    return abs(arg_num(x, "abs"))


@builtin("ceil")
def _ceil(x: Any) -> float:
    return float(math.ceil(arg_num(x, "ceil"))) if math.isfinite(x) else float(x)


@builtin("floor")
def _floor(x: Any) -> float:
    return float(math.floor(arg_num(x, "floor"))) if math.isfinite(x) else float(x)


@builtin("round")
def _round(x: Any) -> float:
    x = arg_num(x, "round")
    if not math.isfinite(x):
        return float(x)
    return float(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)  # half away from zero, as Go


def _numbers(args: tuple[Any, ...], fn: str) -> list[Any]:
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    if not args:
        raise ExprError(f"{fn}(): no values")
    return [arg_num(a, fn) for a in args]


@builtin("max")
def _max(*args: Any) -> Any:
    return max(_numbers(args, "max"))


@builtin("min")
def _min(*args: Any) -> Any:
    return min(_numbers(args, "min"))


@builtin("mean")
def _mean(arr: Any) -> float:
    xs = [arg_num(x, "mean") for x in arg_arr(arr, "mean")]
    return sum(xs) / len(xs) if xs else 0.0


@builtin("median")
def _median(arr: Any) -> float:
    xs = sorted(arg_num(x, "median") for x in arg_arr(arr, "median"))
    if not xs:
        return 0.0
    m = len(xs) // 2
    return float(xs[m]) if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


@builtin("int")
def _int(v: Any) -> int:
    if type(v) is int:
        return v
    if type(v) is float:
        if not math.isfinite(v):
            raise ExprError(f"int(): cannot convert {V.format_float(v)}")
        return V.wrap_int(int(v))
    if type(v) is str:
        try:
            r = int(v.strip()) if len(v) <= 40 else None
        except ValueError:
            r = None
        if r is None or not (-(2**63) <= r < 2**63):
            raise ExprError(f"int(): invalid syntax: {V.short(v)!r}")
        return r
    if type(v) is bool:
        raise ExprError("int(): cannot convert bool")
    raise ExprError(f"invalid operation: int({V.type_name(v)})")


@builtin("float")
def _float(v: Any) -> float:
    if V.is_num(v):
        return float(v)
    if type(v) is str:
        try:
            return float(v.strip()) if len(v) <= 400 else float("x")
        except ValueError:
            raise ExprError(f"float(): invalid syntax: {V.short(v)!r}") from None
    raise ExprError(f"invalid operation: float({V.type_name(v)})")


@builtin("string")
def _string(v: Any) -> str:
    return V.go_format(v)


@builtin("type")
def _type(v: Any) -> str:
    return V.type_name(v)


for _name, _op in {"bitand": lambda a, b: a & b, "bitor": lambda a, b: a | b, "bitxor": lambda a, b: a ^ b,
                   "bitnand": lambda a, b: a & ~b}.items():
    def _bit(a: Any, b: Any, _op: Callable[[int, int], int] = _op, _name: str = _name) -> int:
        if type(a) is not int or type(b) is not int:
            raise ExprError(f"{_name}(): arguments must be ints")
        return V.wrap_int(_op(a, b))

    FUNCTIONS[_name] = _bit


@builtin("bitnot")
def _bitnot(a: Any) -> int:
    if type(a) is not int:
        raise ExprError("bitnot(): argument must be an int")
    return ~a


@builtin("bitshl")
def _bitshl(a: Any, n: Any) -> int:
    if type(a) is not int or type(n) is not int or n < 0:
        raise ExprError("bitshl(): arguments must be ints, the shift not negative")
    return V.wrap_int(a << min(n, 64))


@builtin("bitshr")
def _bitshr(a: Any, n: Any) -> int:
    if type(a) is not int or type(n) is not int or n < 0:
        raise ExprError("bitshr(): arguments must be ints, the shift not negative")
    return a >> min(n, 64)


@builtin("bitushr")
def _bitushr(a: Any, n: Any) -> int:
    if type(a) is not int or type(n) is not int or n < 0:
        raise ExprError("bitushr(): arguments must be ints, the shift not negative")
    return V.wrap_int((a % 2**64) >> min(n, 64))


# --- arrays and maps ---------------------------------------------------------------------------------


@builtin("first")
def _first(arr: Any) -> Any:
    a = arg_arr(arr, "first")
    return a[0] if a else None


@builtin("last")
def _last(arr: Any) -> Any:
    a = arg_arr(arr, "last")
    return a[-1] if a else None


@builtin("take")
def _take(arr: Any, n: Any) -> list[Any]:
    if type(n) is not int:
        raise ExprError("take(): count must be an int")
    return list(arg_arr(arr, "take")[: max(n, 0)])


@builtin("reverse")
def _reverse(arr: Any) -> list[Any]:
    return list(reversed(arg_arr(arr, "reverse")))


@builtin("sort")
def _sort(arr: Any, order: Any = "asc") -> list[Any]:
    if order not in ("asc", "desc"):
        raise ExprError("sort(): order must be 'asc' or 'desc'")
    return sorted(arg_arr(arr, "sort"), key=sort_key, reverse=order == "desc")


@builtin("keys")
def _keys(m: Any) -> list[Any]:
    if not isinstance(m, Mapping):
        raise ExprError(f"keys(): argument must be a map, got {V.type_name(m)}")
    return list(m.keys())


@builtin("values")
def _values(m: Any) -> list[Any]:
    if not isinstance(m, Mapping):
        raise ExprError(f"values(): argument must be a map, got {V.type_name(m)}")
    return list(m.values())


@builtin("toPairs")
def _to_pairs(m: Any) -> list[list[Any]]:
    if not isinstance(m, Mapping):
        raise ExprError(f"toPairs(): argument must be a map, got {V.type_name(m)}")
    return [[k, v] for k, v in m.items()]


@builtin("fromPairs")
def _from_pairs(arr: Any) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for p in arg_arr(arr, "fromPairs"):
        if not isinstance(p, list | tuple) or len(p) != 2:
            raise ExprError("fromPairs(): every item must be a [key, value] pair")
        try:
            out[p[0]] = p[1]
        except TypeError:
            raise ExprError(f"fromPairs(): a key cannot be {V.type_name(p[0])}") from None
    return out


@builtin("concat")
def _concat(*arrs: Any) -> list[Any]:
    total = sum(len(arg_arr(a, "concat")) for a in arrs)
    if total > V.MAX_ITEMS:
        raise ExprError(f"concat(): result too large (more than {V.MAX_ITEMS} items)")
    return [x for a in arrs for x in a]


@builtin("flatten")
def _flatten(arr: Any) -> list[Any]:
    out: list[Any] = []

    def walk(a: Any, depth: int) -> None:
        if depth > 100:
            raise ExprError("flatten(): array nested too deeply")
        for x in a:
            if isinstance(x, list | tuple):
                walk(x, depth + 1)
            else:
                out.append(x)
                if len(out) > V.MAX_ITEMS:
                    raise ExprError(f"flatten(): result too large (more than {V.MAX_ITEMS} items)")

    walk(arg_arr(arr, "flatten"), 0)
    return out


@builtin("uniq")
def _uniq(arr: Any) -> list[Any]:
    out: list[Any] = []
    seen: set[Any] = set()
    others: list[Any] = []  # unhashable items (arrays, maps): compared one by one, so bounded
    for x in arg_arr(arr, "uniq"):
        key = _uniq_key(x)
        if key is not None:
            if key not in seen:
                seen.add(key)
                out.append(x)
        elif not any(V.eq(x, y) for y in others):
            if len(others) >= 2000:
                raise ExprError("uniq(): too many arrays or maps to compare (more than 2000)")
            others.append(x)
            out.append(x)
    return out


def _uniq_key(x: Any) -> Any:
    """A hashable key with expr-lang's equality (1 == 1.0, true != 1), or None for arrays and maps."""
    if x is None or type(x) is str:
        return (0, x)
    if type(x) is bool:
        return (1, x)
    if V.is_num(x):
        return (2, x)  # int and float hash alike when equal
    if isinstance(x, list | tuple | Mapping):
        return None
    try:
        hash(x)
    except TypeError:
        return None
    return (3, x)


@builtin("get")
def _get(v: Any, key: Any) -> Any:
    if isinstance(v, Mapping):
        try:
            return v.get(key)
        except TypeError:
            return None
    if isinstance(v, list | tuple | str) and type(key) is int:
        n = len(v)
        i = key + n if key < 0 else key
        return v[i] if 0 <= i < n else None
    return None


# --- conversion --------------------------------------------------------------------------------------


@builtin("toJSON")
def _to_json(v: Any) -> str:
    return V.to_json(v, indent=True)  # expr-lang: json.MarshalIndent(v, "", "  ")


@builtin("fromJSON")
def _from_json(s: Any) -> Any:
    import orjson

    try:
        return orjson.loads(arg_str(s, "fromJSON"))
    except orjson.JSONDecodeError as e:
        raise ExprError(f"fromJSON(): {e}") from None


@builtin("toBase64")
def _to_base64(s: Any) -> str:
    return base64.b64encode(arg_str(s, "toBase64").encode()).decode()


@builtin("fromBase64")
def _from_base64(s: Any) -> str:
    try:
        return base64.b64decode(arg_str(s, "fromBase64"), validate=True).decode("utf-8", "replace")
    except ValueError as e:
        raise ExprError(f"fromBase64(): {e}") from None


from . import files, predicates, timefns  # noqa: E402  (registers their functions)
from .files import read_text_file  # noqa: E402
from .predicates import predicate_call  # noqa: E402
from .timefns import method_of  # noqa: E402

__all__ = ["FUNCTIONS", "files", "method_of", "predicate_call", "predicates", "read_text_file",
           "register_function", "timefns"]
