"""From an `aiagent` node's `aiModel`/`llmConfig` to the agent's model settings (chainreact.config).

- the base URL: `llmConfig.url` (chainreact extension, any OpenAI-compatible endpoint) else the
  `provider`'s URL from PROVIDERS; `local` is the embedded model; `provider: openai` reads the openai SDK's
  environment: `OPENAI_BASE_URL` for the URL and `OPENAI_API_KEY` for the key, when the node gives
  neither; a node that names no endpoint (no url, provider or apiKey) goes where those variables point,
  else to the embedded model, as an agent without url does (config/endpoint.py); an `apiKey` without a
  provider is OpenAI's;
- the model: `overrideParams.model`, else `aiModel`;
- `overrideParams` onto ModelParams (temperature, topP, maxTokens, stop, penalties); the fields ModelParams
  has no slot for go out as extra request fields: `n`, `echo`, `logit_bias`, `logprobs` N as
  `logprobs: true, top_logprobs: N` (the chat API's form), and `required`'s entries as they are.
"""

from __future__ import annotations

from typing import Any

from ..config import env_api_key, env_endpoint
from .model import AIAgentNode

PROVIDERS: dict[str, str] = {
    "openai": "https://api.openai.com/v1",
    "azure": "",  # needs the resource's URL: give llmConfig.url
    "anthropic": "https://api.anthropic.com/v1",
    "gemini": "https://generativelanguage.googleapis.com/v1beta/openai",
    "deepseek": "https://api.deepseek.com/v1",
    "groq": "https://api.groq.com/openai/v1",
    "openrouter": "https://openrouter.ai/api/v1",
    "mistral": "https://api.mistral.ai/v1",
    "together": "https://api.together.xyz/v1",
    "fireworks": "https://api.fireworks.ai/inference/v1",
    "xai": "https://api.x.ai/v1",
    "perplexity": "https://api.perplexity.ai",
    "moonshot": "https://api.moonshot.cn/v1",
    "qwen": "https://dashscope.aliyuncs.com/compatible-mode/v1",
    "ollama": "http://127.0.0.1:11434/v1",
    "lmstudio": "http://127.0.0.1:1234/v1",
    "local": "local",
}


def base_url(node: AIAgentNode) -> str | None:
    """The node's endpoint, or None when its provider is unknown (or needs a URL) and no url is given.
    "" for a node that names no endpoint (no url, no provider, no apiKey): it follows the agents' rule, the
    endpoint of OPENAI_BASE_URL / OPENAI_API_KEY when set, else the embedded model (config/endpoint.py)."""
    cfg = node.llmConfig
    if cfg is not None and cfg.url:
        return cfg.url
    provider = _provider(node)
    if provider is None:
        return ""  # the model client applies the rule (url, key and model: ModelClient.from_config)
    if provider == "openai":
        ep = env_endpoint()
        if ep is not None:
            return ep.url
    return PROVIDERS.get(provider) or None


def api_key(node: AIAgentNode) -> str:
    """The node's `apiKey`, else `OPENAI_API_KEY` for `provider: openai` (the default)."""
    cfg = node.llmConfig
    if cfg is not None and cfg.apiKey:
        return cfg.apiKey
    if cfg is not None and cfg.url:
        return ""  # the OpenAI key never goes to an endpoint the node names
    return env_api_key() if _provider(node) == "openai" else ""


def _provider(node: AIAgentNode) -> str | None:
    """The node's provider, lower case; "openai" for a node with an `apiKey` and no provider (as before);
    None for a node that names no endpoint at all."""
    cfg = node.llmConfig
    if cfg is not None and cfg.provider:
        return cfg.provider.lower()
    return "openai" if cfg is not None and cfg.apiKey else None


def model_params(node: AIAgentNode) -> dict[str, Any]:
    """ModelParams fields (as a dict) for the node: only what overrideParams sets, over chainreact's
    defaults."""
    o = node.llmConfig.overrideParams if node.llmConfig is not None else None
    params: dict[str, Any] = {}
    extra: dict[str, Any] = {}
    if o is None:
        return params
    for src, dst in (("temperature", "temperature"), ("topP", "topP"), ("maxTokens", "maxTokens"),
                     ("presencePenalty", "presencePenalty"), ("frequencyPenalty", "frequencyPenalty")):
        v = getattr(o, src)
        if v is not None:
            params[dst] = v
    if o.stop:
        params["stop"] = list(o.stop)
    if o.n is not None:
        extra["n"] = o.n
    if o.echo is not None:
        extra["echo"] = o.echo
    if o.logitBias:
        extra["logit_bias"] = dict(o.logitBias)
    if o.logprobs is not None:
        extra["logprobs"] = True
        extra["top_logprobs"] = o.logprobs
    if o.required:
        extra.update(o.required)
    if extra:
        params["extraFields"] = extra
    return params


def agent_config(node: AIAgentNode, *, system_prompt: str) -> dict[str, Any]:
    """The AgentConfig (as a dict) of one run of the node."""
    from ..errors import ConfigError

    url = base_url(node)
    if url is None:
        provider = node.llmConfig.provider if node.llmConfig is not None else None
        known = ", ".join(p for p, u in PROVIDERS.items() if u)
        raise ConfigError(f"node {node.name!r}: llmConfig.provider {provider!r} has no known base URL; "
                          f"give llmConfig.url (known providers: {known})")
    o = node.llmConfig.overrideParams if node.llmConfig is not None else None
    params = model_params(node)
    schema = node.output.schema_
    params["responseFormat"] = "json_schema"
    params["jsonSchema"] = {"name": "output", "schema": schema}
    return {
        "name": node.name,
        "url": url,  # "local": the embedded model, whatever the environment says
        "key": api_key(node),
        "model": (o.model if o is not None and o.model else None) or node.aiModel,
        "systemPrompt": system_prompt,
        # maxToolExecutions is counted by tooling.ToolBudget (executions, not steps); the step limit only
        # stops a model that keeps calling tools it no longer has (then one forced answer without tools).
        "maxStep": node.maxToolExecutions + 3,
        "maxStepPolicy": "answer",
        "parallelToolCalls": False,
        "params": params,
    }


__all__ = ["PROVIDERS", "agent_config", "api_key", "base_url", "model_params"]
