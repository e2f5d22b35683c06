"""A JavaScript node built in one thread runs in another (a server loads chains, then its loop runs them)."""

from __future__ import annotations

import threading

from chainreact.chains.jsengine import JsFunction


def test_a_function_built_in_one_thread_runs_in_another() -> None:
    fn = JsFunction("Transform", "msg.n = msg.n * 2; return msg;")
    assert fn.call_with_msg('{"n": 1}', "JSON", {}, "T") == {"n": 2}
    out: list[object] = []

    def other() -> None:
        try:
            out.append(fn.call_with_msg('{"n": 21}', "JSON", {}, "T"))
        except Exception as e:
            out.append(e)

    t = threading.Thread(target=other)
    t.start()
    t.join()
    assert out == [{"n": 42}]
    # deep recursion is still caught as an error in the new thread, not a crash
    deep = JsFunction("F", "function f(x) { return f(x + 1); } return f(0);")
    t = threading.Thread(target=lambda: out.append(_err(deep)))
    t.start()
    t.join()
    assert "stack" in str(out[-1]).lower()


def _err(fn: JsFunction) -> object:
    try:
        return fn.call_with_msg("{}", "JSON", {}, "T")
    except Exception as e:
        return e
