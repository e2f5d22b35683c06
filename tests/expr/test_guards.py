"""Bounds that keep a hostile or unlucky expression from exhausting memory, CPU or the stack.
Each test fails without its guard (a huge result, a hang, a RecursionError, a blocked read)."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from chainreact.expr import ExprError, ExprSyntaxError, compile_expr, parse_template
from chainreact.expr import values as V
from chainreact.expr.files import MAX_INCLUDE


def run(src: str, **env: object) -> object:
    return compile_expr(src).run(env)


def test_string_concatenation_is_bounded() -> None:
    # doubling through let: 1e6 * 2**5 characters would be 32 MB
    src = "let a = repeat('x', 1000000); let b = a + a; let c = b + b; let d = c + c; let e = d + d; e + e"
    with pytest.raises(ExprError, match="too large"):
        run(src)
    assert len(str(run("repeat('x', 1000) + 'y'"))) == 1001


@pytest.mark.parametrize("src", [
    "repeat('ab', 100000000)",
    "replace(repeat('a', 1000000), 'a', repeat('b', 100))",
    "replace(repeat('a', 100000), '', repeat('b', 1000))",
    "join(map(1..200000, s), '')",
    "1..100000000",
    "concat(1..600000, 1..600000)",
])
def test_result_sizes_are_bounded(src: str) -> None:
    with pytest.raises(ExprError, match="too large"):
        run(src, s="x" * 100)


def test_nested_powers_stay_floats() -> None:
    # Python ints would try to build 2**(2**(2**(2**(2**2)))) digits; Go's math.Pow gives +Inf
    assert run("2 ** 2 ** 2 ** 2 ** 2 ** 2") == float("inf")
    assert run("9 ^ 9 ^ 9 ^ 9") == float("inf")
    assert isinstance(run("10 ** 3"), float)


def test_integer_arithmetic_wraps_at_int64() -> None:
    # repeated multiplication would otherwise grow a big integer without end
    v = run("reduce(1..400, #acc * 1000003, 1)")
    assert isinstance(v, int) and -(2**63) <= v < 2**63
    assert V.wrap_int(2**63) == -(2**63)


def test_predicate_steps_are_bounded() -> None:
    with pytest.raises(ExprError, match="too expensive"):
        run("map(1..2000, map(1..2000, # + 1))")


def test_expression_length_is_bounded() -> None:
    with pytest.raises(ExprSyntaxError, match="too long"):
        compile_expr("1" + " + 1" * 10000)


@pytest.mark.parametrize("src", ["(" * 500 + "1" + ")" * 500, "-" * 500 + "1", "[" * 400 + "]" * 400,
                                 " + ".join(["a"] * 300), "!" * 300 + "true", "a" + ".b" * 300])
def test_nesting_is_bounded(src: str) -> None:
    with pytest.raises(ExprSyntaxError, match="nested too deeply"):
        compile_expr(src)


def test_regex_is_linear_time_re2() -> None:
    # RE2 has no backreferences: proof that `matches` does not use a backtracking engine
    with pytest.raises(ExprSyntaxError, match="invalid regular expression"):
        compile_expr("'aa' matches '(a)\\\\1'")
    # the classic catastrophic pattern answers at once (a backtracking engine takes ages on this)
    assert run("s matches '(a+)+$'", s="a" * 5000 + "b") is False
    assert run("s matches p", s="a" * 5000 + "b", p="(a|aa)*c") is False
    with pytest.raises(ExprError, match="too long"):
        run("'a' matches p", p="a" * 5000)


def test_include_refuses_special_files(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    result: list[object] = []

    def attempt() -> None:
        try:
            result.append(run("include(p)", p=str(fifo)))
        except ExprError as e:
            result.append(e)

    t = threading.Thread(target=attempt, daemon=True)
    t.start()
    t.join(30)
    if t.is_alive():  # unblock the reader so the test process can end
        with open(fifo, "w"):
            pass
        pytest.fail("include() blocked on a FIFO")
    assert isinstance(result[0], ExprError) and "not a regular file" in str(result[0])
    for special in ("/dev/zero", "/proc/self/environ", "/dev/stdin"):
        with pytest.raises(ExprError, match=r"special file|not a regular file"):
            run("include(p)", p=special)


def test_include_size_is_bounded(tmp_path: Path) -> None:
    big = tmp_path / "big.txt"
    with open(big, "wb") as f:
        f.truncate(MAX_INCLUDE + 1)
    with pytest.raises(ExprError, match="too large"):
        run("include(p)", p=str(big))
    ok = tmp_path / "ok.txt"
    ok.write_text("hello ✓", encoding="utf-8")
    assert run("include(p)", p=str(ok)) == "hello ✓"
    assert run("include(p)", p=str(tmp_path / "missing.txt")) == ""
    assert run("fileExists(p)", p=str(ok)) is True


def test_template_render_is_bounded() -> None:
    # each part is within the bound, the whole is not
    t = parse_template("${repeat(s, 600000)}${repeat(s, 600000)}")
    with pytest.raises(ExprError, match="template result too large"):
        t.render({"s": "x" * 10})
    assert len(parse_template("${repeat(s, 60)}-${repeat(s, 60)}").render({"s": "x"})) == 121


@pytest.mark.parametrize("src", [
    "[repeat(s, 9000000), repeat(s, 9000000), repeat(s, 9000000), repeat(s, 9000000), repeat(s, 9000000),"
    " repeat(s, 9000000)]",  # each result within its bound, their sum not
    "map(1..900, 1..900000)",
    "map(1..1000, repeat(s, 900000))",
])
def test_total_built_size_is_bounded(src: str) -> None:
    with pytest.raises(ExprError, match=r"too large|too expensive"):
        run(src, s="x")


def test_uniq_is_not_quadratic_on_scalars() -> None:
    assert run("len(uniq(1..200000))") == 200000
    assert run("uniq([1, 1.0, true, 'a', 'a', nil, nil, [1], [1]])") == [1, True, "a", None, [1]]
    with pytest.raises(ExprError, match="too large"):
        run("split(s, ',')", s="," * 1_000_001)
