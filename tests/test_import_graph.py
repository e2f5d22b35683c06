"""The shape of src/chainreact's dependencies: no import cycles, every module imports only its layer and
the layers below (in import statements and in strings naming modules), and no module imports another
package's private names.

The graph has one node per module and one edge per `import` / `from ... import` statement naming another
chainreact module, wherever the statement sits: at module level, under `if TYPE_CHECKING:` and inside
functions (lazy imports). All three count because each is a real dependency: a lazy import only moves the
cost, and a `TYPE_CHECKING` import still ties the two modules' designs together (and mypy follows it).
`from pkg import name` is an edge to `pkg.name` when that is a module, else to `pkg`. The implicit import
of a parent package (importing `a.b.c` runs `a/__init__` and `a/b/__init__` first) is not an edge: a
package's `__init__` only re-exports, so counting it would turn every re-export into a cycle.

A string that names a chainreact module (`importlib.import_module("chainreact.x")`, `__import__`, a
`"chainreact.x.y:function"` map) is a dependency too, taken at run time: it must point down like an import
(the layer check), though it is no edge of the cycle check. Layers and packages: docs/architecture.md.
"""

from __future__ import annotations

import ast
import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = "chainreact"

# Lowest first; a module may import its own layer and those below. The package of `chainreact.x.y` is `x`;
# "" is chainreact/__init__ itself: the face of the whole library and the place the OpenTelemetry switch
# is read, above everything but the command line (which imports it).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("types", "errors", "jsonutil", "yamlutil", "version"),
    ("expr",),
    ("template",),
    ("config",),
    ("llm", "tools", "local"),
    ("agent",),
    ("state", "chains"),
    ("flows",),
    # The wings over everything run: durable runs, tracing, recorded runs and their evaluation, and the
    # test instruments (FakeLLM needs nothing; cassettes replay through `replay`).
    ("durable", "observability", "replay", "evals", "testing"),
    ("server",),
    ("", "cli", "__main__"),
)
LAYER = {pkg: i for i, pkgs in enumerate(LAYERS) for pkg in pkgs}

# Private names of other packages imported today, each to be removed (the list may only shrink).
KNOWN_PRIVATE: set[str] = set()

# A submodule, maybe with ":attribute" ("chainreact" alone names a service, a schema, a task queue...).
_MODULE_STRING = re.compile(r"(chainreact(?:\.\w+)+)(?::[\w.]+)?")


def package_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else ""


def _private(dotted: str) -> bool:
    return any(p.startswith("_") and not p.startswith("__") for p in dotted.split("."))


@dataclass
class Scan:
    """What one module's source says about its dependencies."""

    imports: dict[str, int] = field(default_factory=dict)  # module -> first line
    strings: dict[str, int] = field(default_factory=dict)  # module named in a string -> first line
    private: list[str] = field(default_factory=list)  # "importer -> other package's private name"
    unresolved: list[str] = field(default_factory=list)  # `from chainreact.x import y`, no chainreact.x


def _resolve(t: str, modules: Iterable[str]) -> str:
    while t and t not in modules:  # `import chainreact.x.y` of a non-module attribute
        t = t.rpartition(".")[0]
    return t


