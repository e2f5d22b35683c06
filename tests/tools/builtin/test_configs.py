"""Typed builtin configs (issue 9 items 10 and 16): JSON paths in errors, unknown keys warned, RuleGo's
keys honoured or warned about with a reason, JSON Schema per tool."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest

from chainreact.config import UnknownFieldWarning
from chainreact.errors import ConfigError
from chainreact.tools.builtin.configs import IgnoredConfigWarning, builtin_config_schemas
from chainreact.tools.registry import create_builtin

from .conftest import call


def test_errors_name_every_bad_field_with_its_path(ws: Path) -> None:
    with pytest.raises(ConfigError) as info:
        create_builtin("bash", {"workDir": str(ws), "timeout": True, "allow": [1], "env": {"A": 1},
                                "mode": "strict"})
    paths = dict(info.value.errors)
    assert set(paths) == {"tools.bash.config.timeout", "tools.bash.config.allow.0",
                          "tools.bash.config.env.A", "tools.bash.config.mode"}
    assert "not true/false" in paths["tools.bash.config.timeout"]
    with pytest.raises(ConfigError, match=r"tools\.grep\.config\.maxResults: .*got 'many'"):
        create_builtin("grep", {"workDir": str(ws), "maxResults": "many"})
    with pytest.raises(ConfigError, match=r"tools\.write\.config\.backups"):
        create_builtin("write", {"workDir": str(ws), "backups": "yes"})


def test_valid_configs_raise_no_warning(ws: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for name, config in [("read", {"maxLines": 10}), ("write", {"backups": False}), ("edit", {}),
                             ("grep", {"maxResults": 5, "timeout": 1000}), ("glob", {"hardMaxLimit": 9}),
                             ("bash", {"timeout": 5000, "sandbox": "off", "allow": "ls"})]:
            create_builtin(name, {"workDir": str(ws), **config})


async def test_rulego_bash_keys_are_honoured(ws: Path) -> None:
    bash = create_builtin("bash", {"workDir": str(ws), "sandbox": "off", "maxOutputSize": 200,
                                   "denyArgs": ["-rf /", "/dev/sd"], "shellPath": "/bin/sh"})
    text, err = await call(bash, command="seq 1 10000")
    assert "output truncated" in text and len(text) < 600  # maxOutputSize became the output budget
    text, err = await call(bash, command="echo x -rf / y")
    assert err and "denied argument pattern '-rf /'" in text
    text, err = await call(bash, command="cat /dev/sda1")
    assert err and "'/dev/sd'" in text
    text, err = await call(bash, command="echo rm -rf /home/x")  # `-rf /` only as a whole argument
    assert not err
    text, _ = await call(bash, command="echo $0")
    assert "/bin/sh" in text or "dash" in text  # shellPath ran the command
    with pytest.warns(IgnoredConfigWarning, match="mode is \"deny\", so the allow list is not enforced"):
        deny_mode = create_builtin("bash", {"workDir": str(ws), "sandbox": "off", "mode": "deny",
                                            "allow": ["ls"]})
    text, err = await call(deny_mode, command="echo not-in-allow-list")
    assert not err and "not-in-allow-list" in text
    with pytest.raises(ConfigError, match="shellPath"):
        create_builtin("bash", {"workDir": str(ws), "shellPath": "/no/such/shell"})
    with pytest.warns(IgnoredConfigWarning, match="milliseconds"):
        create_builtin("bash", {"workDir": str(ws), "sandbox": "off", "timeout": 60})


async def test_rulego_file_tool_keys(ws: Path) -> None:
    (ws / "f.txt").write_text("".join(f"{i}\n" for i in range(1, 11)))
    read = create_builtin("read", {"workDir": str(ws), "maxReadLines": 3})
    text, _ = await call(read, path="f.txt")
    assert "(lines 1-3 of 10)" in text
    with pytest.warns(IgnoredConfigWarning, match="maxSearchResults: chainreact's read tool does not search"):
        create_builtin("read", {"workDir": str(ws), "maxSearchResults": 5})
    write = create_builtin("write", {"workDir": str(ws), "maxFileSize": 10})
    text, err = await call(write, path="big.txt", content="x" * 11)
    assert err and "at most 10" in text and not (ws / "big.txt").exists()
    edit = create_builtin("edit", {"workDir": str(ws), "maxHistory": 2})
    assert edit.backups.keep == 2  # type: ignore[attr-defined]
    grep = create_builtin("grep", {"workDir": str(ws), "maxResults": 2, "hardMaxLimit": 4})
    text, _ = await call(grep, pattern="[0-9]")
    assert text.startswith("First 2 matches")
    text, _ = await call(grep, pattern="[0-9]", max_results=100)
    assert text.startswith("First 4 matches")


def test_unknown_keys_warn_once_per_config(ws: Path) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        create_builtin("glob", {"workDir": str(ws), "maxResult": 3, "pattern": "*"})
    unknown = [w for w in caught if issubclass(w.category, UnknownFieldWarning)]
    assert len(unknown) == 1 and "maxResult, pattern" in str(unknown[0].message)


def test_json_schemas() -> None:
    schemas = builtin_config_schemas()
    assert set(schemas) == {"bash", "read", "write", "edit", "grep", "glob"}
    bash = schemas["bash"]["properties"]
    assert bash["sandbox"]["enum"] == ["auto", "bwrap", "off"]
    assert {"denyArgs", "shellPath", "maxOutputSize", "mode", "workDir"} <= set(bash)
    assert schemas["grep"]["properties"]["maxResults"]["minimum"] == 1


def test_builtin_configs_are_in_the_document_schema() -> None:
    import jsonschema

    from chainreact.tools.descriptors import document_json_schema

    schema = document_json_schema()
    assert {"BashConfig", "ReadConfig", "GrepConfig"} <= set(schema["$defs"])
    good = {"url": "http://127.0.0.1:1/v1", "model": "m",
            "tools": [{"type": "builtin", "name": "bash", "config": {"sandbox": "bwrap", "timeout": 60000}},
                      {"name": "grep", "config": {"maxResults": 5}}, "read"]}
    jsonschema.validate(good, schema)
    for bad in ({"type": "builtin", "name": "bash", "config": {"sandbox": "on"}},
                {"name": "grep", "config": {"maxResults": 0}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**good, "tools": [bad]}, schema)
