"""An `aiagent` node's system message: `systemMessage` rendered, and `userIdentityExpression` (when one of
its expressions has a value) added as `\n\nThe user: <identity>`. Shared by a node's own run and its run as a
collaborator."""

from __future__ import annotations

from typing import Any

from .exprs import blanks, render
from .model import AIAgentNode


def system_message(node: AIAgentNode, env: dict[str, Any]) -> str:
    system = render(node.systemMessage, env)
    if node.userIdentityExpression:
        # Left out when it names nothing the turn has: "{{user.name}} (ID: {{user.id}})" without a user
        # would tell the model the user is " (ID: )".
        blank = blanks(node.userIdentityExpression, env)
        identity = render(node.userIdentityExpression, env)
        if identity.strip() and not (blank and all(blank)):
            system += f"\n\nThe user: {identity}"
    return system


__all__ = ["system_message"]
