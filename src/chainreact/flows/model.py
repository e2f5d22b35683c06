"""The flow document: `{"id", "name", "nodes": [...]}`, each node told apart by its `type`.

`aiagent` is the Basic Agent of /work/shared/spec/flow-basic-agent.txt with its exact field names and
defaults. `message`, `end` and `rulechain` are chainreact's own node kinds (docs/flows.md). Unknown keys
are errors (a misspelt `agentOutcome` would otherwise silently never branch).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class _Def(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


class TransitionDef(_Def):
    end: bool = Field(False, description="True ends the flow; targetId is then ignored.")
    targetId: str | None = Field(None, description="The name of the node to go to.")


class LLMParamsDef(_Def):
    model: str | None = None
    temperature: float | None = Field(None, ge=0.0, le=2.0)
    topP: float | None = Field(None, ge=0.0, le=1.0)
    n: int | None = Field(None, ge=1)
    logprobs: int | None = Field(None, ge=0)
    echo: bool | None = None
    stop: list[str] = Field(default_factory=list)
    maxTokens: int | None = Field(None, ge=0)
    presencePenalty: float | None = Field(None, ge=-2.0, le=2.0)
    frequencyPenalty: float | None = Field(None, ge=-2.0, le=2.0)
    logitBias: dict[str, Annotated[int, Field(ge=-100, le=100)]] | None = Field(
        None, description="Token id -> bias, each in [-100, 100].")
    required: dict[str, Any] | None = Field(None, description="Extra request fields, sent as they are.")


class LLMConfigDef(_Def):
    provider: str | None = Field(None, description="openai, deepseek, groq, ... (docs/flows.md has the list)")
    apiKey: str | None = None
    overrideParams: LLMParamsDef | None = None
    url: str | None = Field(None, description="chainreact extension: any OpenAI-compatible base URL "
                                              "(wins over provider).")


class ConversationSummarizationDef(_Def):
    retainedMessages: int = Field(2, ge=0)
    promptMessage: str | None = None


class MemoryOptimizerDef(_Def):
    summarization: ConversationSummarizationDef | None = None


class LongTermMemoryDef(_Def):
    memoryId: str | None = None
    scope: Literal["global", "local"] | None = None
    memoryType: Literal["semantic", "episodic", "procedural"] = "episodic"


class ChatMemoryDef(_Def):
    memoryId: str | None = None
    memoryType: Literal["message_window"] = "message_window"
    maxMessages: int = Field(10, ge=0)
    maxTokens: int | None = Field(None, ge=0)
    memoryOptimizer: MemoryOptimizerDef | None = None
    longTermMemory: LongTermMemoryDef | None = None


class DataSchemaDef(_Def):
    schema_: dict[str, Any] = Field(alias="schema", description="A JSON Schema object.")
    maxRetries: int = Field(2, ge=0, le=10, description="chainreact extension: how many times an answer "
                                                         "that does not validate is asked for again.")


class McpAuthDef(_Def):
    type: Literal["bearer", "header"]
    bearerToken: str | None = None
    headers: dict[str, str] | None = None


class McpToolFilterDef(_Def):
    type: Literal["all", "include", "exclude", "expression"]
    includedTools: list[str] | None = None
    excludedTools: list[str] | None = None
    expression: str | None = None


class McpClientDef(_Def):
    url: str
    auth: McpAuthDef | None = None
    toolFilter: McpToolFilterDef | None = None


class ToolForAIDef(_Def):
    name: str
    type: Literal["standard", "mcp"] | None = None
    description: str | None = None
    parameters: dict[str, Any] | None = None
    output: dict[str, Any] | None = None
    execution: dict[str, Any] | None = None
    mcpClient: McpClientDef | None = None

    def descriptor(self) -> dict[str, Any]:
        """The agent's tool descriptor. `type` is optional in the spec: without it, a tool with an
        `mcpClient` is an MCP tool and any other is `standard` (direct execution), never a builtin."""
        d = self.model_dump(exclude_none=True, by_alias=True)
        if self.type is None:
            d["type"] = "mcp" if self.mcpClient is not None else "standard"
        return d


class OnAgentOutcomeDef(_Def):
    condition: str = Field(description="An expression; `{{x}}` inside it reads the value of x.")
    finish: bool = True
    transition: TransitionDef | None = None
    answerAfterFinish: bool = False


class GroupConfigDef(_Def):
    directMessageOnly: bool = False


class CollaboratorDef(_Def):
    """One collaborator of a supervising agent: another `aiagent` node of the flow, or an agent document."""

    description: str = Field(min_length=1, description=(
        "What the collaborator does; the supervisor reads it (as the tool's description) to decide when to "
        "delegate."))
    node: str | None = Field(None, description="The name of an aiagent node of this flow.")
    agentFile: str | None = Field(None, description=(
        "A chainreact agent document (JSON/YAML), relative to the flow document."))
    name: str | None = Field(None, description=(
        "The tool name the supervisor calls (default: the node's name, else the document's name)."))
    shareHistory: bool = Field(False, description="Pass the supervisor's conversation along as context.")
    timeout: float | None = Field(None, gt=0, description="Seconds one delegated task may take.")


class MultiAgentCollaborationDef(_Def):
    """The agent supervises `collaborators`, each exposed to it as a tool (docs/flows.md)."""

    enabled: bool = True
    collaborators: list[CollaboratorDef] = Field(min_length=1)


class _NodeBase(_Def):
    name: str = Field(min_length=1, description="Unique within the flow; transitions target it.")
    start: bool = False
    transition: TransitionDef | None = None


class AIAgentNode(_NodeBase):
    type: Literal["aiagent"]
    answerAfterFinish: bool = False
    answerMessage: str | None = None
    aiModel: str = "gpt-4o"
    llmConfig: LLMConfigDef | None = None
    systemMessage: str = "You are a helpful AI Assistant."
    userMessage: str
    userIdentityExpression: str | None = None
    maxToolExecutions: int = Field(10, ge=0)
    memory: ChatMemoryDef | None = None
    output: DataSchemaDef
    tools: list[ToolForAIDef] = Field(default_factory=list)
    askUserForToolsInput: bool = False
    agentOutcomes: list[OnAgentOutcomeDef] = Field(default_factory=list)
    loginRequired: bool | None = None
    groupConfig: GroupConfigDef | None = None
    multiAgentCollaboration: MultiAgentCollaborationDef | None = None


class MessageNode(_NodeBase):
    """Sends a fixed (templated) message, then follows `transition`."""

    type: Literal["message"]
    message: str = Field(description="The text; `{{...}}` expressions are rendered.")
    finish: bool = Field(False, description="True ends the turn after the message (the session waits on the "
                                            "transition's target); false goes on in the same turn.")


class EndNode(_NodeBase):
    """Ends the flow, with an optional closing message."""

    type: Literal["end"]
    message: str | None = None


class RuleChainNode(_NodeBase):
    """Runs a rule chain (chainreact.chains) on the turn's input; its result becomes `output`."""

    type: Literal["rulechain"]
    chainId: str | None = Field(None, description="The id of a chain loaded into the flow's engine.")
    chainFile: str | None = Field(None, description="A chain file, relative to the flow document.")
    input: str = Field("{{userInput}}", description="The message data sent to the chain (a template).")
    message: str | None = Field(None, description="Sent after the chain ran (a template; `output` is the "
                                                  "chain's result).")
    finish: bool = False


