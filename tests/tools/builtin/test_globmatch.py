"""The glob matcher against wcmatch.glob (GLOBSTAR | BRACE | DOTGLOB), the reference semantics."""

from __future__ import annotations

import random

import pytest
from wcmatch import glob as wc

from chainreact.tools.builtin.globmatch import GlobError, compile_glob, expand_braces

FLAGS = wc.GLOBSTAR | wc.BRACE | wc.DOTGLOB
TOKENS = ["a", "b", ".", "*", "?", "**", "[ab]", "[!a]", "[^b]", "[]a]", "[a-c]", "[/]", "[!/]", "{a,b}",
          "{a,}", "{a}", "{,b}", "{a,{b,c}}", "{1..3}", "/", "\\*", "\\a", "[", "]", "{", "}", ",", "-",
          "[[:alpha:]]", "[z-a]", "[a-]", "[!]]", "x", "[.-0]"]
NAMES = ["a", "b", "ab", ".a", "c", "]", "[", "{a}", "*", "-", "ba", "1", "2", "a.b", "x", ",", "\\", "é"]


def corpus(seed: int, n: int) -> list[tuple[str, str]]:
    rnd = random.Random(seed)
    cases = []
    for _ in range(n):
        pattern = "".join(rnd.choice(TOKENS) for _ in range(rnd.randint(1, 5)))
        path = "/".join(rnd.choice(NAMES) for _ in range(rnd.randint(1, 3)))
        cases.append((pattern, path))
    return cases


def test_matcher_agrees_with_wcmatch_on_a_corpus() -> None:
    cases = corpus(7, 1500) + corpus(11, 1500)
    differ = [(p, path) for p, path in cases
              if (compile_glob(p).match(path) is not None) != wc.globmatch(path, p, flags=FLAGS)]
    positives = sum(wc.globmatch(path, p, flags=FLAGS) for p, path in cases)
    assert positives > 80  # the corpus exercises matches, not only misses
    assert differ == []


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("[]a]b", "]b", True), ("[]a]b", "ab", True), ("[]a]b", "bb", False),
    ("a[/]b", "a/b", False), ("a[!x]b", "a/b", False), ("a?b", "a/b", False), ("a[.-0]b", "a/b", False),
    ("a/**/b", "a/b", True), ("a/**/b", "a/x/y/b", True), ("**", "a/.b/c", True), ("a**b", "a/b", False),
    ("{a}", "a", False), ("{a}", "{a}", True), ("f{1..3}", "f2", True), ("f{01..10}", "f07", True),
    ("{x,y/z}", "y/z", True), ("[[:digit:]]", "7", True), ("\\*", "*", True), ("\\*", "a", False),
    ("[z-a]", "b", False), ("*", "\udcff", True), ("?", "é", True),
])
def test_edge_cases(pattern: str, path: str, expected: bool) -> None:
    assert (compile_glob(pattern).match(path) is not None) is expected


def test_brace_bombs_are_refused() -> None:
    with pytest.raises(GlobError):
        expand_braces("{a,b}" * 11)
    with pytest.raises(GlobError):
        expand_braces("{1..100000}")
