"""expr-lang's builtin functions (https://expr-lang.org/docs/language-definition), RuleGo's `include` and
`fileExists`, and the predicate functions (`filter(xs, # > 1)`).

Every result that can grow (repeat, replace, join, concat, flatten, ranges) is bounded; `matches` and the
regex builtins use RE2 (linear time), so no pattern can freeze the process.
"""

from __future__ import annotations

import base64
import math
import os
import stat
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import values as V
from .errors import ExprError

FUNCTIONS: dict[str, Callable[..., Any]] = {}

MAX_INCLUDE = 4 * 1024 * 1024  # bytes include() reads at most
MAX_PATTERN = 4096  # characters of a regular expression


def register_function(name: str, fn: Callable[..., Any]) -> None:
    """Make `fn` callable as `name(...)` in every expression (an environment value of the same name wins)."""
    if not name.isidentifier():
        raise ValueError(f"not a function name: {name!r}")
    FUNCTIONS[name] = fn


def _builtin(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    def deco(fn: Callable[..., Any]) -> Callable[..., Any]:
        FUNCTIONS[name] = fn
        return fn

    return deco


def _str(v: Any, fn: str, what: str = "argument") -> str:
    if type(v) is not str:
        raise ExprError(f"{fn}(): {what} must be a string, got {V.type_name(v)}")
    return v


def _arr(v: Any, fn: str) -> list[Any] | tuple[Any, ...]:
    if not isinstance(v, list | tuple):
        raise ExprError(f"{fn}(): argument must be an array, got {V.type_name(v)}")
    return v


def _num(v: Any, fn: str) -> int | float:
    if not V.is_num(v):
        raise ExprError(f"{fn}(): argument must be a number, got {V.type_name(v)}")
    return v


def _bounded(s: str, fn: str) -> str:
    if len(s) > V.MAX_STRING:
        raise ExprError(f"{fn}(): result too large (more than {V.MAX_STRING} characters)")
    return s


# --- strings -----------------------------------------------------------------------------------------


@_builtin("len")
def _len(v: Any) -> int:
    if isinstance(v, str | list | tuple | Mapping):
        return len(v)
    raise ExprError(f"invalid argument for len (type {V.type_name(v)})")


@_builtin("upper")
def _upper(s: Any) -> str:
    return _str(s, "upper").upper()


@_builtin("lower")
def _lower(s: Any) -> str:
    return _str(s, "lower").lower()


@_builtin("trim")
def _trim(s: Any, chars: Any = None) -> str:
    return _str(s, "trim").strip() if chars is None else _str(s, "trim").strip(_str(chars, "trim"))


@_builtin("trimPrefix")
def _trim_prefix(s: Any, p: Any) -> str:
    return _str(s, "trimPrefix").removeprefix(_str(p, "trimPrefix"))


@_builtin("trimSuffix")
def _trim_suffix(s: Any, p: Any) -> str:
    return _str(s, "trimSuffix").removesuffix(_str(p, "trimSuffix"))


@_builtin("hasPrefix")
def _has_prefix(s: Any, p: Any) -> bool:
    return _str(s, "hasPrefix").startswith(_str(p, "hasPrefix"))


@_builtin("hasSuffix")
def _has_suffix(s: Any, p: Any) -> bool:
    return _str(s, "hasSuffix").endswith(_str(p, "hasSuffix"))


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


@_builtin("split")
def _split(s: Any, sep: Any, n: Any = -1) -> list[str]:
    return _go_split(_str(s, "split"), _str(sep, "split", "delimiter"), int(_num(n, "split")), False)


@_builtin("splitAfter")
def _split_after(s: Any, sep: Any, n: Any = -1) -> list[str]:
    return _go_split(_str(s, "splitAfter"), _str(sep, "splitAfter", "delimiter"), int(_num(n, "split")), True)


@_builtin("replace")
def _replace(s: Any, old: Any, new: Any) -> str:
    s, old, new = _str(s, "replace"), _str(old, "replace"), _str(new, "replace")
    # Bound before building: "" matches len(s)+1 times.
    count = len(s) + 1 if old == "" else s.count(old)
    if len(s) + count * (len(new) - len(old)) > V.MAX_STRING:
        raise ExprError(f"replace(): result too large (more than {V.MAX_STRING} characters)")
    return s.replace(old, new)


@_builtin("repeat")
def _repeat(s: Any, n: Any) -> str:
    s = _str(s, "repeat")
    if type(n) is not int or n < 0:
        raise ExprError("repeat(): count must be a non-negative int")
    if len(s) * n > V.MAX_STRING:
        raise ExprError(f"repeat(): result too large (more than {V.MAX_STRING} characters)")
    return s * n


@_builtin("indexOf")
def _index_of(s: Any, sub: Any) -> int:
    return _str(s, "indexOf").find(_str(sub, "indexOf"))


@_builtin("lastIndexOf")
def _last_index_of(s: Any, sub: Any) -> int:
    return _str(s, "lastIndexOf").rfind(_str(sub, "lastIndexOf"))


@_builtin("join")
def _join(arr: Any, sep: Any = "") -> str:
    items = _arr(arr, "join")
    sep = _str(sep, "join", "delimiter")
    total = sum(len(x) if type(x) is str else 0 for x in items) + len(sep) * max(len(items) - 1, 0)
    if total > V.MAX_STRING:
        raise ExprError(f"join(): result too large (more than {V.MAX_STRING} characters)")
    return sep.join(_str(x, "join", "every item") for x in items)


@lru_cache(maxsize=512)
def regex(pattern: str) -> Any:
    """A compiled RE2 pattern (Go's regexp syntax, linear-time matching)."""
    if len(pattern) > MAX_PATTERN:
        raise ExprError(f"regular expression too long (more than {MAX_PATTERN} characters)")
    import re2

    try:
        return re2.compile(pattern)
    except Exception as e:
        raise ExprError(f"invalid regular expression {pattern!r}: {e}") from None


# --- numbers -----------------------------------------------------------------------------------------


@_builtin("abs")
def _abs(x: Any) -> Any:
    return abs(_num(x, "abs"))


@_builtin("ceil")
def _ceil(x: Any) -> float:
    return float(math.ceil(_num(x, "ceil"))) if math.isfinite(x) else float(x)


@_builtin("floor")
def _floor(x: Any) -> float:
    return float(math.floor(_num(x, "floor"))) if math.isfinite(x) else float(x)


@_builtin("round")
def _round(x: Any) -> float:
    x = _num(x, "round")
    if not math.isfinite(x):
        return float(x)
    return float(math.floor(abs(x) + 0.5)) * (1 if x >= 0 else -1)  # half away from zero, as Go


def _numbers(args: tuple[Any, ...], fn: str) -> list[Any]:
    if len(args) == 1 and isinstance(args[0], list | tuple):
        args = tuple(args[0])
    if not args:
        raise ExprError(f"{fn}(): no values")
    return [_num(a, fn) for a in args]


@_builtin("max")
def _max(*args: Any) -> Any:
    return max(_numbers(args, "max"))


@_builtin("min")
def _min(*args: Any) -> Any:
    return min(_numbers(args, "min"))


@_builtin("mean")
def _mean(arr: Any) -> float:
    xs = [_num(x, "mean") for x in _arr(arr, "mean")]
    return sum(xs) / len(xs) if xs else 0.0


@_builtin("median")
def _median(arr: Any) -> float:
    xs = sorted(_num(x, "median") for x in _arr(arr, "median"))
    if not xs:
        return 0.0
    m = len(xs) // 2
    return float(xs[m]) if len(xs) % 2 else (xs[m - 1] + xs[m]) / 2


@_builtin("int")
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


@_builtin("float")
def _float(v: Any) -> float:
    if V.is_num(v):
        return float(v)
    if type(v) is str:
        try:
            return float(v.strip()) if len(v) <= 400 else float("x")
        except ValueError:
            raise ExprError(f"float(): invalid syntax: {V.short(v)!r}") from None
    raise ExprError(f"invalid operation: float({V.type_name(v)})")


@_builtin("string")
def _string(v: Any) -> str:
    return V.go_format(v)


@_builtin("type")
def _type(v: Any) -> str:
    return V.type_name(v)


for _name, _op in {"bitand": lambda a, b: a & b, "bitor": lambda a, b: a | b, "bitxor": lambda a, b: a ^ b,
                   "bitnand": lambda a, b: a & ~b}.items():
    def _bit(a: Any, b: Any, _op: Callable[[int, int], int] = _op, _name: str = _name) -> int:
        if type(a) is not int or type(b) is not int:
            raise ExprError(f"{_name}(): arguments must be ints")
        return V.wrap_int(_op(a, b))

    FUNCTIONS[_name] = _bit


@_builtin("bitnot")
def _bitnot(a: Any) -> int:
    if type(a) is not int:
        raise ExprError("bitnot(): argument must be an int")
    return ~a


@_builtin("bitshl")
def _bitshl(a: Any, n: Any) -> int:
    if type(a) is not int or type(n) is not int or n < 0:
        raise ExprError("bitshl(): arguments must be ints, the shift not negative")
    return V.wrap_int(a << min(n, 64))


@_builtin("bitshr")
def _bitshr(a: Any, n: Any) -> int:
    if type(a) is not int or type(n) is not int or n < 0:
        raise ExprError("bitshr(): arguments must be ints, the shift not negative")
    return a >> min(n, 64)


@_builtin("bitushr")
def _bitushr(a: Any, n: Any) -> int:
    if type(a) is not int or type(n) is not int or n < 0:
        raise ExprError("bitushr(): arguments must be ints, the shift not negative")
    return V.wrap_int((a % 2**64) >> min(n, 64))


# --- arrays and maps ---------------------------------------------------------------------------------


@_builtin("first")
def _first(arr: Any) -> Any:
    a = _arr(arr, "first")
    return a[0] if a else None


@_builtin("last")
def _last(arr: Any) -> Any:
    a = _arr(arr, "last")
    return a[-1] if a else None


@_builtin("take")
def _take(arr: Any, n: Any) -> list[Any]:
    if type(n) is not int:
        raise ExprError("take(): count must be an int")
    return list(_arr(arr, "take")[: max(n, 0)])


@_builtin("reverse")
def _reverse(arr: Any) -> list[Any]:
    return list(reversed(_arr(arr, "reverse")))


def _sort_key(v: Any) -> Any:
    if V.is_num(v):
        return (0, v, "")
    if type(v) is str:
        return (1, 0, v)
    raise ExprError(f"sort(): cannot sort {V.type_name(v)}")


@_builtin("sort")
def _sort(arr: Any, order: Any = "asc") -> list[Any]:
    if order not in ("asc", "desc"):
        raise ExprError("sort(): order must be 'asc' or 'desc'")
    return sorted(_arr(arr, "sort"), key=_sort_key, reverse=order == "desc")


@_builtin("keys")
def _keys(m: Any) -> list[Any]:
    if not isinstance(m, Mapping):
        raise ExprError(f"keys(): argument must be a map, got {V.type_name(m)}")
    return list(m.keys())


@_builtin("values")
def _values(m: Any) -> list[Any]:
    if not isinstance(m, Mapping):
        raise ExprError(f"values(): argument must be a map, got {V.type_name(m)}")
    return list(m.values())


@_builtin("toPairs")
def _to_pairs(m: Any) -> list[list[Any]]:
    if not isinstance(m, Mapping):
        raise ExprError(f"toPairs(): argument must be a map, got {V.type_name(m)}")
    return [[k, v] for k, v in m.items()]


@_builtin("fromPairs")
def _from_pairs(arr: Any) -> dict[Any, Any]:
    out: dict[Any, Any] = {}
    for p in _arr(arr, "fromPairs"):
        if not isinstance(p, list | tuple) or len(p) != 2:
            raise ExprError("fromPairs(): every item must be a [key, value] pair")
        try:
            out[p[0]] = p[1]
        except TypeError:
            raise ExprError(f"fromPairs(): a key cannot be {V.type_name(p[0])}") from None
    return out


@_builtin("concat")
def _concat(*arrs: Any) -> list[Any]:
    total = sum(len(_arr(a, "concat")) for a in arrs)
    if total > V.MAX_ITEMS:
        raise ExprError(f"concat(): result too large (more than {V.MAX_ITEMS} items)")
    return [x for a in arrs for x in a]


@_builtin("flatten")
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

    walk(_arr(arr, "flatten"), 0)
    return out


@_builtin("uniq")
def _uniq(arr: Any) -> list[Any]:
    out: list[Any] = []
    seen: set[Any] = set()
    others: list[Any] = []  # unhashable items (arrays, maps): compared one by one, so bounded
    for x in _arr(arr, "uniq"):
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


@_builtin("get")
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


@_builtin("toJSON")
def _to_json(v: Any) -> str:
    return V.to_json(v, indent=True)  # expr-lang: json.MarshalIndent(v, "", "  ")


@_builtin("fromJSON")
def _from_json(s: Any) -> Any:
    import orjson

    try:
        return orjson.loads(_str(s, "fromJSON"))
    except orjson.JSONDecodeError as e:
        raise ExprError(f"fromJSON(): {e}") from None


@_builtin("toBase64")
def _to_base64(s: Any) -> str:
    return base64.b64encode(_str(s, "toBase64").encode()).decode()


@_builtin("fromBase64")
def _from_base64(s: Any) -> str:
    try:
        return base64.b64decode(_str(s, "fromBase64"), validate=True).decode("utf-8", "replace")
    except ValueError as e:
        raise ExprError(f"fromBase64(): {e}") from None


# --- time --------------------------------------------------------------------------------------------


@_builtin("now")
def _now(fmt: Any = None) -> Any:
    """The local time (prints as ISO 8601 with the offset, to the second). `now('%Y-%m-%d')` formats with
    strftime at once (chainreact's older form, kept)."""
    t = datetime.now().astimezone()
    if fmt is None:
        return t
    return t.strftime(_str(fmt, "now", "format"))


_DURATION_UNITS = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


@_builtin("duration")
def _duration(s: Any) -> timedelta:
    """Go's time.ParseDuration: `1h30m`, `1.5s`, `-2ms`."""
    text = _str(s, "duration")
    import re

    m = re.fullmatch(r"([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+", text)
    if not m or text in ("", "+", "-"):
        raise ExprError(f"duration(): invalid duration {text!r}")
    us = 0.0
    for num, unit in re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)", text):
        us += float(num) * _DURATION_UNITS[unit]
    return timedelta(microseconds=-us if text.startswith("-") else us)


