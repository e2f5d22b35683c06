"""Embedded, sandboxed JavaScript for jsFilter/jsTransform/jsSwitch/log: QuickJS (PyPI quickjs-ng).

Each node owns one QuickJS context holding its wrapped function (RuleGo wraps the script in
`function Name(msg, metadata, msgType, dataType) { ... }`). Every call has a time and a memory limit; a
call that hits one fails with a clear error and the context is rebuilt so the next message starts clean.
The script has no I/O: QuickJS exposes only the ECMAScript built-ins. Calls run on the event loop's
thread (a call costs microseconds); a runaway script holds it at most for the time limit."""

from __future__ import annotations

import threading
from typing import Any

import orjson

DEFAULT_TIME_LIMIT = 2.0  # seconds, RuleGo's default ScriptMaxExecutionTime
DEFAULT_MEMORY_LIMIT = 64 * 1024 * 1024


class JsError(RuntimeError):
    """A script threw, timed out or ran out of memory; the text is what the user needs."""


def _quickjs() -> Any:
    try:
        import _quickjs
    except ImportError as e:  # pragma: no cover - depends on the install
        raise JsError("JavaScript nodes need the 'chains' extra: pip install 'chainreact[chains]' "
                      "(package quickjs-ng)") from e
    return _quickjs


class JsFunction:
    def __init__(self, func_name: str, body: str, *, vars: dict[str, Any] | None = None,
                 time_limit: float = DEFAULT_TIME_LIMIT, memory_limit: int = DEFAULT_MEMORY_LIMIT):
        self.func_name = func_name
        # RuleGo compiles scripts in strict mode (goja.Compile(..., strict=true))
        self.source = f"function {func_name}(msg, metadata, msgType, dataType) {{ 'use strict'; {body}\n}}"
        self.vars = vars or {}
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self._qjs = _quickjs()
        self._ctx: Any = None
        self._fn: Any = None
        self._build()

    def _build(self) -> None:
        qjs = self._qjs
        ctx = qjs.Context()
        ctx.set_memory_limit(self.memory_limit)
        ctx.set_time_limit(self.time_limit)
        try:
            ctx.set("vars", ctx.parse_json(orjson.dumps(self.vars).decode()))
            ctx.eval(self.source)
        except qjs.JSException as e:
            raise ValueError(f"JavaScript does not compile: {_first_line(e)}") from None
        self._ctx = ctx
        self._fn = ctx.get(self.func_name)
        # QuickJS measures its stack limit from the stack of the thread that made the context: called
        # from another thread (a chain loaded in one thread and run by a server's loop in another) every
        # call would look like a stack overflow. So a context belongs to one thread; another rebuilds it.
        self._thread = threading.get_ident()

    def _in_this_thread(self) -> None:
        if self._thread != threading.get_ident():
            self._build()

    def arg_json(self, text: str) -> Any:
        """A JS value from JSON text (objects/arrays are built inside QuickJS, no Python round trip)."""
        self._in_this_thread()
        return self._ctx.parse_json(text)

    def call(self, *args: Any) -> Any:
        qjs = self._qjs
        self._in_this_thread()
        try:
            out = self._fn(*args)
        except qjs.JSException as e:
            text = _first_line(e)
            if "interrupted" in text:
                self._build()
                raise JsError(f"JavaScript exceeded its time limit of {self.time_limit:g} s") from None
            if "out of memory" in text:
                self._build()
                raise JsError(f"JavaScript exceeded its memory limit of "
                              f"{self.memory_limit // (1024 * 1024)} MB") from None
            raise JsError(text) from None
        except qjs.StackOverflow:
            self._build()
            raise JsError("JavaScript stack overflow") from None
        if isinstance(out, qjs.Object):
            s = out.json()
            if s is None or s == "undefined":
                return None
            return orjson.loads(s)
        return out

    def call_with_msg(self, data: str, data_type: str, metadata: dict[str, str], msg_type: str) -> Any:
        """Call with RuleGo's arguments: JSON data parsed (a string when it is not JSON)."""
        if data_type == "JSON":
            try:
                msg_arg = self.arg_json(data)
            except self._qjs.JSException:
                msg_arg = data
        else:
            msg_arg = data
        return self.call(msg_arg, self.arg_json(orjson.dumps(metadata).decode()), msg_type, data_type)


def _first_line(e: BaseException) -> str:
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("at ")]
    first = lines[0] if lines else text
    # a thrown non-Error value prints as "<value>\nundefined"
    return first if first != "undefined" else text
