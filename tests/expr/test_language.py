"""The expression language against expr-lang's documented semantics."""

from __future__ import annotations

import math
from typing import Any

import pytest

from chainreact.expr import ExprError, ExprSyntaxError, compile_expr, register_function

ENV: dict[str, Any] = {
    "temperature": 60,
    "name": "aa",
    "msg": {"temperature": 25.5, "items": [1, 2, 3], "user": {"name": "Ann", "tags": ["a", "b"]}},
    "metadata": {"productType": "test", "n": "7"},
    "users": [{"Name": "Jo", "Age": 17}, {"Name": "Al", "Age": 30}, {"Name": "Jim", "Age": 42}],
    "text": "hello world",
    "empty": None,
}


def run(src: str, env: dict[str, Any] | None = None, **kw: Any) -> Any:
    return compile_expr(src).run(ENV if env is None else env, **kw)


@pytest.mark.parametrize(("src", "want"), [
    # literals
    ("42", 42), ("0x2A", 42), ("0o52", 42), ("0b101010", 42), ("1_000", 1000), ("0.5", 0.5), (".5", 0.5),
    ("1e3", 1000.0), ("'a\\'b'", "a'b"), ('"tab\\t"', "tab\t"), ("`raw\\n`", "raw\\n"), ('"\\u00e9"', "é"),
    ("true", True), ("false", False), ("nil", None), ("[1, 'a', nil]", [1, "a", None]),
    ("{a: 1, 'b c': 2, (1+1): 3}", {"a": 1, "b c": 2, 2: 3}), ("[1, 2,]", [1, 2]),
    # arithmetic: `/` is always a float, `**` too (Go's math.Pow); `%` keeps the dividend's sign
    ("1 + 2 * 3", 7), ("(1 + 2) * 3", 9), ("7 / 2", 3.5), ("6 / 3", 2.0), ("7 % 3", 1), ("-7 % 3", -1),
    ("2 ** 10", 1024.0), ("2 ^ 3 ^ 2", 512.0), ("-2 ** 2", -4.0), ("1 + 2.5", 3.5), ("10 - 20", -10),
    ("9223372036854775807 + 1", -9223372036854775808),  # int64 wraps as in Go
    # strings
    ("'a' + 'b'", "ab"), ("name + '!'", "aa!"), ("'abc'[1]", "b"), ("'abc'[-1]", "c"), ("'abcd'[1:3]", "bc"),
    ("upper(name[:1])", "A"),
    # comparison, logic
    ("temperature > 50", True), ("temperature >= 60 && temperature < 61", True), ("1 == 1.0", True),
    ("1 == '1'", False), ("true == 1", False), ("[1, 2] == [1, 2]", True), ("{a: 1} == {a: 1}", True),
    ("nil == nil", True), ("empty == nil", True), ("'b' > 'a'", True), ("not true", False), ("!false", True),
    ("true and false or true", True), ("false || !false", True),
    ("1 < 2 < 3", True), ("3 > 2 > 2", False), ("1 < 5 <= 5 < 6", True), ("1 < 5 <= 4 < 6", False),
    ("(1 < 2) == true", True),
    ("1 < 2 ? 'y' : 'n'", "y"), ("false ? 1 : true ? 2 : 3", 2), ("nil ?? 'd'", "d"), ("0 ?? 5", 0),
    ("undefinedThing ?? 'fallback'", "fallback"), ("false ?: 'x'", "x"),
    # membership
    ("'a' in ['a', 'b']", True), ("3 in msg.items", True), ("3.0 in msg.items", True), ("'x' in msg", False),
    ("'user' in msg", True), ("'z' not in ['a']", True), ("not ('a' in ['a'])", False),
    ("text contains 'lo w'", True), ("text startsWith 'hell'", True), ("text endsWith 'ld'", True),
    ("text not contains 'zz'", True), ("text matches '^h.*d$'", True), ("text matches 'x+'", False),
    ("text not matches '[0-9]'", True),
    # member and index access
    ("msg.temperature", 25.5), ("msg['temperature']", 25.5), ("msg.user.name", "Ann"),
    ("msg.user.tags[1]", "b"),
    ("msg.items[-1]", 3), ("msg.items[1:]", [2, 3]), ("msg.items[:-1]", [1, 2]), ("msg.items[5:9]", []),
    ("msg.nothing", None), ("msg?.user?.name", "Ann"), ("empty?.x", None), ("empty?.x.y", None),
    ("metadata.productType == 'test'", True), ("$env.name", "aa"), ("'name' in $env", True),
    # ranges, pipes, let, sequences, if
    ("1..4", [1, 2, 3, 4]), ("name | upper()", "AA"), ("'a,b' | split(',') | join('-')", "a-b"),
    ("let x = 2; let y = x * 3; x + y", 8), ("if temperature > 50 { 'hot' } else { 'cold' }", "hot"),
    ("// comment\n 1 /* inline */ + 1", 2),
])
def test_expressions(src: str, want: Any) -> None:
    got = run(src)
    assert got == want and type(got) is type(want), f"{src!r} -> {got!r}"