_DATE_FORMATS = ("%Y-%m-%d", "%H:%M:%S", "%Y-%m-%d %H:%M:%S")


@_builtin("date")
def _date(s: Any, layout: Any = None, tz: Any = None) -> datetime:
    text = _str(s, "date")
    zone = _timezone(tz) if tz is not None else None
    if layout is not None:
        try:
            parsed = datetime.strptime(text, go_layout_to_strftime(_str(layout, "date", "format")))
        except ValueError as e:
            raise ExprError(f"date(): {e}") from None
        t: datetime | None = parsed
    else:
        t = None
        try:
            t = datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            from email.utils import parsedate_to_datetime

            for f in _DATE_FORMATS:
                try:
                    t = datetime.strptime(text, f)
                    break
                except ValueError:
                    continue
            if t is None:
                try:
                    t = parsedate_to_datetime(text)
                except (TypeError, ValueError):
                    raise ExprError(f"date(): cannot parse {text!r}") from None
    assert t is not None
    if t.tzinfo is None:
        t = t.replace(tzinfo=zone or UTC)
    elif zone is not None:
        t = t.astimezone(zone)
    return t


@_builtin("timezone")
def _timezone(name: Any) -> Any:
    from zoneinfo import ZoneInfo

    try:
        return UTC if name == "UTC" else ZoneInfo(_str(name, "timezone"))
    except Exception:
        raise ExprError(f"timezone(): unknown time zone {name!r}") from None


