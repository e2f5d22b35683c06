"""Time builtins: now(), duration(), date(), timezone(), and the methods of times and durations
(Go-style layouts such as `.Format('2006-01-02')`)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from . import values as V
from .errors import ExprError, quote
from .registry import arg_str, builtin

# --- time --------------------------------------------------------------------------------------------


@builtin("now")
def _now(fmt: Any = None) -> Any:
    """The local time (prints as ISO 8601 with the offset, to the second). `now('%Y-%m-%d')` formats with
    strftime at once (chainreact's older form, kept)."""
    t = datetime.now().astimezone()
    if fmt is None:
        return t
    return t.strftime(arg_str(fmt, "now", "format"))


_DURATION_UNITS = {"ns": 1e-3, "us": 1.0, "µs": 1.0, "μs": 1.0, "ms": 1e3, "s": 1e6, "m": 60e6, "h": 3600e6}


@builtin("duration")
def _duration(s: Any) -> timedelta:
    """Go's time.ParseDuration: `1h30m`, `1.5s`, `-2ms`."""
    text = arg_str(s, "duration")
    import re

    m = re.fullmatch(r"([+-]?)((?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+", text)
    if not m or text in ("", "+", "-"):
        raise ExprError(f"duration(): invalid duration {quote(text, 60)!r}")
    us = 0.0
    for num, unit in re.findall(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)", text):
        us += float(num) * _DURATION_UNITS[unit]
    return timedelta(microseconds=-us if text.startswith("-") else us)


_DATE_FORMATS = ("%Y-%m-%d", "%H:%M:%S", "%Y-%m-%d %H:%M:%S")


@builtin("date")
def _date(s: Any, layout: Any = None, tz: Any = None) -> datetime:
    text = arg_str(s, "date")
    zone = _timezone(tz) if tz is not None else None
    if layout is not None:
        try:
            parsed = datetime.strptime(text, go_layout_to_strftime(arg_str(layout, "date", "format")))
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
                    raise ExprError(f"date(): cannot parse {quote(text, 60)!r}") from None
    assert t is not None
    if t.tzinfo is None:
        t = t.replace(tzinfo=zone or UTC)
    elif zone is not None:
        t = t.astimezone(zone)
    return t


@builtin("timezone")
def _timezone(name: Any) -> Any:
    from zoneinfo import ZoneInfo

    try:
        return UTC if name == "UTC" else ZoneInfo(arg_str(name, "timezone"))
    except Exception:
        raise ExprError(f"timezone(): unknown time zone {quote(str(name), 60)!r}") from None


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
    fmt = go_layout_to_strftime(arg_str(layout, "Format", "layout"))
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
