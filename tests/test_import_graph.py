"""No import cycles in src/chainreact, and every module imports only its layer and the layers below.

The graph has one node per module and one edge per `import` / `from ... import` statement naming another
chainreact module, wherever the statement sits: at module level, under `if TYPE_CHECKING:` and inside
functions (lazy imports). All three count because each is a real dependency: a lazy import only moves the
cost, and a `TYPE_CHECKING` import still ties the two modules' designs together (and mypy follows it).
`from pkg import name` is an edge to `pkg.name` when that is a module, else to `pkg`. The implicit import
of a parent package (importing `a.b.c` runs `a/__init__` and `a/b/__init__` first) is not an edge: a
package's `__init__` only re-exports, so counting it would turn every re-export into a cycle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "chainreact"


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in (SRC / PKG).rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


unresolved: list[str] = []  # `from chainreact.x import y` where chainreact.x is no module


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    is_pkg = path.name == "__init__.py"
    package = name if is_pkg else name.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.startswith(PKG) and base not in modules and not any(
                    m.startswith(base + ".") for m in modules):  # a folder without __init__ is a package too
                unresolved.append(f"{path.relative_to(SRC)}:{node.lineno}: {base}")
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in modules:  # `import chainreact.x.y` of a non-module attribute
                t = t.rpartition(".")[0]
            if t and t != name and t.startswith(PKG):
                found.add(t)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def find_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan), each as a sorted list."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0

    def visit(v: str) -> None:
        nonlocal counter
        index[v] = low[v] = counter
        counter += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_the_checker_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    graph = import_graph()
    # agent.py imports the loop at module level; the loop's edges to types and tools are there too.
    assert "chainreact.agent.loop" in graph["chainreact.agent.agent"]
    assert "chainreact.types" in graph["chainreact.agent.loop"]


def test_no_import_cycles_in_src() -> None:
    cycles = find_cycles(import_graph())
    if cycles:
        pytest.fail("import cycles in src/ (break each one; see docs/architecture.md):\n"
                    + "\n".join(" <-> ".join(c) for c in cycles))


def test_every_from_import_names_an_existing_module() -> None:
    unresolved.clear()
    import_graph()
    assert unresolved == [], "imports of chainreact modules that do not exist:\n" + "\n".join(unresolved)
