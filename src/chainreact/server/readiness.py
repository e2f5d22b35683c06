"""Served documents that cannot run, and why: `/readyz` lists them, `chainreact serve` prints them at start.

A document that does not load at all is a *problem* (`catalog.problems`). Some load and still cannot run,
because of where their model calls would go. Every kind is checked, endpoint by endpoint (the primary and
each failover):

- a rule chain's `ai/agent` or `ai/llm` node whose `url`, `key` or `model` still holds a `${...}` after the
  chain's load-time substitution: RuleGo leaves a `${global.x}` that no global defines as it is (and
  renders nothing but `global`, `vars` and `ruleChain` there), so the chain loads, and its first message
  would send a model call to the text "${global.url}";
- a flow's `aiagent` node whose `llmConfig.url` or `apiKey` holds a `${...}` (or `{{...}}`): a flow renders
  neither, so the text itself would be the URL or the key; or whose `provider` has no known URL and no
  `url` is given; and a collaborator's agent document that does not load;
- an agent document's endpoints are rendered strictly when it loads (a missing global is a problem naming
  it, config/resolve.py), but a template may render to something that is not a URL
  (`"${env('LLM_URL')}/v1"` with LLM_URL unset is "/v1");
- for every kind, an endpoint that names no URL goes to OPENAI_BASE_URL / OPENAI_API_KEY when one is set,
  else to the embedded model (config/endpoint.py): without the `local` extra (and no CHAINREACT_LOCAL_URL)
  that endpoint cannot run. Not judged with `serve --temporal`: the workers call the model, in their own
  environment.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

from .catalog import Catalog, Entry

_FIELDS = ("url", "key", "model")
_PLACEHOLDER = re.compile(r"\$\{\s*([^}]*?)\s*\}")
_FLOW_PLACEHOLDER = re.compile(r"\$\{[^}]*\}|\{\{[^}]*\}\}")
_URL = re.compile(r"https?://[^/\s]+(/\S*)?", re.IGNORECASE)


def cannot_run(catalog: Catalog, *, in_process: bool = True) -> list[dict[str, str]]:
    """One {"id", "kind", "source", "why"} per served document that cannot run (module doc). With
    `in_process=False` (serve --temporal: workers make the model calls, in their own environment) an
    endpoint without a URL is not judged by this process's environment."""
    out: list[dict[str, str]] = []
    embedded = _Embedded(in_process)
    for entry in catalog.entries.values():
        whys = list(_entry_whys(entry, catalog, embedded))
        if whys:
            out.append({"id": entry.id, "kind": entry.kind, "source": entry.source, "why": "; ".join(whys)})
    return out


def _entry_whys(entry: Entry, catalog: Catalog, embedded: _Embedded) -> Iterator[str]:
    if entry.kind == "agent":
        yield from _endpoint_whys("", entry.agent.config, embedded)
    elif entry.kind == "chain":
        chain = catalog.engine.get(entry.id) if catalog.engine is not None else None
        for node in chain.nodes.values() if chain is not None else ():
            cfg = getattr(node.component, "agent_config", None)
            if cfg is not None:
                yield from _endpoint_whys(f"node {node.id!r} ", cfg, embedded, chain_node=True)
    elif entry.kind == "flow":
        yield from _flow_whys(entry.flow, embedded)


def _endpoint_whys(label: str, cfg: Any, embedded: _Embedded, *, chain_node: bool = False) -> Iterator[str]:
    """Why the primary endpoint of an agent configuration, or one of its failovers, cannot be called."""
    for prefix, ep in [("", cfg), *((f"failover[{i}].", fo) for i, fo in enumerate(cfg.failover))]:
        placeholder = False
        for name in _FIELDS:
            value = getattr(ep, name, None) or ""
            m = _PLACEHOLDER.search(value) if isinstance(value, str) else None
            if m is not None:
                placeholder = True
                yield f"{label}{prefix}{name} is {value!r}: {_unrendered(m.group(1), chain_node)}"
        if not placeholder:
            yield from _url_whys(f"{label}{prefix}url", ep.url, embedded, primary=not prefix)


