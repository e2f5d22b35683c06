"""The built-in component families, registered by importing them (each module registers its classes)."""

from __future__ import annotations

from .components import actions, ai, expr_nodes, flow_nodes, groups, js, rest
from .components.base import REGISTRY, Component

FAMILIES = (actions, ai, expr_nodes, flow_nodes, groups, js, rest)


def builtin_components() -> dict[str, type[Component]]:
    return REGISTRY
