"""Where an agent that names no endpoint sends its model calls: one switch for every document.

A document whose `url` is absent (or empty) uses the openai SDK's own environment when it is set:

- `OPENAI_BASE_URL`: the endpoint (else OpenAI's, https://api.openai.com/v1, when only the key is set);
- `OPENAI_API_KEY`: the key, unless the document gives one;
- `OPENAI_DEFAULT_MODEL` (the OpenAI Agents SDK's variable): the model, unless the document gives one;
  else `gpt-4o-mini`.

With neither `OPENAI_BASE_URL` nor `OPENAI_API_KEY` set, it runs on the embedded local model, as before.
`url: "local"` always means the embedded model. The rule is applied where a configuration becomes a
runtime one (`resolve_agent_config`, and `ModelClient.from_config` for configurations made in code or by a
chain's `ai/agent` node), so a document means the same thing wherever it runs. Flows' `provider: openai`
reads the same variables (flows/llm.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import NamedTuple

from .models import AgentConfig

ENV_BASE_URL = "OPENAI_BASE_URL"
ENV_API_KEY = "OPENAI_API_KEY"
ENV_MODEL = "OPENAI_DEFAULT_MODEL"
OPENAI_URL = "https://api.openai.com/v1"
DEFAULT_MODEL = "gpt-4o-mini"

__all__ = ["DEFAULT_MODEL", "ENV_API_KEY", "ENV_BASE_URL", "ENV_MODEL", "OPENAI_URL", "EnvEndpoint",
           "env_api_key", "env_endpoint", "with_default_endpoint"]


class EnvEndpoint(NamedTuple):
    url: str
    key: str
    model: str


def env_endpoint(environ: Mapping[str, str] | None = None) -> EnvEndpoint | None:
    """The endpoint the environment names (module doc), or None when neither variable is set."""
    env = os.environ if environ is None else environ
    url = env.get(ENV_BASE_URL, "").strip()
    key = env.get(ENV_API_KEY, "").strip()
    if not url and not key:
        return None
    model = env.get(ENV_MODEL, "").strip() or DEFAULT_MODEL
    return EnvEndpoint((url or OPENAI_URL).rstrip("/"), key, model)


def env_api_key(environ: Mapping[str, str] | None = None) -> str:
    """`OPENAI_API_KEY`, or "" (flows' `provider: openai` sends it when the node gives no `apiKey`)."""
    env = os.environ if environ is None else environ
    return env.get(ENV_API_KEY, "").strip()


def with_default_endpoint(cfg: AgentConfig, environ: Mapping[str, str] | None = None) -> AgentConfig:
    """`cfg` with the environment's endpoint when its `url` is empty (module doc); else `cfg` itself."""
    if cfg.url.strip():
        return cfg
    ep = env_endpoint(environ)
    if ep is None:
        return cfg
    return cfg.model_copy(update={"url": ep.url, "key": cfg.key or ep.key, "model": cfg.model or ep.model})
