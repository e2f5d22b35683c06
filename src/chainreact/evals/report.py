"""`chainreact eval --report FILE.html [--baseline OLD.html]`: a self-contained page of an eval's results.

The page has no external resource (styles inline, no script that runs): pass/fail per case, each check
with its detail, the answers, and, against a baseline report, what changed: cases newly failing or fixed,
new or gone cases, and each changed answer as a word diff. The results are embedded as JSON
(`<script type="application/json" id="chainreact-eval">`), which is how a later run reads this page back
as its baseline.
"""

from __future__ import annotations

import difflib
import html
import json
import re
import time
from pathlib import Path
from typing import Any

from .dataset import DatasetError

_DATA = re.compile(r'<script type="application/json" id="chainreact-eval">(.*?)</script>', re.DOTALL)
ANSWER_CHARS = 4000

CSS = """
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1d232b;
background:#fafbfc}
h1{font-size:20px;margin:0 0 4px} .meta{color:#5b6673;margin-bottom:16px}
.cards{display:flex;gap:12px;margin:12px 0 20px;flex-wrap:wrap}
.card{background:#fff;border:1px solid #dde2e8;border-radius:8px;padding:10px 16px;min-width:120px}
.card b{display:block;font-size:22px} .card span{color:#5b6673;font-size:12px}
table{border-collapse:collapse;width:100%;background:#fff;border:1px solid #dde2e8}
th,td{border-bottom:1px solid #e6eaef;padding:8px 10px;text-align:left;vertical-align:top}
th{background:#f1f4f7;font-size:12px;text-transform:uppercase;color:#5b6673}
.pass{color:#0f7b3d;font-weight:600} .fail{color:#b42318;font-weight:600}
.badge{display:inline-block;border-radius:10px;padding:1px 8px;font-size:12px;margin-left:4px}
.b-broke{background:#fde4e1;color:#b42318} .b-fixed{background:#dcf5e6;color:#0f7b3d}
.b-new{background:#e3ecfb;color:#1d4ed8} .b-changed{background:#fff3d6;color:#8a5a00}
ul.checks{margin:0;padding-left:16px} ul.checks li{margin:1px 0}
pre{white-space:pre-wrap;word-break:break-word;margin:0;font:12px/1.4 ui-monospace,Menlo,Consolas,monospace}
del{background:#fde4e1;text-decoration:line-through} ins{background:#dcf5e6;text-decoration:none}
.gone td{color:#8a94a0}
"""


