"""The agent configuration document as typed models.

Field names, types and defaults are those of the `ai/agent` rule-chain node (docs/config.md lists them).
Names stay camelCase on the wire and in Python (`cfg.maxStep`) so a document and the code read the same.
Fields that chainreact adds beyond that document are marked "chainreact extension" in their description.

Unknown fields are kept out of the models and reported by the loader: errors naming the closest field
(`maxSteps`: did you mean 'maxStep'?), or warnings for a document that says `"unknownFields": "warn"`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

# The node's fields where 0 means "the default" (as in the `ai/agent` node's source: an unset int is 0).
ZERO_MEANS_DEFAULT = {"maxStep": 50, "maxToolOutputLength": 50000, "maxRetries": 3, "circuitCooldownSec": 60}
NO_RETRIES = -1  # maxRetries: -1 turns retries off (0 is the default, 3)


def is_local_url(url: str | None) -> bool:
    """Whether an agent's `url` means the embedded local model (empty or "local")."""
    return (url or "").strip().lower() in ("", "local")


class _Model(BaseModel):
    # extra="allow" so the loader can find unknown keys (model_extra) and report them all, with did-you-mean.
    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_default=False)


class ChatMessage(_Model):
    role: Literal["system", "user", "assistant", "tool"]
    content: str | list[dict[str, Any]] | None = ""
    name: str | None = None
    tool_calls: list[dict[str, Any]] | None = None
    tool_call_id: str | None = None


class ModelParams(_Model):
    temperature: float = Field(0.7, ge=0.0, le=2.0, description="Sampling temperature [0, 2]. 0 means 0.")
    topP: float = Field(0.9, ge=0.0, le=1.0, description="Nucleus sampling threshold [0, 1].")
    frequencyPenalty: float = Field(0.5, ge=-2.0, le=2.0, description="Frequency penalty.")
    presencePenalty: float = Field(0.5, ge=-2.0, le=2.0, description="Presence penalty.")
    maxTokens: int = Field(0, ge=0, le=2**31 - 1,
                           description="Max output tokens; 0 = model default (omitted on the wire).")
    stop: list[str] = Field(default_factory=list, description="Stop sequences.")
    responseFormat: Literal["text", "json_object", "json_schema"] = "text"
    jsonSchema: str | dict[str, Any] = Field(
        "", description="JSON Schema (a JSON string or an object), used when responseFormat is json_schema."
    )
    keepThink: bool = Field(False, description="Keep the model's reasoning in the output.")
    extraFields: dict[str, Any] = Field(
        default_factory=dict,
        description="Extra top-level request fields; dotted keys nest (thinking.type -> {thinking:{type}}).",
    )

    @field_validator("stop", mode="before")
    @classmethod
    def _stop_str(cls, v: Any) -> Any:
        return [v] if isinstance(v, str) else v


class Compat(_Model):
    """Per-endpoint compatibility switches (chainreact extension), for endpoints that reject parts of the
    OpenAI wire format. All off by default."""

    flattenContent: bool = Field(False, description="Send list-form message content as one string.")
    omit: list[str] = Field(
        default_factory=list,
        description="Request fields never sent to this endpoint, e.g. parallel_tool_calls, stream_options, "
        "tool_choice, frequency_penalty, presence_penalty, top_p.",
    )
    toolChoiceRequired: bool = Field(
        True, description="Whether the endpoint accepts tool_choice 'required' (else it is sent as 'auto')."
    )
    streamTools: bool = Field(
        True, description="Whether tool-bearing requests may be streamed (llama.cpp's server: false)."
    )
    systemRole: bool = Field(True, description="Whether the endpoint accepts system messages (else: user).")


class Timeouts(_Model):
    """HTTP timeouts in seconds (chainreact extension). Positive and finite."""

    connect: float = Field(10.0, gt=0, le=86400, allow_inf_nan=False)
    read: float = Field(300.0, gt=0, le=86400, allow_inf_nan=False)
    total: float = Field(600.0, ge=0, le=86400, allow_inf_nan=False,
                         description="One model call's deadline per endpoint: all attempts, backoff waits "
                         "and the whole stream; 0 = the default, 600.")


class FailoverEndpoint(_Model):
    url: str
    key: str = ""
    model: str = Field("", description="Empty = inherit the primary model.")
    params: ModelParams | None = Field(
        None, description="Omitted = inherit the primary params; fields given override the primary's."
    )
    compat: Compat | None = None


