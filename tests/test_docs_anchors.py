"""Every `performance.md#anchor` link in README.md and docs/ resolves to a heading of docs/performance.md.

Sections of performance.md were dropped once (commit d236606) while README.md, docs/durable.md and
docs/flows.md still linked to them; this keeps such a link from dying silently again. Anchors are GitHub's:
the heading's text lowercased, punctuation other than `-` and `_` removed, spaces made hyphens, a repeated
heading suffixed -1, -2, ...
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]*performance\.md)#([^)\s]+)\)")


def slug(heading: str) -> str:
    text = re.sub(r"<[^>]+>", "", heading).strip().lower()  # inline HTML dropped, as GitHub renders it
    text = re.sub(r"[`*_~]{2,}|[`*~]", "", text)  # markdown emphasis and code marks
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)  # a link's text
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    seen: dict[str, int] = {}
    out: set[str] = set()
    in_code = False
    for line in doc.read_text(encoding="utf-8").splitlines():
        if line.lstrip().startswith("```"):
            in_code = not in_code
        if in_code or not (m := re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)):
            continue
        base = slug(m.group(1))
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def links() -> list[tuple[str, str, str]]:
    found = []
    for doc in DOCS:
        for m in LINK.finditer(doc.read_text(encoding="utf-8")):
            found.append((str(doc.relative_to(ROOT)), m.group(1), m.group(2)))
    return found


def test_the_slugs_are_githubs() -> None:
    assert slug("Serving: `chainreact serve` against agno's AgentOS (issue 14)") == \
        "serving-chainreact-serve-against-agnos-agentos-issue-14"
    assert slug("Scale: 10,000 runs in flight and 2,000 SSE clients (issue 26)") == \
        "scale-10000-runs-in-flight-and-2000-sse-clients-issue-26"
    assert slug("Chat flows: turn overhead against stored history (`bench/flows.py`, issue 13)") == \
        "chat-flows-turn-overhead-against-stored-history-benchflowspy-issue-13"


def test_there_are_links_to_check() -> None:
    assert len(links()) >= 5  # README.md, durable.md, flows.md, server.md ... link into performance.md


@pytest.mark.parametrize(("doc", "target", "anchor"), links())
def test_every_performance_anchor_resolves(doc: str, target: str, anchor: str) -> None:
    path = (ROOT / doc).parent / target
    assert path.resolve() == (ROOT / "docs" / "performance.md").resolve(), f"{doc} links to {target}"
    headings = anchors(path)
    assert anchor in headings, f"{doc}: performance.md#{anchor} is no heading of docs/performance.md"
