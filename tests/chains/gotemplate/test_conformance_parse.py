"""text/template parsing against cases transcribed from Go's parse tests (parse_cases.json): the trees
Go builds (in their String() form), the errors it reports, and how it reads numeric constants."""

from __future__ import annotations

from typing import Any

import pytest

from chainreact.chains.gotemplate import GoFunc, GoTemplate, ParseError
from chainreact.chains.gotemplate.nodes import NumberNode, Tree, is_empty_tree
from chainreact.chains.gotemplate.numbers import parse_number

from .harness import FUNCS, load

TABLE = load("parse_cases.json")
CASES = [c for c in TABLE["cases"] if "skip" not in c and "number" not in c]
NUMBERS = [c for c in TABLE["cases"] if "number" in c]


def parse(case: dict[str, Any]) -> GoTemplate:
    funcs = dict(FUNCS)
    for name in case.get("funcs", []):
        funcs[name] = GoFunc(name, lambda a: a, ("any",))
    left, right = case.get("delims", ["", ""])
    return GoTemplate(case["template"], case.get("name", case["go"].split("/", 1)[-1]), funcs, left, right,
                      max_paren_depth=case.get("max_paren_depth", 1000))


@pytest.mark.parametrize("case", CASES, ids=[c["go"] for c in CASES])
def test_go_parse_case(case: dict[str, Any]) -> None:
    if "error" in case:
        with pytest.raises(ParseError) as ei:
            parse(case)
        assert case["error"] in str(ei.value)
        return
    t = parse(case)
    if "empty" in case:
        assert is_empty_tree(t.trees[t.name].root) is case["empty"]
        return
    quoted = case.get("quote_text", True)
    assert t.tree_string(quote_text=quoted) == case["tree"]
    for name, want in case.get("trees", {}).items():
        assert t.tree_string(name, quote_text=quoted) == want
    if "trees" in case:
        assert set(t.trees) - {t.name} == set(case["trees"])


@pytest.mark.parametrize("case", NUMBERS, ids=[c["go"] for c in NUMBERS])
def test_go_number_case(case: dict[str, Any]) -> None:
    text = case["number"]
    n = NumberNode(Tree("n", "n", text, "{{", "}}"), 0, text)
    # Go's test lexes a text as complex when fmt.Sscan reads it as one: real, sign, imaginary
    is_char = text.startswith("'")
    is_complex = not is_char and text.endswith("i") and ("+" in text[1:] or "-" in text[1:])
    if case.get("error"):
        with pytest.raises(ValueError):
            parse_number(n, is_char, is_complex)
        return
    parse_number(n, is_char, is_complex)
    got = {"is_int": n.is_int, "is_uint": n.is_uint, "is_float": n.is_float, "is_complex": n.is_complex}
    assert got == {k: bool(case[k]) for k in got}
    if n.is_int:
        assert n.int64 == case["int64"]
    if n.is_uint:
        assert n.uint64 == case["uint64"]
    if n.is_float:
        assert n.float64 == case["float64"]
    if n.is_complex:
        assert n.complex128 == complex(*case["complex128"])