@pytest.mark.parametrize(("src", "want"), [
    ("filter(1..6, # % 2 == 0)", [2, 4, 6]),
    ("map(users, .Name)", ["Jo", "Al", "Jim"]),
    ("map(users, {#.Age + 1})", [18, 31, 43]),
    ("all(users, .Age > 10)", True), ("any(users, .Age > 40)", True), ("none(users, .Age > 50)", True),
    ("one(users, .Age > 40)", True), ("count(users, .Age >= 30)", 2), ("count([true, false, true])", 2),
    ("find(users, .Age > 20).Name", "Al"), ("findIndex(users, .Name == 'Jim')", 2),
    ("findLast(users, .Age > 20).Name", "Jim"), ("findLastIndex(1..5, # < 3)", 1), ("find([1], # > 5)", None),
    ("sum(users, .Age)", 89), ("sum([1, 2, 3])", 6), ("reduce(1..4, #acc * #)", 24),
    ("reduce(1..3, #acc + #index, 10)", 13), ("sortBy(users, .Age, 'desc')[0].Name", "Jim"),
    ("groupBy(users, .Age > 18)[true][0].Name", "Al"),
    ("filter(users, .Name startsWith 'J') | map(.Age)", [17, 42]),
    ("map(1..2, map(1..2, # * 10))", [[10, 20], [10, 20]]),
])
def test_predicates(src: str, want: Any) -> None:
    assert run(src) == want


