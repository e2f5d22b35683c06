"""Errors of the state store. Every message names the store's URL (password masked) and what to do."""

from __future__ import annotations

from ..errors import ChainreactError


class StateError(ChainreactError):
    """Base of the state store's errors."""


class StateConnectionError(StateError):
    """The database cannot be reached (down at start-up, or the connection was lost and retries failed)."""


class StateSchemaError(StateError):
    """The database is not one this chainreact can use: corrupt, foreign, or from a newer version."""


class RunNotFoundError(StateError):
    """No run with this id in the store."""


class RunConflictError(StateError):
    """A checkpoint was saved with `expect_version` and another writer saved first."""