class ToolDescriptor(_Model):
    """An object tool descriptor. The string shorthand "bash" equals {"type": "builtin", "name": "bash"}."""

    type: Literal["builtin", "mcp", "agent", "rulechain", "http", "standard", "python", "a2a"] = "builtin"
    name: str = ""
    description: str = ""
    targetId: str = ""
    parameters: dict[str, Any] | str | None = None
    config: dict[str, Any] = Field(default_factory=dict)
    timeout: int | None = Field(None, ge=0, le=86_400_000, description="Milliseconds.")
    # The flow spec's ToolForAIDef fields (http/standard and mcp tools).
    output: dict[str, Any] | None = None
    execution: dict[str, Any] | None = None
    mcpClient: dict[str, Any] | None = None
    # chainreact extension: each call waits for a human decision (approve, reject, edit; agent/interrupts.py)
    requireApproval: bool = False
    # chainreact extension: an `a2a` tool's remote agent (its card's URL) and the auth its calls send
    url: str | None = None
    auth: dict[str, Any] | None = None


class AgentConfig(_Model):
    url: str = Field("", description="OpenAI-compatible base URL. Empty or 'local' = the embedded model.")
    key: str = ""
    model: str = ""
    systemPrompt: str = ""
    messages: list[ChatMessage] = Field(default_factory=list, description="Preset context messages.")
    images: list[str] = Field(default_factory=list, description="Image URLs, base64 or local file paths.")
    maxStep: int = Field(50, ge=0, le=1_000_000, description="ReAct steps; 0 = the default, 50.")
    maxToolOutputLength: int = Field(50000, ge=0, le=1_000_000_000,
                                     description="Tool output cut, in characters; 0 = the default, 50000.")
    maxRetries: int = Field(3, ge=NO_RETRIES, le=100,
                            description="Retries per endpoint; 0 = the default, 3; -1 = no retries.")
    streamRetryMode: Literal["off", "full"] = "off"
    streamToolCallCheck: Literal["", "auto", "firstContent", "drain"] = ""
    failover: list[FailoverEndpoint] = Field(default_factory=list)
    circuitCooldownSec: int = Field(60, ge=0, le=86400, description="Breaker cooldown; 0 = the default, 60.")
    params: ModelParams = Field(default_factory=ModelParams)
    tools: list[str | ToolDescriptor] = Field(default_factory=list)
    skillsDir: str = ""
    skills: list[str] = Field(default_factory=list)
    # chainreact extensions
    name: str = Field("", description="chainreact extension: the agent's name (else the node's name).")
    description: str = Field("", description="chainreact extension: what the agent does (agent-as-tool).")
    maxStepPolicy: Literal["answer", "error"] = Field(
        "answer",
        description="chainreact extension: on reaching maxStep, one last tool-less call for the best answer "
        "(answer) or raise (error).",
    )
    parallelToolCalls: bool = Field(
        True, description="chainreact extension: run the tool calls of one message concurrently."
    )
    returnDirectly: list[str] = Field(
        default_factory=list, description="chainreact extension: tools whose result ends the run."
    )
    compat: Compat = Field(default_factory=Compat)
    timeouts: Timeouts = Field(default_factory=Timeouts)
    maxConnections: int = Field(
        0, ge=0, le=1_000_000,
        description="chainreact extension: most HTTP connections (requests in flight) to each model endpoint "
        "at once in this process; more requests wait for a free one. 0 = the default: 1000, or half the "
        "process's open-file limit (ulimit -n) when that is lower.",
    )
    unknownFields: Literal["error", "warn"] = Field(
        "error",
        description="chainreact extension: what a field no model knows is when the document is loaded: an "
        "error naming the closest field (error), or ignored with a warning (warn: for documents that carry "
        "another tool's fields on purpose). Inside a rule chain an ai/agent node is always lenient.",
    )

    @field_validator(*ZERO_MEANS_DEFAULT)
    @classmethod
    def _zero_means_default(cls, v: int, info: ValidationInfo) -> int:
        # Stored as the effective value, so every consumer (agent, model client, chains) agrees.
        return ZERO_MEANS_DEFAULT[info.field_name or ""] if v == 0 else v


class RuleChainNode(_Model):
    """A rule-chain node wrapping an agent configuration."""

    id: str = ""
    type: str = "ai/agent"
    name: str = ""
    configuration: AgentConfig
