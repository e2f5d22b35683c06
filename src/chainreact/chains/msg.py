"""The rule message (RuleGo's RuleMsg) and the JSON conventions values are written back with."""

from __future__ import annotations

import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import orjson

# Relations RuleGo defines; any other string is a valid relation too.
SUCCESS = "Success"
FAILURE = "Failure"
TRUE = "True"
FALSE = "False"
DEFAULT = "Default"
STREAM = "Stream"

JSON = "JSON"
TEXT = "TEXT"
BINARY = "BINARY"
DATA_TYPES = (JSON, TEXT, BINARY)

ERROR_MSG_KEY = "errorMsg"


def _now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(slots=True)
class RuleMsg:
    """One message: `type` is RuleGo's msgType; `data` is always a string; metadata maps string to string.

    Nodes receive their own copy (`copy()`), so a node may change the message it was given."""

    type: str = ""
    data: str = ""
    metadata: dict[str, str] = field(default_factory=dict)
    data_type: str = JSON
    id: str = field(default_factory=lambda: str(uuid.uuid4()))
    ts: int = field(default_factory=_now_ms)
    # (data, parsed value): expressions of several nodes read the same data; copies share it (read-only)
    _parsed: tuple[str, Any] | None = field(default=None, repr=False, compare=False)

    def copy(self) -> RuleMsg:
        return RuleMsg(self.type, self.data, dict(self.metadata), self.data_type, self.id, self.ts,
                       self._parsed)

    def env_value(self) -> Any:
        """The `msg` of expressions: the data parsed as JSON when the data type is JSON (cached per data
        string; treat it as read-only), else the data string."""
        if self.data_type != JSON:
            return self.data
        cached = self._parsed
        if cached is not None and cached[0] is self.data:
            return cached[1]
        value = parse_json_or_string(self.data)
        self._parsed = (self.data, value)
        return value

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ts": self.ts, "type": self.type, "dataType": self.data_type,
                "data": self.data, "metadata": dict(self.metadata)}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RuleMsg:
        meta = d.get("metadata") or {}
        msg = cls(type=str(d.get("type") or ""), data=to_data_string(d.get("data", "")),
                  metadata={str(k): to_meta_string(v) for k, v in meta.items()},
                  data_type=str(d.get("dataType") or JSON))
        if d.get("id"):
            msg.id = str(d["id"])
        if d.get("ts") is not None:
            msg.ts = int(d["ts"])
        return msg

    def json_value(self) -> Any:
        """The data parsed as JSON when it is JSON, else the string itself (RuleGo's `msg` variable)."""
        return parse_json_or_string(self.data)


def parse_json_or_string(s: str) -> Any:
    if not s:
        return s
    c = s.lstrip()[:1]
    if c and c in '{["-0123456789tfn':
        try:
            return orjson.loads(s)
        except orjson.JSONDecodeError:
            return s
    return s


def go_json(value: Any) -> str:
    """Go encoding/json output: compact, object keys sorted, HTML not escaped."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS).decode()


def _num_str(v: float | int) -> str:
    if isinstance(v, float):
        if v.is_integer() and abs(v) < 1e21:
            return str(int(v))
        return repr(v)
    return str(v)


def to_data_string(value: Any) -> str:
    """A value written back into `data` as RuleGo does (str.ToString): strings unquoted, numbers plain,
    booleans lowercase, nil empty, objects and arrays as Go JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _num_str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    try:
        return go_json(value)
    except TypeError:
        return str(value)


to_meta_string = to_data_string
