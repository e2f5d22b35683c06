"""From a document to the runtime configuration: the one template pass every entry point shares.

`chainreact run`, `chainreact complete` and `Agent.from_config` all call `resolve_agent_config`, so a
document means the same thing whichever way it is run:

- `url`, `key` and `model` of the primary and of every `failover[]` endpoint are rendered, strictly: a
  template that names an undefined variable is a ConfigError naming the variable and the field, and so
  is a `url` template that renders empty (`${env('LLM_URL')}` with LLM_URL unset): never a silent switch
  to the default endpoint because `url` came out empty;
- `params` (also `extraFields`) of the primary and of every failover endpoint, and `images`, are rendered;
  a value that is wholly one `${...}` keeps its type (`"${global.budget}"` gives 1024, not "1024");
- `systemPrompt`, `messages` and tool descriptors are left as they are: they may read `metadata` and
  session values, so the agent renders them per run (`render_run_texts` does it for a one-off call).

A document whose `url` is absent takes the endpoint of `OPENAI_BASE_URL` / `OPENAI_API_KEY` when they are
set (config/endpoint.py); the embedded local model is used when `url` is "local", or absent with neither
variable set (after rendering); the resolved document says so (`uses_embedded_model`), and the CLI prints
it once.
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from ..errors import ConfigError
from .endpoint import with_default_endpoint
from .loader import AgentDocument, _json_path, load_document
from .models import AgentConfig, FailoverEndpoint, ModelParams, is_local_url

__all__ = ["as_document", "render_run_texts", "resolve_agent_config", "template_context",
           "uses_embedded_model"]

log = logging.getLogger("chainreact.config")

DocumentSource = str | Path | Mapping[str, Any] | AgentDocument | AgentConfig

_ENDPOINT_FIELDS = ("url", "key", "model")


def as_document(src: DocumentSource) -> AgentDocument:
    """A loaded document from a path, JSON/YAML text, a dict, a document or a bare AgentConfig."""
    if isinstance(src, AgentDocument):
        return src
    if isinstance(src, AgentConfig):
        return AgentDocument(config=src, name=src.name or "agent")
    return load_document(dict(src) if isinstance(src, Mapping) else src)


def template_context(doc: AgentDocument, globals: Mapping[str, Any] | None = None,
                     metadata: Mapping[str, Any] | None = None) -> Any:
    """The TemplateContext for a document's `${...}`: globals, `ruleChain` (id, name), metadata, and the
    document's folder for `include()`."""
    from ..template import TemplateContext

    return TemplateContext(globals=dict(globals or {}), rule_chain={"id": doc.id, "name": doc.name},
                           metadata=dict(metadata or {}), base_dir=doc.base_dir, source=doc.source)


def uses_embedded_model(cfg: AgentConfig) -> bool:
    """Whether the (resolved) primary endpoint is the embedded local model."""
    return is_local_url(cfg.url)


def resolve_agent_config(src: DocumentSource, globals: Mapping[str, Any] | None = None) -> AgentDocument:
    """Load `src` (if needed) and render its endpoint fields with `globals`; returns a new AgentDocument
    whose `config` is ready for the model client. Raises ConfigError naming the file, the JSON path and,
    for an undefined variable, the variable."""
    doc = as_document(src)
    if doc.resolved:  # a rendered value may itself contain "${": rendering it again would evaluate data
        return doc
    cfg = doc.config
    r = _Renderer(doc, globals)
    update: dict[str, Any] = {}
    for name in _ENDPOINT_FIELDS:
        value = getattr(cfg, name)
        rendered = r.strict(value, name)
        if rendered is not value:
            update[name] = rendered
    r.not_empty_url(cfg.url, update.get("url", cfg.url), "url")
    params = r.params(cfg.params, "params")
    if params is not cfg.params:
        update["params"] = params
    if any("${" in s for s in cfg.images):
        update["images"] = [r.text(s, f"images[{i}]") for i, s in enumerate(cfg.images)]
    failover = [r.failover(fo, i) for i, fo in enumerate(cfg.failover)]
    if any(a is not b for a, b in zip(failover, cfg.failover, strict=True)):
        update["failover"] = failover
    new_cfg = with_default_endpoint(cfg.model_copy(update=update) if update else cfg)
    resolved = dataclasses.replace(doc, config=new_cfg, resolved=True)
    if uses_embedded_model(resolved.config):
        log.info("%s: no url (or url 'local'): using the embedded local model", doc.source or "agent")
    return resolved


