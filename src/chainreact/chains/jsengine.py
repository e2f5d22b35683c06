"""Embedded, sandboxed JavaScript for jsFilter/jsTransform/jsSwitch/log: QuickJS (PyPI quickjs-ng).

Each node owns one QuickJS context holding its function (RuleGo's `function Name(msg, metadata,
msgType, dataType) { ... }`, strict mode). The script has no I/O: QuickJS exposes only the ECMAScript
built-ins.

Every entry into JavaScript runs under the context's time and memory limits, because QuickJS checks
them only while a call the binding started is running. So nothing is left for afterwards: a wrapper
made before the script is loaded calls the function, converts its result with JSON.stringify and turns
a thrown value into text, all inside that one call, and hands Python a string. Before, converting the
result (toJSON, getters, Proxy traps) and formatting a thrown value (its toString) ran user code after
the call with no limit, and a loop there froze the process. The error intrinsics are frozen before the
script loads, so the engine's own errors (interrupted, out of memory), which the binding formats, run
no user code either. A call that hits a limit fails with a clear error and the context is rebuilt.

QuickJS's time limit is CPU time of the whole process (the binding measures it with C `clock()`), so on
a loaded machine a script that never ends took limit / (its share of a CPU) in wall time: a 2 s limit
took 10.7 s on this project's 2-core machine at load 10 (bench/js_limits.py). An async call that moved
to a JavaScript thread (below) therefore also has a wall-clock deadline of the same length, counted
from when it starts there: the message fails then, and the abandoned call ends on its thread at its
CPU limit. Scripts (or other threads) running at the same time use up the CPU limit sooner.

The event loop is not held for long: an async call (what the components use) runs on the loop's
thread with a budget of INLINE_BUDGET of CPU, which is all a script normally needs (microseconds);
one still running then is stopped and run again from the start, under the full limit, on a thread of
its own (at most SLOW_CALLS at once), where QuickJS releases the GIL while it runs. So a slow script
(or a regular expression backtracking on user data) holds only its own message, not the server's
other requests. Running again is safe because a script has no I/O and RuleGo gives no guarantee that
state kept in a context survives between messages (its VMs come from a pool). Sending every call to a
thread would cost a thread hop per call, more than the call itself (docs/chains.md). A context belongs
to the thread that made it (QuickJS measures its stack limit from there).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import threading
from typing import Any

import orjson

DEFAULT_TIME_LIMIT = 2.0  # seconds, RuleGo's default ScriptMaxExecutionTime
DEFAULT_MEMORY_LIMIT = 64 * 1024 * 1024
INLINE_BUDGET = 0.01  # seconds of CPU a call may hold the event loop before it moves to a thread
SKIP_AFTER_SLOW = 100  # after a call outgrew the budget, the next ones of that node go to a thread at once
SLOW_CALLS = 4  # slow calls running at once in the process (each on its own thread); more wait
_slots = threading.BoundedSemaphore(SLOW_CALLS)

# Before any script: the engine's errors keep their built-in toString, name and stack, so the binding can
# format them without running user code (QuickJS calls Error.prepareStackTrace when it makes an error).
_PRELUDE = r"""(function () {
  'use strict';
  Object.defineProperty(Error, 'prepareStackTrace', {value: undefined, writable: false, configurable: false});
  for (const n of ['Error', 'EvalError', 'RangeError', 'ReferenceError', 'SyntaxError', 'TypeError',
                   'URIError', 'InternalError', 'AggregateError']) {
    const C = globalThis[n];
    if (C) { Object.freeze(C.prototype); Object.freeze(C); }
  }
})();"""

# The one entry Python calls: the user's function, its result and what it threw. A boolean, a finite
# number, null or undefined comes back as it is; anything else as the JSON text of [tag, value]: V result,
# E error text, M out of memory, S stack overflow, X unprintable, J + [tag, text]: the result could not be
# converted. (JSON.stringify makes a flat string; the binding cannot convert the rope strings that
# concatenation makes.)
_WRAPPER = r"""(function (name, body) {
  'use strict';
  const stringify = JSON.stringify, toText = String, Internal = InternalError, Range = RangeError;
  const user = new Function('msg', 'metadata', 'msgType', 'dataType', "'use strict';" + body);
  globalThis[name] = user;
  function describe(e) {
    if (e === null) return ['M'];  // QuickJS throws null when even its out-of-memory error cannot be made
    try {
      if (e instanceof Internal && e.message === 'out of memory') return ['M'];
      if (e instanceof Range && e.message === 'Maximum call stack size exceeded') return ['S'];
      return ['E', toText(e)];
    } catch (e2) {
      return [e2 === null ? 'M' : 'X'];
    }
  }
  return function (msg, metadata, msgType, dataType) {
    let out;
    try { out = user(msg, metadata, msgType, dataType); } catch (e) { return stringify(describe(e)); }
    const t = typeof out;  // values the binding converts without running any code: handed over as they are
    if (t === 'boolean' || out == null || (t === 'number' && out - out === 0)) return out;
    try {
      return stringify(['V', out]);
    } catch (e) {
      const d = describe(e);
      return stringify(d[0] === 'E' || d[0] === 'X' ? ['J', d] : d);
    }
  };
})"""


class JsError(RuntimeError):
    """A script threw, timed out or ran out of memory; the text is what the user needs."""


def _quickjs() -> Any:
    try:
        import _quickjs
    except ImportError as e:  # pragma: no cover - depends on the install
        raise JsError("JavaScript nodes need the 'chains' extra: pip install 'chainreact[chains]' "
                      "(package quickjs-ng)") from e
    return _quickjs


class _Interrupted(JsError):
    """The time limit of one attempt was reached (async calls then retry on a JavaScript thread)."""


class _Context:
    """One QuickJS context with the wrapper, usable only from the thread that made it."""

    __slots__ = ("ctx", "fn", "thread", "time_limit")

    def __init__(self, ctx: Any, fn: Any, time_limit: float) -> None:
        self.ctx, self.fn, self.thread, self.time_limit = ctx, fn, threading.get_ident(), time_limit


class JsFunction:
    def __init__(self, func_name: str, body: str, *, vars: dict[str, Any] | None = None,
                 time_limit: float = DEFAULT_TIME_LIMIT, memory_limit: int = DEFAULT_MEMORY_LIMIT):
        self.func_name = func_name
        self.body = body
        self.vars = vars or {}
        self.time_limit = time_limit
        self.memory_limit = memory_limit
        self._qjs = _quickjs()
        self._here: _Context | None = self._build()  # compiled now: a bad script fails the chain's load
        self._skip_inline = 0  # calls left that go straight to the thread (after a slow one)

    def _build(self) -> _Context:
        qjs = self._qjs
        ctx = qjs.Context()
        ctx.set_memory_limit(self.memory_limit)
        ctx.set_time_limit(self.time_limit)
        try:
            ctx.eval(_PRELUDE)
            ctx.set("vars", ctx.parse_json(orjson.dumps(self.vars).decode()))
            fn = ctx.eval(_WRAPPER)(self.func_name, self.body)
        except qjs.JSException as e:
            raise ValueError(f"JavaScript does not compile: {_first_line(e)}") from None
        return _Context(ctx, fn, self.time_limit)

    def call(self, *args: Any) -> Any:
        """Call with Python values (passed as JSON) in this thread, under the full limits."""
        c = self._local(self.time_limit)
        return self._invoke(c, [c.ctx.parse_json(orjson.dumps(a).decode()) for a in args], self.time_limit)

    def call_with_msg(self, data: str, data_type: str, metadata: dict[str, str], msg_type: str) -> Any:
        """Call with RuleGo's arguments in this thread: JSON data parsed (a string when it is not JSON)."""
        c = self._local(self.time_limit)
        return self._invoke(c, self._msg_args(c, data, data_type, metadata, msg_type), self.time_limit)

    async def acall_with_msg(self, data: str, data_type: str, metadata: dict[str, str], msg_type: str) -> Any:
        """call_with_msg that holds the event loop for at most INLINE_BUDGET of CPU: a call still running
        then is stopped and run again from the start on a JavaScript thread under the full limit."""
        budget = min(INLINE_BUDGET, self.time_limit)
        if self._skip_inline:
            self._skip_inline -= 1
        else:
            c = self._local(budget)
            try:
                return self._invoke(c, self._msg_args(c, data, data_type, metadata, msg_type), budget)
            except _Interrupted:
                if budget >= self.time_limit:
                    raise
                self._skip_inline = SKIP_AFTER_SLOW
        loop = asyncio.get_running_loop()
        started = loop.create_future()
        done: concurrent.futures.Future[Any] = concurrent.futures.Future()
        args = (done, loop, started, data, data_type, metadata, msg_type)
        threading.Thread(target=self._call_away, args=args, name="chainreact-js", daemon=True).start()
        work = asyncio.wrap_future(done)
        work.add_done_callback(_retrieve)  # an abandoned call's outcome is not logged as unretrieved
        # SLOW_CALLS others may be running (each bounded by its CPU limit): the wall-clock deadline starts
        # when this call does.
        await asyncio.wait([started, work], return_when=asyncio.FIRST_COMPLETED)
        try:
            return await asyncio.wait_for(asyncio.shield(work), self.time_limit)
        except TimeoutError:
            # Wall time is up; the call goes on on its thread until QuickJS's CPU-time limit ends it.
            raise JsError(f"JavaScript exceeded its time limit of {self.time_limit:g} s") from None

    def _call_away(self, done: concurrent.futures.Future[Any], loop: asyncio.AbstractEventLoop,
                   started: asyncio.Future[None], data: str, data_type: str, metadata: dict[str, str],
                   msg_type: str) -> None:
        """A slow call, on a thread of its own with a context of its own (a context is bound to the
        thread that made it)."""
        with _slots:
            loop.call_soon_threadsafe(_set_started, started)
            try:
                c = self._build()
                done.set_result(self._invoke(c, self._msg_args(c, data, data_type, metadata, msg_type),
                                             self.time_limit))
            except BaseException as e:
                done.set_exception(e)

    def _local(self, time_limit: float) -> _Context:
        c = self._here
        # QuickJS measures its stack limit from the thread that made the context: another thread (a
        # chain loaded in one thread and run by a server's loop in another) gets a context of its own.
        if c is None or c.thread != threading.get_ident():
            c = self._here = self._build()
        if c.time_limit != time_limit:
            c.ctx.set_time_limit(time_limit)
            c.time_limit = time_limit
        return c

    def _msg_args(self, c: _Context, data: str, data_type: str, metadata: dict[str, str],
                  msg_type: str) -> list[Any]:
        msg_arg: Any = data
        if data_type == "JSON":
            try:
                msg_arg = c.ctx.parse_json(data)
            except self._qjs.JSException:
                msg_arg = data
        return [msg_arg, c.ctx.parse_json(orjson.dumps(metadata).decode()), msg_type, data_type]

    def _invoke(self, c: _Context, args: list[Any], time_limit: float) -> Any:
        qjs = self._qjs
        try:
            out = c.fn(*args)
        except qjs.JSException as e:
            text = _first_line(e)
            if "interrupted" in text:
                self._discard(c)
                raise _Interrupted(f"JavaScript exceeded its time limit of {time_limit:g} s") from None
            if "out of memory" in text:
                raise self._memory(c) from None
            raise JsError(text) from None
        except qjs.StackOverflow:
            raise self._stack(c) from None
        if type(out) is not str:
            return out
        tag, *rest = orjson.loads(out)
        if tag == "V":
            return rest[0]
        if tag == "M":
            raise self._memory(c)
        if tag == "S":
            raise self._stack(c)
        if tag == "E":
            raise JsError(_first_line(rest[0]))
        if tag == "J":
            inner = rest[0]
            detail = _first_line(inner[1]) if inner[0] == "E" else "a value that cannot be shown as text"
            raise JsError(f"the script's result cannot be converted to JSON: {detail}")
        raise JsError("JavaScript threw a value that cannot be shown as text")

    def _memory(self, c: _Context) -> JsError:
        self._discard(c)
        return JsError(f"JavaScript exceeded its memory limit of {self.memory_limit // (1024 * 1024)} MB")

    def _stack(self, c: _Context) -> JsError:
        self._discard(c)
        return JsError("JavaScript stack overflow")

    def _discard(self, c: _Context) -> None:
        """After a limit the context's state is unknown: the next call builds a fresh one."""
        if self._here is c:
            self._here = None


def _set_started(started: asyncio.Future[None]) -> None:
    if not started.done():
        started.set_result(None)


def _retrieve(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


def _first_line(e: BaseException | str) -> str:
    text = str(e).strip()
    lines = [ln for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("at ")]
    first = lines[0] if lines else text
    # a thrown non-Error value prints as "<value>\nundefined"
    return first if first != "undefined" else text