_GO_LAYOUT = [  # longest first
    ("January", "%B"), ("Monday", "%A"), ("2006", "%Y"), ("-0700", "%z"), ("-07:00", "%:z"),
    ("Z07:00", "%:z"),
    ("Jan", "%b"), ("Mon", "%a"), ("MST", "%Z"), ("002", "%j"), ("01", "%m"), ("02", "%d"), ("_2", "%e"),
    ("15", "%H"), ("03", "%I"), ("04", "%M"), ("05", "%S"), ("06", "%y"), ("PM", "%p"), ("pm", "%p"),
    (".000000", ".%f"), (".000", ".%f"), ("1", "%-m"), ("2", "%-d"), ("3", "%-I"), ("4", "%-M"), ("5", "%-S"),
]


def go_layout_to_strftime(layout: str) -> str:
    """Go's reference-time layout (`2006-01-02 15:04:05`) as a strftime format."""
    out: list[str] = []
    i = 0
    while i < len(layout):
        for go, py in _GO_LAYOUT:
            if layout.startswith(go, i):
                out.append(py)
                i += len(go)
                break
        else:
            c = layout[i]
            out.append("%%" if c == "%" else c)
            i += 1
    return "".join(out)


def _go_format_time(t: datetime, layout: Any) -> str:
    fmt = go_layout_to_strftime(_str(layout, "Format", "layout"))
    if "%:z" in fmt:
        off = t.strftime("%z")
        fmt = fmt.replace("%:z", (off[:3] + ":" + off[3:]) if off else "Z")
    return t.strftime(fmt)