@pytest.mark.parametrize(("src", "want"), [
    ("len('héllo')", 5), ("len([1, 2])", 2), ("len({a: 1})", 1), ("upper('ab')", "AB"), ("lower('AB')", "ab"),
    ("trim('  a  ')", "a"), ("trim('__a__', '_')", "a"), ("trimPrefix('HelloWorld', 'Hello')", "World"),
    ("trimSuffix('HelloWorld', 'World')", "Hello"), ("hasPrefix('abc', 'ab')", True),
    ("hasSuffix('abc', 'c')", True),
    ("split('a,b,c', ',')", ["a", "b", "c"]), ("split('a,b,c', ',', 2)", ["a", "b,c"]),
    ("splitAfter('a,b,c', ',')", ["a,", "b,", "c"]), ("replace('Hello World', 'World', 'You')", "Hello You"),
    ("repeat('ab', 3)", "ababab"), ("indexOf('apple pie', 'pie')", 6), ("lastIndexOf('a a a', 'a')", 4),
    ("join(['a', 'b'], ',')", "a,b"), ("join(['a', 'b'])", "ab"),
    ("abs(-5)", 5), ("abs(-1.5)", 1.5), ("ceil(1.2)", 2.0), ("floor(1.8)", 1.0), ("round(2.5)", 3.0),
    ("round(-2.5)", -3.0), ("max(5, 7)", 7), ("min(5, 7)", 5), ("max([3, 9, 1])", 9),
    ("mean([1, 2, 3])", 2.0),
    ("median([1, 3, 2, 4])", 2.5), ("int('123')", 123), ("int(3.9)", 3), ("float('1.5')", 1.5),
    ("float(2)", 2.0),
    ("string(123)", "123"), ("string(nil)", "<nil>"), ("string([1, 'a'])", "[1 a]"),
    ("string({b: 1, a: 2})", "map[a:2 b:1]"),
    ("string(1.5)", "1.5"), ("string(2.0)", "2"), ("type(1)", "int"), ("type(1.0)", "float"),
    ("type('')", "string"),
    ("type(nil)", "nil"), ("type([])", "array"), ("type({})", "map"), ("type(true)", "bool"),
    ("toJSON({b: 1, a: [1, 2.0]})", '{\n  "a": [\n    1,\n    2\n  ],\n  "b": 1\n}'),
    ("fromJSON('{\"a\": [1, 2]}').a[1]", 2), ("toBase64('Hello World')", "SGVsbG8gV29ybGQ="),
    ("fromBase64('SGVsbG8gV29ybGQ=')", "Hello World"), ("first([1, 2])", 1), ("last([1, 2])", 2),
    ("first([])", None),
    ("take([1, 2, 3], 2)", [1, 2]), ("reverse([3, 1, 4])", [4, 1, 3]), ("sort([3, 1, 4])", [1, 3, 4]),
    ("sort([3, 1, 4], 'desc')", [4, 3, 1]), ("keys({a: 1})", ["a"]), ("values({a: 1})", [1]),
    ("toPairs({a: 1})", [["a", 1]]), ("fromPairs([['a', 1]])", {"a": 1}), ("concat([1], [2, 3])", [1, 2, 3]),
    ("flatten([1, [2, [3]]])", [1, 2, 3]), ("uniq([1, 2, 1, 2.0])", [1, 2]), ("get([1, 2], 5)", None),
    ("get({a: 1}, 'a')", 1), ("bitand(0b1010, 0b1100)", 0b1000), ("bitor(0b1010, 0b1100)", 0b1110),
    ("bitxor(0b1010, 0b1100)", 0b110), ("bitnand(0b1010, 0b1100)", 0b10), ("bitnot(0b1010)", -0b1011),
    ("bitshl(0b101101, 2)", 0b10110100), ("bitshr(0b101101, 2)", 0b1011),
    ("bitushr(-0b101, 2)", 4611686018427387902),
    ("duration('1h30m').Minutes()", 90.0), ("date('2023-08-14').Year()", 2023),
    ("date('2023-08-14 10:20:30').Format('2006/01/02 15:04')", "2023/08/14 10:20"),
    ("date('2023-08-14') < date('2023-08-15')", True), ("now() - duration('1h') < now()", True),
])
def test_builtins(src: str, want: Any) -> None:
    got = run(src)
    assert got == want and type(got) is type(want), f"{src!r} -> {got!r}"


def test_now_is_a_time_with_methods() -> None:
    from datetime import datetime

    t = run("now()")
    assert isinstance(t, datetime) and t.tzinfo is not None
    assert run("now().Year()") == datetime.now().year
    assert run("now('%Y')") == str(datetime.now().year)


def test_float_division_by_zero_is_ieee() -> None:
    assert run("1 / 0") == math.inf
    assert run("-1 / 0") == -math.inf
    assert math.isnan(run("0 / 0"))
    assert run("2.0 ** 5000") == math.inf