def read_report(path: str | Path) -> dict[str, Any]:
    """The results embedded in a report written by `write_report` (the baseline of a later run)."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise DatasetError(f"--baseline {p}: cannot read it ({e.strerror or e})") from None
    found = _DATA.search(text)
    if found is None:
        raise DatasetError(f"--baseline {p}: not a report of `chainreact eval --report` (no embedded "
                           "results)")
    try:
        data = json.loads(found.group(1))
    except ValueError as e:
        raise DatasetError(f"--baseline {p}: its embedded results are not JSON ({e})") from None
    if not isinstance(data, dict) or not isinstance(data.get("results"), list):
        raise DatasetError(f"--baseline {p}: its embedded results have no `results` list")
    return data


def compare(baseline: dict[str, Any] | None, now: dict[str, Any]) -> dict[str, Any]:
    """Per case name: `broke` (passed, fails now), `fixed`, `new`, `changed` (same verdict, other answer);
    and `gone` (baseline cases no longer in the dataset)."""
    if baseline is None:
        return {"changes": {}, "gone": []}
    before = {r["name"]: r for r in baseline["results"]}
    changes: dict[str, str] = {}
    for r in now["results"]:
        old = before.get(r["name"])
        if old is None:
            changes[r["name"]] = "new"
        elif old["passed"] and not r["passed"]:
            changes[r["name"]] = "broke"
        elif r["passed"] and not old["passed"]:
            changes[r["name"]] = "fixed"
        elif old.get("answer") != r.get("answer"):
            changes[r["name"]] = "changed"
    names = {r["name"] for r in now["results"]}
    return {"changes": changes, "gone": [r for r in baseline["results"] if r["name"] not in names]}


def word_diff(old: str, new: str) -> str:
    """`new` against `old`, word by word, as HTML (<del>/<ins>)."""
    a, b = re.findall(r"\s+|\S+", old), re.findall(r"\s+|\S+", new)
    out: list[str] = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(html.escape("".join(a[i1:i2])))
            continue
        if i2 > i1:
            out.append(f"<del>{html.escape(''.join(a[i1:i2]))}</del>")
        if j2 > j1:
            out.append(f"<ins>{html.escape(''.join(b[j1:j2]))}</ins>")
    return "".join(out)


def _answer(text: str | None) -> str:
    text = text or ""
    return text if len(text) <= ANSWER_CHARS else text[:ANSWER_CHARS] + f"… ({len(text)} characters)"


def _checks(r: dict[str, Any]) -> str:
    items = []
    for c in r["checks"]:
        mark = '<span class="pass">✓</span>' if c["passed"] else '<span class="fail">✗</span>'
        detail = html.escape(str(c.get("detail", "")))
        items.append(f"<li>{mark} <b>{html.escape(c['kind'])}</b> {detail}</li>")
    if r.get("error"):
        items.append(f'<li><span class="fail">✗</span> <b>error</b> {html.escape(r["error"])}</li>')
    return f"<ul class=\"checks\">{''.join(items)}</ul>" if items else "—"


def render(now: dict[str, Any], baseline: dict[str, Any] | None = None, *, title: str = "chainreact eval",
           dataset: str = "") -> str:
    delta = compare(baseline, now)
    changes = delta["changes"]
    before = {r["name"]: r for r in baseline["results"]} if baseline else {}
    rows = []
    for r in now["results"]:
        verdict = '<span class="pass">pass</span>' if r["passed"] else '<span class="fail">fail</span>'
        change = changes.get(r["name"])
        if change:
            verdict += f' <span class="badge b-{change}">{change}</span>'
        answer = html.escape(_answer(r.get("answer")))
        old = before.get(r["name"])
        if old is not None and old.get("answer") != r.get("answer"):
            answer = word_diff(_answer(old.get("answer")), _answer(r.get("answer")))
        run = f"<br><small>run {html.escape(r['run_id'])}</small>" if r.get("run_id") else ""
        rows.append(f"<tr data-case=\"{html.escape(r['name'])}\"><td>{html.escape(r['name'])}{run}</td>"
                    f"<td>{verdict}</td><td>{_checks(r)}</td><td><pre>{answer}</pre></td>"
                    f"<td>{r.get('tokens', 0)}</td><td>{r.get('ms', 0):.0f}</td></tr>")
    for r in delta["gone"]:
        rows.append(f"<tr class=\"gone\"><td>{html.escape(r['name'])}</td><td>gone</td><td>not in this "
                    f"dataset any more</td><td><pre>{html.escape(_answer(r.get('answer')))}</pre></td>"
                    "<td></td><td></td></tr>")
    cards = [("pass rate", f"{now['pass_rate'] * 100:.1f}%"), ("passed", f"{now['passed']} / {now['cases']}")]
    if baseline is not None:
        diff = (now["pass_rate"] - baseline.get("pass_rate", 0)) * 100
        cards.append(("vs baseline", f"{diff:+.1f} pts"))
        counts = {k: sum(1 for v in changes.values() if v == k) for k in ("broke", "fixed", "changed", "new")}
        cards += [("newly failing", str(counts["broke"])), ("fixed", str(counts["fixed"])),
                  ("answers changed", str(counts["changed"]))]
    card_html = "".join(f'<div class="card"><b>{html.escape(v)}</b><span>{html.escape(k)}</span></div>'
                        for k, v in cards)
    data = json.dumps(now, ensure_ascii=False).replace("</", "<\\/")
    meta = f"{html.escape(now.get('target', ''))}" + (f" · dataset {html.escape(dataset)}" if dataset else "")
    meta += f" · {time.strftime('%Y-%m-%d %H:%M:%S')}"
    if baseline is not None:
        meta += f" · baseline from {html.escape(str(baseline.get('created', 'an earlier run')))}"
    return ("<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{html.escape(title)}</title>"
            f"<style>{CSS}</style></head><body><h1>{html.escape(title)}</h1><div class=\"meta\">{meta}</div>"
            f"<div class=\"cards\">{card_html}</div><table><thead><tr><th>case</th><th>result</th>"
            "<th>checks</th>"
            f"<th>answer</th><th>tokens</th><th>ms</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<script type=\"application/json\" id=\"chainreact-eval\">{data}</script></body></html>\n")


def write_report(path: str | Path, now: dict[str, Any], baseline: dict[str, Any] | None = None, *,
                 dataset: str = "") -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(render({**now, "created": time.strftime("%Y-%m-%d %H:%M:%S")}, baseline, dataset=dataset),
                 encoding="utf-8")
    return p


__all__ = ["compare", "read_report", "render", "word_diff", "write_report"]
