"""From tool descriptors (strings and objects in a config's `tools`) to Tool instances.

Builtins are registered by name as import paths and imported on first use, so an agent that never
uses `bash` never imports it. Users register their own with `register_builtin`.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from ..errors import ConfigError
from .base import Tool

# name -> "module:function"; the function is `create(config: dict, descriptor) -> Tool`.
_BUILTINS: dict[str, str | Callable[..., Tool]] = {
    "bash": "chainreact.tools.builtin.bash:create",
    "read": "chainreact.tools.builtin.files:create_read",
    "write": "chainreact.tools.builtin.files:create_write",
    "edit": "chainreact.tools.builtin.edit:create_edit",
    "grep": "chainreact.tools.builtin.search:create_grep",
    "glob": "chainreact.tools.builtin.search:create_glob",
    "skill": "chainreact.tools.skills:create",
    "ask_user": "chainreact.tools.builtin.ask_user:create",
}


def register_builtin(name: str, factory: str | Callable[..., Tool]) -> None:
    """Register a builtin tool factory under `name` (a callable or a "module:function" path)."""
    _BUILTINS[name] = factory


def builtin_names() -> list[str]:
    return sorted(_BUILTINS)


def builtin_factory(name: str, where: str = "tools") -> Callable[..., Tool]:
    factory = _BUILTINS.get(name)
    if factory is None:
        raise ConfigError(
            f"{where}: unknown builtin tool {name!r}; known: {', '.join(builtin_names())}",
            errors=[(where, f"unknown builtin tool {name!r}")],
        )
    if isinstance(factory, str):
        mod, _, fn = factory.partition(":")
        try:
            factory = getattr(importlib.import_module(mod), fn)
        except (ImportError, AttributeError) as e:
            raise ConfigError(f"{where}: builtin tool {name!r} is not available ({e})") from None
        _BUILTINS[name] = factory
    assert callable(factory)
    return factory


def create_builtin(name: str, config: dict[str, Any] | None = None, descriptor: Any = None,
                   where: str = "tools") -> Tool:
    return builtin_factory(name, where)(dict(config or {}), descriptor)