def _unrendered(variable: str, chain_node: bool) -> str:
    if re.fullmatch(r"(global|vars|ruleChain)\.[\w.\-]+", variable):
        why = f"{variable} is not defined"
        if variable.startswith("global."):
            why += f" (give it: --global {variable.removeprefix('global.')}=...)"
        return why
    if chain_node:  # a chain renders only these three at load; nothing renders a node's endpoint later
        return "only ${global.x}, ${vars.x} and ${ruleChain.x} are rendered in a node's endpoint"
    return "it was not rendered"


def _url_whys(label: str, url: str, embedded: _Embedded, *, primary: bool) -> Iterator[str]:
    from ..config import is_local_url

    text = (url or "").strip()
    if primary and not text and embedded.env_set():
        return  # the endpoint of OPENAI_BASE_URL / OPENAI_API_KEY
    if is_local_url(text):
        missing = embedded.missing()
        if missing:
            what = "no url" if not text else "url 'local'"
            yield (f"{label}: {what}, so the embedded model, which is not installed (no module {missing!r}): "
                   "pip install 'chainreact[local]', or set OPENAI_BASE_URL / OPENAI_API_KEY, or give a url")
        return
    if not _URL.fullmatch(text):
        yield f"{label} is {url!r}: not an http(s) URL (a template that rendered empty?)"


def _flow_whys(flow: Any, embedded: _Embedded) -> Iterator[str]:
    from ..flows.llm import PROVIDERS, base_url
    from ..flows.model import AIAgentNode

    for node in flow.definition.nodes:
        if not isinstance(node, AIAgentNode):
            continue
        label = f"node {node.name!r} "
        cfg = node.llmConfig
        bad = False
        for name in ("url", "apiKey"):
            value = getattr(cfg, name, None) or ""
            if _FLOW_PLACEHOLDER.search(value):
                bad = True
                yield (f"{label}llmConfig.{name} is {value!r}: a flow renders no template there (write the "
                       "value, or leave the url out to use OPENAI_BASE_URL / OPENAI_API_KEY)")
        if bad:
            continue
        url = base_url(node)
        if url is None:
            known = ", ".join(p for p, u in PROVIDERS.items() if u)
            yield (f"{label}llmConfig.provider {cfg.provider if cfg else None!r} has no known URL: give "
                   f"llmConfig.url (known providers: {known})")
        else:
            yield from _url_whys(f"{label}llmConfig.url", url, embedded, primary=True)
        yield from _collaborator_whys(flow, node, label)


def _collaborator_whys(flow: Any, node: Any, label: str) -> Iterator[str]:
    """A collaborator's agent document is loaded when the node first delegates, without globals
    (flows/collaboration.py): one that would fail then is said now."""
    from pathlib import Path

    from ..config import resolve_agent_config
    from ..errors import ConfigError

    team = node.multiAgentCollaboration
    for i, c in enumerate(team.collaborators if team is not None and team.enabled else ()):
        if not c.agentFile:
            continue
        path = Path(c.agentFile)
        if not path.is_absolute():
            path = flow.base_dir / path
        try:
            resolve_agent_config(path)
        except ConfigError as e:
            first = str(e).strip().splitlines()[0]
            yield f"{label}multiAgentCollaboration.collaborators[{i}].agentFile: {first}"


class _Embedded:
    """Whether an endpoint without a URL can run: the environment's endpoint, else the embedded model
    (looked up once per check, without importing it)."""

    def __init__(self, in_process: bool) -> None:
        self.in_process = in_process
        self._missing: str | None = None

    def env_set(self) -> bool:
        from ..config import env_endpoint

        return not self.in_process or env_endpoint() is not None

    def missing(self) -> str:
        """The first module of the `local` extra that is not installed; "" when it can run."""
        from ..local import LOCAL_URL_ENV, local_extra_available

        if not self.in_process or os.environ.get(LOCAL_URL_ENV, "").strip():
            return ""  # a running llama.cpp server is named: nothing to start
        if self._missing is None:
            self._missing = local_extra_available()
        return self._missing


__all__ = ["cannot_run"]
