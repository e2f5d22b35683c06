"""printf, print and println in a template against cases transcribed from Go's fmt tests (fmt_cases.json),
and TestComplexFormatting's property: a complex formats as its two parts do."""

from __future__ import annotations

import itertools
import math
from typing import Any

import pytest

from chainreact.chains.gotemplate import GoTemplate

from .harness import decode, load

TABLE = load("fmt_cases.json")
CASES = TABLE["cases"]


def printf(fmt: str, *args: Any, fn: str = "printf") -> str:
    names = " ".join(f".a{i}" for i in range(len(args)))
    text = f"{{{{{fn} .f {names}}}}}" if fn == "printf" else f"{{{{{fn} {names}}}}}"
    return GoTemplate(text).execute({"f": fmt, **{f"a{i}": a for i, a in enumerate(args)}})


@pytest.mark.parametrize("case", CASES, ids=[c["go"] for c in CASES])
def test_go_fmt_case(case: dict[str, Any]) -> None:
    args = [decode(a) for a in case["args"]]
    assert printf(case.get("fmt", ""), *args, fn=case.get("print", "printf")) == case["output"]


def test_complex_formats_as_its_parts() -> None:
    """fmt_test.go TestComplexFormatting: Sprintf(f, complex(r, i)) == Sprintf("(" f f' "i)", r, i)."""
    values = [1.0, 0.0, -1.0, math.inf, -math.inf, math.nan]
    checked = 0
    for plus, zero, space, verb in itertools.product([True, False], [True, False], [True, False], "fFeEgG"):
        z = "0" if zero else ""
        real_fmt = "%" + z + (" " if space else "") + ("+" if plus else "") + "10.2" + verb
        imag_fmt = "%" + z + "+10.2" + verb
        for r, i in itertools.product(values, values):
            one = printf(real_fmt, complex(r, i))
            assert one == printf("(" + real_fmt + imag_fmt + "i)", r, i), (real_fmt, r, i)
            checked += 1
    assert checked == 8 * 6 * 36
