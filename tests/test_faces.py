"""Each package meets the others through its face or a documented seam.

A package's face is its `__init__` (what it exports); a seam is a module of it that other packages may
import, listed with what it is for in docs/architecture.md, section "Faces and seams" (each backticked
path in the last column of its table, `tools/base.py` or `tools/mcp/`, is a seam). Any other module is
internal to its package: an import of it from another package fails here, in an import statement or in
a string naming it.
"""

from __future__ import annotations

import re
from pathlib import Path

from tests.test_import_graph import PKG, Scan, _modules, package_of, scan, scan_all

DOC = Path(__file__).resolve().parents[1] / "docs" / "architecture.md"
SECTION = "## Faces and seams"
# a backticked module path; names may hold digits (tools/a2a.py)
_PATH = re.compile(r"`([a-z_][a-z0-9_]*(?:/[a-z_][a-z0-9_]*)*(?:\.py|/))`")


def documented_seams(text: str) -> set[str]:
    """The module names of the seam paths listed in the section (`tools/base.py` -> chainreact.tools.base)."""
    start = text.index(SECTION)
    end = text.find("\n## ", start + len(SECTION))
    rows = [line for line in text[start:end if end != -1 else len(text)].splitlines() if line.startswith("|")]
    return {PKG + "." + p.removesuffix(".py").removesuffix("/").replace("/", ".")
            for row in rows for p in _PATH.findall(row.rsplit("|", 2)[-2])}


def is_face(module: str) -> bool:
    """The library's face (chainreact), or a top-level package's or single-file module's (chainreact.x)."""
    return module.count(".") <= 1


def crossings(scans: dict[str, Scan], seams: set[str]) -> list[str]:
    out = []
    for name, s in sorted(scans.items()):
        for how, targets in (("imports", s.imports), ("names in a string", s.strings)):
            for target, line in sorted(targets.items()):
                if package_of(target) != package_of(name) and not is_face(target) and target not in seams:
                    out.append(f"{name}:{line}: {how} {target}")
    return out


def test_the_checker_finds_an_import_past_the_face() -> None:
    modules = {"chainreact", "chainreact.agent", "chainreact.agent.loop", "chainreact.agent.plan",
               "chainreact.tools", "chainreact.tools.base", "chainreact.errors"}
    src = ("from ..agent import Agent\nfrom ..agent.plan import RunPlan\nfrom ..agent.loop import ReactLoop\n"
           "from ..errors import ConfigError\nfrom .base import Tool\nX = 'chainreact.agent.loop:f'\n")
    scans = {"chainreact.tools.registry": scan("chainreact.tools.registry", src, modules)}
    assert crossings(scans, {"chainreact.agent.plan"}) == [
        "chainreact.tools.registry:3: imports chainreact.agent.loop",
        "chainreact.tools.registry:6: names in a string chainreact.agent.loop",
    ]
    doc = ("x `a/b.py`\n## Faces and seams\nsee `tests/t.py`\n"
           "| `tools` | `x/y.py` | `tools/base.py` (`Tool`), `tools/mcp/` |\n## Next\n`c/d.py`")
    assert documented_seams(doc) == {"chainreact.tools.base", "chainreact.tools.mcp"}


def test_other_packages_import_only_faces_and_documented_seams() -> None:
    found = crossings(scan_all(), documented_seams(DOC.read_text()))
    assert found == [], (f"imports of another package's internal modules: import its face, or list the "
                         f"module as a seam in {DOC.name} ({SECTION!r}) with what it is for:\n"
                         + "\n".join(found))


def test_every_documented_seam_exists() -> None:
    missing = sorted(documented_seams(DOC.read_text()) - set(_modules()))
    assert missing == [], f"seams listed in {DOC.name} that are no module (renamed? gone?): {missing}"
