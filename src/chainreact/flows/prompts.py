"""An `aiagent` node's system message: `systemMessage` rendered, and `userIdentityExpression` (when it
renders to something) added as `\n\nThe user: <identity>`. Shared by a node's own run and its run as a
collaborator."""

from __future__ import annotations

from typing import Any

from .exprs import render
from .model import AIAgentNode


def system_message(node: AIAgentNode, env: dict[str, Any]) -> str:
    system = render(node.systemMessage, env)
    if node.userIdentityExpression:
        identity = render(node.userIdentityExpression, env)
        if identity.strip():
            system += f"\n\nThe user: {identity}"
    return system


__all__ = ["system_message"]