@pytest.mark.parametrize(("src", "msg"), [
    ("msg.nothing + 'xx'", "invalid operation: nil + string"),  # RuleGo's exprTransform `msg.aa+'xx'` fails
    ("1 + 'a'", "invalid operation: int + string"),
    ("'a' < 1", "invalid operation: string < int"),
    ("1 % 0", "integer divide by zero"),
    ("1.5 % 2", "invalid operation: float % int"),
    ("text.temperature", "cannot fetch temperature from string"),  # RuleGo: TEXT msg, msg.temperature
    ("empty.x", "cannot fetch x from nil"),
    ("msg.items[7]", "index out of range: 7 (array length is 3)"),
    ("1 && true", "'&&' needs a bool, got int"),
    ("nil ? 1 : 2", "needs a bool, got nil"),
    ("'a' in 'abc'", 'operator "in" not defined on string'),
    ("nosuch(1)", "unknown function nosuch()"),
    ("upper(1)", "upper(): argument must be a string, got int"),
    ("len(1)", "invalid argument for len (type int)"),
    ("int('x1')", "int(): invalid syntax"),
    ("1 contains 'a'", "invalid operation: int contains string"),
    ("fromJSON('{')", "fromJSON()"),
])
def test_runtime_errors(src: str, msg: str) -> None:
    with pytest.raises(ExprError) as ei:
        run(src)
    assert msg in str(ei.value)
    assert src.strip() in str(ei.value)  # the message names the expression
    assert not isinstance(ei.value, ExprSyntaxError)


@pytest.mark.parametrize(("src", "pos"), [
    ("1 +", 3), ("(1", 2), ("a.", 2), ("[1, 2", 5), ("{a 1}", 3), ("'abc", 0), ("1 ? 2", 5),
    ("a @ b", 2), ("0x", 0), ("foo(1,,2)", 6), ("#", 0), ("not", 3), ("99999999999999999999", 0),
    ("'a' matches '('", 12),
])
def test_syntax_errors_have_positions(src: str, pos: int) -> None:
    with pytest.raises(ExprSyntaxError) as ei:
        compile_expr(src)
    assert ei.value.position == pos, str(ei.value)
    assert f"position {pos}" in str(ei.value) or ei.value.position == pos


def test_undefined_modes() -> None:
    prog = compile_expr("missing == nil")
    assert prog.run({}) is True  # RuleGo compiles with AllowUndefinedVariables
    with pytest.raises(ExprError, match="undefined variable 'missing'"):
        prog.run({}, undefined="error")
    # a missing key of a map is nil in every mode but "strict"
    assert compile_expr("m.k").run({"m": {}}, undefined="error") is None
    with pytest.raises(ExprError, match=r"'m\.k' is not defined"):
        compile_expr("m.k").run({"m": {}}, undefined="strict")
    with pytest.raises(ExprError, match=r"'cfg\.a' is not defined"):
        compile_expr("cfg.a.b").run({"cfg": {}}, undefined="strict")
    # optional=True: every member access behaves as ?.
    assert compile_expr("m.a.b.c").run({"m": {}}, optional=True) is None
    with pytest.raises(ValueError):
        prog.run({}, undefined="sometimes")


def test_env_callables_and_registered_functions() -> None:
    assert run("twice(21)", {"twice": lambda x: x * 2}) == 42
    register_function("shout_test_fn", lambda s: s.upper() + "!")
    assert run("shout_test_fn('hi')", {}) == "HI!"
    # an environment value of the same name wins over a builtin
    assert run("upper('x')", {"upper": lambda s: "mine"}) == "mine"
    with pytest.raises(ExprError, match="boom"):
        run("bad()", {"bad": lambda: (_ for _ in ()).throw(RuntimeError("boom"))})


def test_no_python_internals() -> None:
    # nothing reaches Python attributes: only map keys, list items and whitelisted time methods
    for src in ("name.__class__", "upper.__globals__", "msg.items.append", "now().__class__", "''.join",
                "msg.__len__"):
        v = None
        try:
            v = run(src)
        except ExprError:
            continue
        assert v is None, src


def test_compile_is_cached_and_programs_are_reentrant() -> None:
    assert compile_expr("1 + x") is compile_expr("1 + x")
    prog = compile_expr("map(xs, # * k)")
    assert prog.run({"xs": [1, 2], "k": 3}) == [3, 6]
    assert prog.run({"xs": [5], "k": 2}) == [10]


def test_fresh_mutable_results() -> None:
    prog = compile_expr("[1, 2]")
    a = prog.run({})
    a.append(3)
    assert prog.run({}) == [1, 2]
