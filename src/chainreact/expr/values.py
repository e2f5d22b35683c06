"""Values as expr-lang (Go) sees them: type names, equality, ordering, arithmetic, and the string form a
template prints (RuleGo's `str.ToString`: nil is "", maps and lists are compact JSON with sorted keys,
floats without a trailing `.0`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from .errors import ExprError

MAX_STRING = 10_000_000  # characters in one string result (concatenation, repeat, replace, join)
MAX_ITEMS = 1_000_000  # items in one array result (ranges, concat, flatten)
_I64_MIN, _I64_MAX = -(2**63), 2**63 - 1
_NUMS = (int, float)


def type_name(v: Any) -> str:
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "bool"
    if isinstance(v, int):
        return "int"
    if isinstance(v, float):
        return "float"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list | tuple):
        return "array"
    if isinstance(v, Mapping):
        return "map"
    if isinstance(v, datetime):
        return "time.Time"
    if isinstance(v, timedelta):
        return "time.Duration"
    if callable(v):
        return "func"
    return type(v).__name__


def is_num(v: Any) -> bool:
    return isinstance(v, _NUMS) and not isinstance(v, bool)


def wrap_int(v: int) -> int:
    """Go's int64 wraps around; so do we (this also keeps big-integer arithmetic from growing without end)."""
    if _I64_MIN <= v <= _I64_MAX:
        return v
    return ((v - _I64_MIN) % 2**64) + _I64_MIN


# --- equality and ordering ---------------------------------------------------------------------------


def eq(a: Any, b: Any) -> bool:
    ta, tb = type(a), type(b)
    if ta is tb and (ta is str or ta is int or ta is float or a is None):
        return bool(a == b)
    if ta is bool or tb is bool:
        return ta is tb and a == b
    if is_num(a) and is_num(b):
        return bool(a == b)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return len(a) == len(b) and all(k in b and eq(v, b[k]) for k, v in a.items())
    if a is None or b is None:
        return False
    if ta is tb:
        return bool(a == b)
    return False


def mismatch(op: str, a: Any, b: Any) -> ExprError:
    return ExprError(f"invalid operation: {type_name(a)} {op} {type_name(b)}")


def less(op: str, a: Any, b: Any) -> bool:
    comparable = (is_num(a) and is_num(b)) or (type(a) is str and type(b) is str) or \
        (isinstance(a, datetime) and isinstance(b, datetime)) or \
        (isinstance(a, timedelta) and isinstance(b, timedelta))
    if not comparable:
        raise mismatch(op, a, b)
    if op == "<":
        return bool(a < b)
    if op == ">":
        return bool(a > b)
    if op == "<=":
        return bool(a <= b)
    return bool(a >= b)


# --- arithmetic --------------------------------------------------------------------------------------