def render_run_texts(doc: AgentDocument, globals: Mapping[str, Any] | None = None,
                     metadata: Mapping[str, Any] | None = None) -> AgentConfig:
    """The document's config with `systemPrompt` and the preset messages' text rendered, for a one-off
    call without an agent run (`chainreact complete`). The agent renders these per run instead."""
    cfg = doc.config
    r = _Renderer(doc, globals, metadata)
    update: dict[str, Any] = {}
    if "${" in cfg.systemPrompt:
        update["systemPrompt"] = r.text(cfg.systemPrompt, "systemPrompt")
    if any(isinstance(m.content, str) and "${" in m.content for m in cfg.messages):
        update["messages"] = [
            m.model_copy(update={"content": r.text(m.content, f"messages[{i}].content")})
            if isinstance(m.content, str) and "${" in m.content else m
            for i, m in enumerate(cfg.messages)
        ]
    return cfg.model_copy(update=update) if update else cfg


class _Renderer:
    """Renders one document's fields, turning template errors into ConfigErrors with the field's path."""

    def __init__(self, doc: AgentDocument, globals: Mapping[str, Any] | None,
                 metadata: Mapping[str, Any] | None = None):
        self.doc = doc
        self.globals = dict(globals or {})
        self.metadata = metadata
        self._ctx: Any = None

    @property
    def where(self) -> str:
        return self.doc.source or "<document>"

    def ctx(self) -> Any:
        if self._ctx is None:
            self._ctx = template_context(self.doc, self.globals, self.metadata)
        return self._ctx

    def path(self, field: str) -> str:
        return f"{self.doc.json_prefix}.{field}"

    def error(self, field: str, message: str) -> ConfigError:
        path = self.path(field)
        return ConfigError(f"{self.where}: {path}: {message}", source=self.doc.source,
                           errors=[(path, message)])

    def _render(self, value: Any, field: str, *, strict: bool = False, typed: bool = False) -> Any:
        from ..template import TemplateError, render, render_obj

        try:
            if typed or not isinstance(value, str):
                return render_obj(value, self.ctx(), strict=strict, field=field)
            return render(value, self.ctx(), strict=strict, field=field)
        except TemplateError as e:
            if e.variable:
                example = e.variable.removeprefix("global.")
                raise self.error(field, f"{value!r} uses {e.variable}, which is not defined (set it with "
                                        f"--global {example}=... or Agent.from_config(..., globals=...))"
                                 ) from None
            raise self.error(field, str(e)) from None

    def text(self, value: Any, field: str) -> Any:
        """Render to text without strictness (an undefined variable follows the template engine's rule)."""
        if not _has_template(value):
            return value
        return self._render(value, field)

    def strict(self, value: Any, field: str) -> Any:
        """Render to text; any undefined variable is an error naming it and the field."""
        if not _has_template(value):
            return value
        return self._render(value, field, strict=True)

    def params(self, params: ModelParams, field: str) -> ModelParams:
        data = params.model_dump(exclude_unset=True)
        if not _has_template(data):
            return params
        # typed: a value that is wholly one ${...} keeps its type ("${global.budget}" -> 1024)
        rendered = self._render(data, field, typed=True)
        try:
            return ModelParams.model_validate(rendered)
        except ValidationError as e:
            first = e.errors()[0]
            raise self.error(_json_path(tuple(first["loc"]), field),
                             f"after rendering templates: {first['msg']} (got {first.get('input')!r:.80})"
                             ) from None

    def not_empty_url(self, template: str, rendered: str, field: str) -> None:
        """A `url` template that rendered empty would silently send the calls to the default endpoint
        (OPENAI_BASE_URL, or the embedded model): an error, as an undefined variable is."""
        if _has_template(template) and not str(rendered).strip():
            raise self.error(field, f"{template!r} rendered empty, which would mean the default endpoint "
                                    "(OPENAI_BASE_URL, else the embedded model): set what it reads, or say "
                                    "the fallback in it (${env('X', 'local')}), or leave url out")

    def failover(self, fo: FailoverEndpoint, i: int) -> FailoverEndpoint:
        update: dict[str, Any] = {}
        for name in _ENDPOINT_FIELDS:
            value = getattr(fo, name)
            rendered = self.strict(value, f"failover[{i}].{name}")
            if rendered is not value:
                update[name] = rendered
        self.not_empty_url(fo.url, update.get("url", fo.url), f"failover[{i}].url")
        if fo.params is not None:
            params = self.params(fo.params, f"failover[{i}].params")
            if params is not fo.params:
                update["params"] = params
        return fo.model_copy(update=update) if update else fo


def _has_template(value: Any) -> bool:
    if isinstance(value, str):
        return "${" in value
    if isinstance(value, Mapping):
        return any(_has_template(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_has_template(v) for v in value)
    if isinstance(value, BaseModel):
        return _has_template(value.model_dump())
    return False
