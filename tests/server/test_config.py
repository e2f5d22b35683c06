"""The server's configuration is one typed object: a misspelt option is an error, not an ignored key."""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import pytest

from chainreact.cli import build_parser
from chainreact.errors import ConfigError
from chainreact.server import Catalog, ServerConfig, ServerOptionError, create_app
from chainreact.server.config import OPTION_NAMES


def test_a_misspelt_option_is_refused_with_the_option_it_meant(tmp_path: Path) -> None:
    with pytest.raises(ServerOptionError) as info:
        create_app(Catalog.load([tmp_path]), acces_log=True)
    assert "'acces_log'" in str(info.value) and "did you mean 'access_log'?" in str(info.value)
    # Both a ConfigError (chainreact's typed errors) and a TypeError (Python's for an unknown keyword).
    assert isinstance(info.value, ConfigError) and isinstance(info.value, TypeError)
    assert info.value.errors[0][0] == "acces_log"


def test_an_option_like_no_other_is_refused_with_the_list_of_options(tmp_path: Path) -> None:
    with pytest.raises(ServerOptionError, match=r"unknown server option 'zzz'; the options are keys, "):
        create_app(Catalog.load([tmp_path]), zzz=1)


def test_keywords_are_set_on_the_config_given(tmp_path: Path) -> None:
    base = ServerConfig(access_log=True, grace=5.0)
    app = create_app(Catalog.load([tmp_path]), base, metrics=False, grace=2.0)
    ctx = app.state.ctx
    assert ctx.config == dataclasses.replace(base, metrics=False, grace=2.0)
    assert ctx.metrics is None  # metrics=False: no /metrics, no counters
    assert ctx.runs is not None and ctx.runs.grace == 2.0


def test_the_route_modules_read_the_typed_fields(tmp_path: Path) -> None:
    app = create_app(Catalog.load([tmp_path]), rate_limit="5/minute", body_timeout=7.0, body_limit=123)
    ctx = app.state.ctx
    assert ctx.rate_limiter is not None and ctx.metrics is not None
    assert (ctx.body_timeout, ctx.body_limit, ctx.dispatch, ctx.watcher) == (7.0, 123, None, None)


# `chainreact serve` arguments that are no server option: the catalog's inputs, and the two hash printers.
NOT_OPTIONS = {"paths", "globals", "globals_file", "hash_key", "hash_password", "command", "func", "debug"}
RENAMED = {"cors_origin": "cors_origins", "no_watch": "watch"}


def test_every_option_of_chainreact_serve_is_a_field_of_the_config() -> None:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    serve = sub.choices["serve"]
    dests = {a.dest for a in serve._actions if a.dest != "help"}
    missing = sorted(RENAMED.get(d, d) for d in dests - NOT_OPTIONS if RENAMED.get(d, d) not in OPTION_NAMES)
    assert missing == [], f"serve options with no ServerConfig field: {missing}"
