"""Which node a `join` waits for: the lowest common ancestor of its parents (RuleGo utils/lca).

One parent: the topmost ancestor of that parent (the whole branch must finish). Several parents: a
parent that is an ancestor of all the others, else the common ancestor nearest to them."""

from __future__ import annotations


def _ancestors(parents: dict[str, list[str]], start: str) -> dict[str, int]:
    """Every ancestor of `start` with its BFS distance (start itself at 0); cycles are visited once."""
    dist = {start: 0}
    queue = [start]
    while queue:
        cur = queue.pop(0)
        for p in parents.get(cur, ()):
            if p not in dist:
                dist[p] = dist[cur] + 1
                queue.append(p)
    return dist


def lca_of_node(parents: dict[str, list[str]], node_id: str) -> str | None:
    ps = parents.get(node_id) or []
    if not ps:
        return None
    if len(ps) == 1:
        anc = _ancestors(parents, ps[0])
        top = max(anc.values())
        # the farthest level; first in discovery order on ties
        for nid, d in anc.items():
            if d == top:
                return nid
        return ps[0]
    sets = [_ancestors(parents, p) for p in ps]
    for cand in ps:
        if all(cand in s for s in sets):
            return cand
    common = [n for n in sets[0] if all(n in s for s in sets[1:])]
    if not common:
        return None
    return min(common, key=lambda n: max(s[n] for s in sets))