FlowNode = Annotated[AIAgentNode | MessageNode | EndNode | RuleChainNode, Field(discriminator="type")]
NODE_TYPES = ("aiagent", "message", "end", "rulechain")


class FlowDef(_Def):
    id: str = ""
    name: str = ""
    description: str = ""
    state: str | None = Field(None, description="The state store URL (see docs/state.md); $CHAINREACT_STATE "
                                                "and an explicit URL win over it.")
    nodes: list[FlowNode] = Field(min_length=1)

    def node(self, name: str) -> AIAgentNode | MessageNode | EndNode | RuleChainNode | None:
        for n in self.nodes:
            if n.name == name:
                return n
        return None

    @property
    def start_node(self) -> AIAgentNode | MessageNode | EndNode | RuleChainNode:
        """The node marked `start`, else the first node (validation rejects two starts)."""
        return next((n for n in self.nodes if n.start), self.nodes[0])


__all__ = ["NODE_TYPES", "AIAgentNode", "ChatMemoryDef", "CollaboratorDef", "ConversationSummarizationDef",
           "DataSchemaDef", "EndNode", "FlowDef", "FlowNode", "GroupConfigDef", "LLMConfigDef",
           "LLMParamsDef", "LongTermMemoryDef", "McpAuthDef", "McpClientDef", "McpToolFilterDef",
           "MemoryOptimizerDef", "MessageNode", "MultiAgentCollaborationDef", "OnAgentOutcomeDef",
           "RuleChainNode", "ToolForAIDef", "TransitionDef"]
