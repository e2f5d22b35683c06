"""The package's public face: lazy names, the names type checkers see, py.typed (issue 9 item 20)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import pytest

import chainreact

ROOT = Path(__file__).resolve().parents[2]


def test_every_public_name_resolves() -> None:
    for name in chainreact.__all__:
        assert getattr(chainreact, name) is not None, name
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        _ = chainreact.nope  # type: ignore[attr-defined]


def test_type_checkers_see_the_same_names_as_the_lazy_loader() -> None:
    tree = ast.parse((ROOT / "src/chainreact/__init__.py").read_text(encoding="utf-8"))
    block = next(n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING")
    typed = {(imp.module, alias.name) for imp in block.body if isinstance(imp, ast.ImportFrom)
             for alias in imp.names}
    assert typed == {(mod, name) for name, mod in chainreact._LAZY.items()}
    assert set(chainreact.__all__) == {*chainreact._LAZY, "__version__"}


def test_the_package_is_marked_typed() -> None:
    assert resources.files("chainreact").joinpath("py.typed").is_file()


@pytest.mark.slow
def test_mypy_sees_real_types_through_the_lazy_names(tmp_path: Path) -> None:
    user = tmp_path / "user_code.py"
    user.write_text(
        "from chainreact import Agent, RunResult, tool\n"
        "agent = Agent(name='a')\n"
        "steps: str = agent.max_steps\n"  # an int: a type checker that sees Agent must say so
        "def f(r: RunResult) -> int:\n"
        "    return r.content\n"  # a str
    )
    env = {**os.environ, "MYPYPATH": str(ROOT / "src")}
    r = subprocess.run([sys.executable, "-m", "mypy", "--no-incremental", "--follow-imports=silent",
                        "--ignore-missing-imports", str(user)],
                       capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300)
    assert r.returncode == 1, r.stdout
    assert 'user_code.py:3: error: Incompatible types in assignment (expression has type "int"' in r.stdout
    assert 'user_code.py:5: error: Incompatible return value type (got "str", expected "int")' in r.stdout
