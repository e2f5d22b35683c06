from __future__ import annotations

import os
from pathlib import Path

import pytest

from chainreact.tools.builtin.globmatch import compile_glob, matches

from .conftest import call


@pytest.fixture
def tree(ws: Path) -> Path:
    files = {
        "README.md": "# Title\nTODO: write docs\n",
        "src/app.py": "import os\n\ndef main():\n    # TODO fix\n    return os.getcwd()\n",
        "src/util/helpers.py": "def helper():\n    return 'todo'\n",
        "src/web/index.ts": "export const x = 1; // TODO\n",
        "build/out.py": "TODO generated\n",
        ".git/config": "TODO in git\n",
    }
    for rel, content in files.items():
        (ws / rel).parent.mkdir(parents=True, exist_ok=True)
        (ws / rel).write_text(content)
    (ws / "data.bin").write_bytes(b"\x00TODO\x00")
    return ws


@pytest.mark.parametrize(("pattern", "path", "expected"), [
    ("**/*.py", "a.py", True), ("**/*.py", "x/y/a.py", True), ("*.py", "x/a.py", False),
    ("src/*.py", "src/a.py", True), ("src/*.py", "src/x/a.py", False), ("src/**", "src/x/a.py", True),
    ("*.{js,ts}", "a.ts", True), ("*.{js,ts}", "a.py", False), ("file?.txt", "file1.txt", True),
    ("[!a]*.txt", "b.txt", True), ("[!a]*.txt", "a.txt", False), ("a/**/b", "a/b", True),
])
def test_glob_translation(pattern: str, path: str, expected: bool) -> None:
    assert (compile_glob(pattern).match(path) is not None) is expected


def test_patterns_without_slash_match_base_names() -> None:
    assert matches("*.py", "deep/dir/x.py") and not matches("src/*.py", "deep/src/x.py")


async def test_glob_lists_sorted_and_skips_git(tree: Path, make) -> None:
    text, err = await call(make("glob"), pattern="**/*.py")
    assert not err
    assert text.splitlines() == ["3 paths match '**/*.py' in .:", "build/out.py", "src/app.py",
                                 "src/util/helpers.py"]
    text, _ = await call(make("glob"), pattern="*", path="src")
    assert text.splitlines()[1:] == ["src/app.py", "src/util/", "src/util/helpers.py", "src/web/",
                                     "src/web/index.ts"]
    text, _ = await call(make("glob"), pattern="**/config")
    assert text.startswith("No paths match")


async def test_glob_mtime_sort_and_cap(tree: Path, make) -> None:
    for age, rel in enumerate(["src/util/helpers.py", "src/app.py", "build/out.py"]):
        os.utime(tree / rel, (1_000_000 + age * 1000, 1_000_000 + age * 1000))
    text, _ = await call(make("glob"), pattern="**/*.py", sort="mtime")
    assert text.splitlines()[1:] == ["build/out.py", "src/app.py", "src/util/helpers.py"]
    text, _ = await call(make("glob", maxResults=2), pattern="**/*.py", max_results=50)
    assert text.splitlines()[1:3] == ["build/out.py", "src/app.py"]
    assert "[... 1 more not shown (limit 2)" in text


async def test_glob_absolute_inside_ok_dotdot_refused(tree: Path, make) -> None:
    text, err = await call(make("glob"), pattern=f"{tree}/src/*.py")
    assert not err and "src/app.py" in text
    text, err = await call(make("glob"), pattern="src/../../*")
    assert err and "'..'" in text


async def test_grep_basic_and_skips(tree: Path, make) -> None:
    text, err = await call(make("grep"), pattern="TODO")
    assert not err
    lines = text.splitlines()
    assert lines[0] == "4 matches in 4 files for 'TODO' in . (1 binary file skipped):"
    assert lines[1:] == ["README.md:2:TODO: write docs", "build/out.py:1:TODO generated",
                         "src/app.py:4:    # TODO fix", "src/web/index.ts:1:export const x = 1; // TODO"]


async def test_grep_options(tree: Path, make) -> None:
    grep = make("grep")
    text, _ = await call(grep, pattern="todo", ignore_case=True, include=["*.py"], exclude=["build"])
    assert text.splitlines()[1:] == ["src/app.py:4:    # TODO fix", "src/util/helpers.py:2:    return 'todo'"]
    text, _ = await call(grep, pattern="TODO|return", path="src/app.py", context=1)
    assert text.splitlines()[1:] == ["src/app.py-3-def main():", "src/app.py:4:    # TODO fix",
                                     "src/app.py:5:    return os.getcwd()"]
    text, _ = await call(grep, pattern="def", path="src", context=1)
    # Like grep -C: groups are separated by "--", also between files.
    assert text.splitlines()[1:] == ["src/app.py-2-", "src/app.py:3:def main():",
                                     "src/app.py-4-    # TODO fix", "--",
                                     "src/util/helpers.py:1:def helper():",
                                     "src/util/helpers.py-2-    return 'todo'"]
    text, _ = await call(grep, pattern="o", max_results=2)
    assert "limit reached" in text and "[... results capped at 2 matches" in text
    assert len([x for x in text.splitlines() if ":" in x and not x.startswith(("First", "["))]) == 2
    text, err = await call(grep, pattern="(")
    assert err and "invalid regular expression" in text


async def test_grep_context_separator(ws: Path, make) -> None:
    (ws / "f.txt").write_text("\n".join(["hit"] + ["x"] * 5 + ["hit"]) + "\n")
    text, _ = await call(make("grep"), pattern="hit", context=1)
    assert text.splitlines()[1:] == ["f.txt:1:hit", "f.txt-2-x", "--", "f.txt-6-x", "f.txt:7:hit"]
