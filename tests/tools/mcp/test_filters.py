"""Tool filters on a fixed tool list: all / include / exclude / name list / jq (both documented forms)."""

from __future__ import annotations

import logging

import pytest

from chainreact.errors import ConfigError
from chainreact.tools.mcp.filters import parse_filter

TOOLS = [
    {"name": "get-current-weather", "description": "Current weather for a city"},
    {"name": "get-forecast", "description": "Five day forecast"},
    {"name": "delete-file", "description": "Deletes a file"},
    {"name": "raw", "description": None},  # servers may omit descriptions
]


def names(flt_tools, tool_filter=None, tools=TOOLS):
    flt = parse_filter(flt_tools, tool_filter, "tools[mcp 'w']")
    return [t["name"] for t in flt.apply(tools)]


def test_all_and_absent_filter_keep_everything_in_order():
    every = [t["name"] for t in TOOLS]
    assert names(None) == every
    assert names(None, {"type": "all"}) == every
    assert names(["*"]) == every


def test_include_exclude_and_rule_chain_name_list():
    assert names(None, {"type": "include", "includedTools": ["get-forecast", "raw"]}) == [
        "get-forecast",
        "raw",
    ]
    assert names(None, {"type": "exclude", "excludedTools": ["delete-file"]}) == [
        "get-current-weather",
        "get-forecast",
        "raw",
    ]
    assert names(["delete-file", "get-forecast"]) == ["get-forecast", "delete-file"]  # server order
    assert names(None, {"type": "include"}) == []  # include nothing
    assert names(None, {"type": "exclude"}) == [t["name"] for t in TOOLS]


def test_listing_a_tool_the_server_lacks_is_logged(caplog):
    with caplog.at_level(logging.WARNING, logger="chainreact.tools.mcp"):
        assert names(["get-forecast", "nope"]) == ["get-forecast"]
    assert "'nope'" in caplog.text and "tools[mcp 'w']" in caplog.text


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        # per-tool predicates: `.` is one {name, description}
        ('.name | startswith("get-")', ["get-current-weather", "get-forecast"]),
        ('.description | test("weather|forecast"; "i")', ["get-current-weather", "get-forecast"]),
        ('.name == "raw"', ["raw"]),
        ('select(.name | contains("file"))', ["delete-file"]),  # select passes the object through
        (".name | length", []),  # numbers are not `true`
        ("true", [t["name"] for t in TOOLS]),
        ("false", []),
        # list forms: `.` is the whole list
        ('map(select(.name | startswith("get-")))', ["get-current-weather", "get-forecast"]),
        ('[.[] | select(.description == "") | .name]', ["raw"]),
        ('.[] | select(.name | endswith("forecast"))', ["get-forecast"]),
        ('map(.name != "delete-file")', ["get-current-weather", "get-forecast", "raw"]),  # boolean mask
        ("[]", []),
    ],
)
def test_jq_expression_semantics(expr, expected):
    assert names(None, {"type": "expression", "expression": expr}) == expected


def test_jq_runtime_error_names_the_expression_and_tool():
    with pytest.raises(ConfigError) as ei:
        names(None, {"type": "expression", "expression": ".name | tonumber > 1"})
    msg = str(ei.value)
    assert "toolFilter.expression" in msg and "'get-current-weather'" in msg


def test_jq_syntax_error_fails_when_the_descriptor_is_parsed():
    with pytest.raises(ConfigError, match="invalid jq expression"):
        parse_filter(None, {"type": "expression", "expression": "map(select(.name"}, "w")