def add(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        r = a + b
        return r if _I64_MIN <= r <= _I64_MAX else wrap_int(r)
    if ta is str and tb is str:
        if len(a) + len(b) > MAX_STRING:
            raise ExprError(f"string result too large (more than {MAX_STRING} characters)")
        return a + b
    if is_num(a) and is_num(b):
        return float(a) + float(b)
    if isinstance(b, timedelta) and isinstance(a, datetime | timedelta):
        return a + b
    if isinstance(a, timedelta) and isinstance(b, datetime):
        return b + a
    raise mismatch("+", a, b)


def sub(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return wrap_int(a - b)
    if is_num(a) and is_num(b):
        return float(a) - float(b)
    if isinstance(a, datetime) and isinstance(b, datetime):
        return a - b
    if isinstance(a, datetime | timedelta) and isinstance(b, timedelta):
        return a - b
    raise mismatch("-", a, b)


def mul(a: Any, b: Any) -> Any:
    ta, tb = type(a), type(b)
    if ta is int and tb is int:
        return wrap_int(a * b)
    if is_num(a) and is_num(b):
        return float(a) * float(b)
    if isinstance(a, timedelta) and is_num(b):
        return a * b
    if is_num(a) and isinstance(b, timedelta):
        return b * a
    raise mismatch("*", a, b)


def div(a: Any, b: Any) -> float:
    """`/` always gives a float in expr-lang; division by zero follows IEEE 754 as in Go."""
    if not (is_num(a) and is_num(b)):
        raise mismatch("/", a, b)
    x, y = float(a), float(b)
    if y == 0.0:
        if x == 0.0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return x / y


def mod(a: Any, b: Any) -> int:
    if type(a) is not int or type(b) is not int:
        raise mismatch("%", a, b)
    if b == 0:
        raise ExprError("integer divide by zero")
    r = abs(a) % abs(b)  # Go truncates: the remainder has the sign of the dividend
    return -r if a < 0 else r


def power(a: Any, b: Any) -> float:
    """`**` and `^` give a float (Go's math.Pow): overflow is +Inf, never a huge integer."""
    if not (is_num(a) and is_num(b)):
        raise mismatch("**", a, b)
    try:
        return math.pow(float(a), float(b))
    except OverflowError:
        return math.inf if (float(a) > 0 or float(b) % 2 == 0) else -math.inf
    except ValueError:
        return math.nan


def neg(a: Any) -> Any:
    if type(a) is int:
        return wrap_int(-a)
    if type(a) is float or isinstance(a, timedelta):
        return -a
    raise ExprError(f"invalid operation: -{type_name(a)}")


def truth(v: Any, what: str) -> bool:
    if v is True or v is False:
        return v
    raise ExprError(f"{what} needs a bool, got {type_name(v)} ({short(v)})")


def short(v: Any) -> str:
    s = to_string(v) if v is not None else "nil"
    return s if len(s) <= 40 else s[:37] + "..."


# --- strings -----------------------------------------------------------------------------------------


def format_float(x: float) -> str:
    """Go's strconv.FormatFloat(x, 'f', -1, 64): the shortest decimal that reads back, never an exponent."""
    if x != x:
        return "NaN"
    if x in (math.inf, -math.inf):
        return "+Inf" if x > 0 else "-Inf"
    r = repr(x)
    if "e" in r or "E" in r:
        from decimal import Decimal

        r = format(Decimal(r), "f")
    if r.endswith(".0"):
        r = r[:-2]
    return r


def to_string(v: Any) -> str:
    """The text a template prints for a value (RuleGo's str.ToString)."""
    if v is None:
        return ""
    t = type(v)
    if t is str:
        return v
    if t is bool:
        return "true" if v else "false"
    if t is int:
        return str(v)
    if t is float:
        return format_float(v)
    if isinstance(v, datetime):
        return v.isoformat(timespec="seconds")
    if isinstance(v, timedelta):
        return format_duration(v)
    if isinstance(v, bytes | bytearray):
        return bytes(v).decode("utf-8", "replace")
    if isinstance(v, Mapping | list | tuple):
        return to_json(v)
    return str(v)


def format_duration(d: timedelta) -> str:
    """Go's time.Duration.String(): `1h2m3.5s`, `1.5s`, `0s`."""
    us = d // timedelta(microseconds=1)
    if us == 0:
        return "0s"
    sign = "-" if us < 0 else ""
    us = abs(us)
    if us < 1_000_000:
        return f"{sign}{format_float(us / 1000)}ms" if us >= 1000 else f"{sign}{us}µs"
    h, rem = divmod(us, 3_600_000_000)
    m, rem = divmod(rem, 60_000_000)
    s = format_float(rem / 1_000_000) + "s"
    if h:
        return f"{sign}{h}h{m}m{s}"
    if m:
        return f"{sign}{m}m{s}"
    return f"{sign}{s}"


def _json_ready(v: Any, depth: int = 0) -> Any:
    if depth > 200:
        raise ExprError("value nested too deeply to convert to JSON")
    t = type(v)
    if t is float:
        if v != v or v in (math.inf, -math.inf):
            raise ExprError(f"json: unsupported value: {format_float(v)}")
        if v.is_integer() and abs(v) < 1e21:
            return int(v)
        return v
    if t is str or t is int or t is bool or v is None:
        return v
    if isinstance(v, Mapping):
        return {k if isinstance(k, str) else to_string(k): _json_ready(x, depth + 1) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_ready(x, depth + 1) for x in v]
    if isinstance(v, datetime | timedelta):
        return to_string(v)
    if isinstance(v, bytes | bytearray):
        import base64

        return base64.b64encode(bytes(v)).decode()
    return str(v)


def to_json(v: Any, *, indent: bool = False) -> str:
    """Go's json.Marshal: sorted keys, compact, `<>&` escaped as \\u003c..., floats as Go prints them."""
    import orjson

    opts = orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS
    if indent:
        opts |= orjson.OPT_INDENT_2
    try:
        s = orjson.dumps(_json_ready(v), option=opts).decode()
    except orjson.JSONEncodeError as e:
        raise ExprError(f"json: {e}") from None
    if "<" in s or ">" in s or "&" in s or "\u2028" in s or "\u2029" in s:
        s = s.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026") \
            .replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")
    return s


def go_format(v: Any) -> str:
    """fmt.Sprint(v), which expr-lang's `string()` uses: `<nil>`, `[1 2]`, `map[a:1 b:2]`."""
    if v is None:
        return "<nil>"
    if isinstance(v, list | tuple):
        return "[" + " ".join(go_format(x) for x in v) + "]"
    if isinstance(v, Mapping):
        items = sorted(v.items(), key=lambda kv: to_string(kv[0]))
        return "map[" + " ".join(f"{go_format(k)}:{go_format(x)}" for k, x in items) + "]"
    if type(v) is float:
        if v != v or v in (math.inf, -math.inf):
            return format_float(v)
        r = repr(v)
        if "e" in r:
            mant, exp = r.split("e")
            e = int(exp)
            if -4 <= e < 21:
                return format_float(v)
            return f"{mant}e{'+' if e >= 0 else '-'}{abs(e):02d}"
        return r[:-2] if r.endswith(".0") else r
    return to_string(v)