_TIME_METHODS: dict[str, Callable[..., Any]] = {
    "Year": lambda t: t.year, "Month": lambda t: t.month, "Day": lambda t: t.day, "Hour": lambda t: t.hour,
    "Minute": lambda t: t.minute, "Second": lambda t: t.second,
    "Weekday": lambda t: t.isoweekday() % 7, "YearDay": lambda t: t.timetuple().tm_yday,
    "Unix": lambda t: int(t.timestamp()), "UnixMilli": lambda t: int(t.timestamp() * 1000),
    "Format": _go_format_time, "String": lambda t: V.to_string(t),
    "UTC": lambda t: t.astimezone(UTC), "Local": lambda t: t.astimezone(),
    "In": lambda t, tz: t.astimezone(tz), "Add": lambda t, d: t + d, "Sub": lambda t, u: t - u,
    "Before": lambda t, u: t < u, "After": lambda t, u: t > u, "Equal": lambda t, u: t == u,
}
_DURATION_METHODS: dict[str, Callable[..., Any]] = {
    "Hours": lambda d: d.total_seconds() / 3600, "Minutes": lambda d: d.total_seconds() / 60,
    "Seconds": lambda d: d.total_seconds(), "Milliseconds": lambda d: d // timedelta(milliseconds=1),
    "String": lambda d: V.format_duration(d),
}