def scan(name: str, source: str, modules: set[str], *, is_pkg: bool = False) -> Scan:
    """The dependencies of module `name` (source text `source`) on the chainreact modules in `modules`."""
    package = name if is_pkg else name.rpartition(".")[0]
    out = Scan()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            pairs = [(a.name, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            if base.startswith(PKG) and base not in modules and not any(
                    m.startswith(base + ".") for m in modules):  # a folder without __init__ is a package too
                out.unresolved.append(f"{name}:{node.lineno}: {base}")
            pairs = [(f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base, f"{base}.{a.name}")
                     for a in node.names]
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            m = _MODULE_STRING.fullmatch(node.value)
            if m and m.group(1) in modules and m.group(1) != name:
                out.strings.setdefault(m.group(1), node.lineno)
            continue
        else:
            continue
        for target, named in pairs:
            t = _resolve(target, modules)
            if t and t != name and t.startswith(PKG):
                out.imports.setdefault(t, node.lineno)
                if package_of(t) != package_of(name) and _private(named.removeprefix(PKG + ".")):
                    out.private.append(f"{name} -> {named}")
    return out


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in (SRC / PKG).rglob("*.py"):
        parts = list(path.relative_to(SRC).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


@functools.cache
def scan_all() -> dict[str, Scan]:
    modules = _modules()
    names = set(modules)
    return {name: scan(name, path.read_text(), names, is_pkg=path.name == "__init__.py")
            for name, path in modules.items()}


def import_graph() -> dict[str, set[str]]:
    return {name: set(s.imports) for name, s in scan_all().items()}


def upward(scans: dict[str, Scan]) -> list[str]:
    """Each import or module-naming string that points to a higher layer, as `module:line: how target`."""
    out = []
    for name, s in sorted(scans.items()):
        here = LAYER[package_of(name)]
        for how, targets in (("imports", s.imports), ("names in a string", s.strings)):
            for target, line in sorted(targets.items()):
                if LAYER[package_of(target)] > here:
                    out.append(f"{name}:{line}: {how} {target}")
    return out


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


# -- each rule can fail: synthetic sources fed to the checker ------------------------------------------

FAKE = {"chainreact", "chainreact.tools", "chainreact.tools.registry", "chainreact.agent",
        "chainreact.agent.loop", "chainreact.agent._hidden", "chainreact.observability",
        "chainreact.chains", "chainreact.chains.aspects"}


def test_the_checker_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert find_cycles(graph) == [["a", "b", "c"]]
    assert find_cycles({"a": {"b"}, "b": set()}) == []


def test_the_checker_finds_an_upward_import_and_upward_module_names_in_strings() -> None:
    sources = {
        "chainreact.tools.registry": 'import importlib\nfrom ..agent import loop\n'
                                     'MAP = {"ask": "chainreact.agent.loop:create"}\n',
        "chainreact.chains.aspects": 'import importlib\nimportlib.import_module("chainreact.observability")\n'
                                     '__import__("chainreact.observability")\n',
        "chainreact.agent.loop": 'from ..tools import registry\nNAME = "chainreact.tools.registry"\n'
                                 'LOGGER = "chainreact.run.id"  # names no module\n',
    }
    scans = {n: scan(n, src, FAKE) for n, src in sources.items()}
    assert upward(scans) == [
        "chainreact.chains.aspects:2: names in a string chainreact.observability",
        "chainreact.tools.registry:2: imports chainreact.agent.loop",
        "chainreact.tools.registry:3: names in a string chainreact.agent.loop",
    ]


def test_the_checker_finds_a_private_import_across_packages() -> None:
    src = ("from ..agent._hidden import thing\nfrom ..agent.loop import _step\nfrom ..agent import loop\n"
           "from .registry import _BUILTINS\nimport chainreact.agent._hidden\n")
    assert scan("chainreact.tools.registry", src, FAKE).private == [
        "chainreact.tools.registry -> chainreact.agent._hidden.thing",
        "chainreact.tools.registry -> chainreact.agent.loop._step",
        "chainreact.tools.registry -> chainreact.agent._hidden",
    ]


def test_the_graph_sees_lazy_and_type_checking_imports() -> None:
    graph = import_graph()
    # agent.py imports the loop at module level; the loop's edges to types and tools are there too.
    assert "chainreact.agent.loop" in graph["chainreact.agent.agent"]
    assert "chainreact.types" in graph["chainreact.agent.loop"]


# -- the rules, on src/ ---------------------------------------------------------------------------------

def test_no_import_cycles_in_src() -> None:
    cycles = find_cycles(import_graph())
    if cycles:
        pytest.fail("import cycles in src/ (break each one; see docs/architecture.md):\n"
                    + "\n".join(" <-> ".join(c) for c in cycles))


def test_every_package_has_a_layer() -> None:
    missing = sorted({package_of(m) for m in _modules()} - set(LAYER))
    assert missing == [], f"packages without a layer (add them to LAYERS and docs/architecture.md): {missing}"


def test_dependencies_point_down_in_imports_and_in_strings() -> None:
    found = upward(scan_all())
    assert found == [], ("dependencies on a higher layer (turn them around: the higher layer registers "
                         "itself with the lower one; docs/architecture.md):\n" + "\n".join(found))


def test_no_module_imports_another_packages_private_names() -> None:
    found = sorted({p for s in scan_all().values() for p in s.private} - KNOWN_PRIVATE)
    assert found == [], ("private names imported from another package (use its face or a documented "
                         "seam, docs/architecture.md):\n" + "\n".join(found))


def test_every_from_import_names_an_existing_module() -> None:
    unresolved = [u for s in scan_all().values() for u in s.unresolved]
    assert unresolved == [], "imports of chainreact modules that do not exist:\n" + "\n".join(unresolved)
