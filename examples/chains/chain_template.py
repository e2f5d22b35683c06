"""The text/template node: Go's text/template over a rule message, as RuleGo runs it.

    python examples/chains/chain_template.py

`.msg` is the message's JSON as Go decodes it (every number a float64), `.metadata` a map[string]string;
printf formats as Go's fmt does, maps range in key order, and a template that does not parse fails the
chain's load with its position (docs/chains.md, "Go text/template").
"""

from __future__ import annotations

import asyncio

from chainreact.chains import ChainLoadError, RuleEngine, RuleMsg

REPORT = """{{- /* one line per reading, sensors in name order */ -}}
{{.metadata.site}} at {{.msg.time}}:
{{- range $name, $r := .msg.readings}}
  {{printf "%-8s %6.2f °C" $name $r.celsius}}
  {{- if gt $r.celsius 30.0}} HOT{{else if lt $r.celsius 0.0}} FROST{{end}}
{{- end}}
{{len .msg.readings}} sensors, max {{printf "%.1f" .msg.max}}"""


def chain(template: str) -> dict[str, object]:
    return {"ruleChain": {"id": "report"}, "metadata": {"nodes": [
        {"id": "render", "type": "text/template", "configuration": {"template": template}}]}}


async def main() -> None:
    engine = RuleEngine()
    engine.load(chain(REPORT))
    data = ('{"time": "07:00", "max": 31.25, "readings": {"roof": {"celsius": 31.25}, '
            '"cellar": {"celsius": -1.5}, "hall": {"celsius": 19}}}')
    ends = await engine.run("report", RuleMsg(type="TELEMETRY", data=data, metadata={"site": "Lyon"}))
    print(ends[0].msg.data)

    # A message the template cannot render fails the node with Go's error; the data is kept.
    ends = await engine.run("report", RuleMsg(type="TELEMETRY", data='{"readings": {"x": 3}}'))
    print(f"{ends[0].relation}: {ends[0].error}")

    # A template that does not parse fails the load, at its position.
    try:
        engine.load(chain("{{range .msg.readings}}\n{{.celsius | round}}{{end}}"))
    except ChainLoadError as e:
        print("load error:", e.errors[0][1])


if __name__ == "__main__":
    asyncio.run(main())