def method_of(o: Any, name: str) -> Callable[..., Any] | None:
    """The whitelisted methods of times and durations; nothing else on a Python object is reachable."""
    if isinstance(o, datetime):
        table = _TIME_METHODS
    elif isinstance(o, timedelta):
        table = _DURATION_METHODS
    else:
        return None
    if name not in table:
        return None
    f = table[name]
    return lambda *a: f(o, *a)


# --- files (RuleGo's template functions) -------------------------------------------------------------

_SPECIAL_ROOTS = ("/proc", "/sys", "/dev")


def read_text_file(path: str | Path, *, limit: int = MAX_INCLUDE) -> str | None:
    """The UTF-8 text of a regular file, None when it does not exist. Refuses devices, FIFOs, sockets and
    the kernel's pseudo files (/proc, /sys, /dev): reading them can block forever or leak process state.
    Files over `limit` bytes are an error, not silently cut."""
    p = Path(path)
    try:
        real = p.resolve(strict=True)
    except FileNotFoundError:
        return None
    except (OSError, RuntimeError) as e:
        raise ExprError(f"include({str(path)!r}): {e}") from None
    if any(str(real) == r or str(real).startswith(r + "/") for r in _SPECIAL_ROOTS):
        raise ExprError(f"include({str(path)!r}): {real} is a special file, not allowed")
    st = real.stat()
    if stat.S_ISDIR(st.st_mode):
        raise ExprError(f"include({str(path)!r}): {real} is a directory, not a file")
    if not stat.S_ISREG(st.st_mode):
        raise ExprError(f"include({str(path)!r}): {real} is not a regular file (a FIFO, device or socket)")
    if st.st_size > limit:
        raise ExprError(f"include({str(path)!r}): file too large ({st.st_size} bytes, at most {limit})")
    # O_NONBLOCK: should the path be swapped for a FIFO after the check, open() must not hang.
    fd = os.open(real, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise ExprError(f"include({str(path)!r}): {real} is not a regular file")
        data = os.read(fd, limit + 1)
        chunks = [data]
        total = len(data)
        while data and total <= limit:
            data = os.read(fd, limit + 1 - total)
            chunks.append(data)
            total += len(data)
    finally:
        os.close(fd)
    if total > limit:
        raise ExprError(f"include({str(path)!r}): file too large (more than {limit} bytes)")
    return b"".join(chunks).decode("utf-8", "replace")


@_builtin("include")
def _include(path: Any) -> str:
    """RuleGo's include(path): the file's text, "" when it does not exist (remote URLs are not fetched)."""
    text = read_text_file(os.path.expanduser(_str(path, "include", "path")))
    return "" if text is None else text


@_builtin("fileExists")
def _file_exists(path: Any) -> bool:
    try:
        os.stat(os.path.expanduser(_str(path, "fileExists", "path")))
        return True
    except (OSError, ValueError):
        return False


# --- predicates --------------------------------------------------------------------------------------


def predicate_call(name: str, fns: list[Callable[[Any], Any]], src: str) -> Callable[[Any], Any] | None:
    """The closure for a predicate builtin (`filter(arr, pred)` ...), None if `name` is not one."""
    from .compiler import Scope

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
            pairs.sort(key=lambda p: _sort_key(p[1]), reverse=order == "desc")
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
        total = V.add(total, _num(x, "sum"))
    return total
