from __future__ import annotations

import os
from pathlib import Path

import pytest

from chainreact.errors import ConfigError
from chainreact.tools.builtin.files import ReadTool
from chainreact.tools.builtin.workspace import PathEscapeError, Workspace, workspace_from_config
from chainreact.tools.registry import create_builtin


def test_resolves_relative_and_inside_absolute(ws: Path) -> None:
    w = Workspace(ws)
    assert w.resolve("a/b.txt") == ws / "a" / "b.txt"
    assert w.resolve(str(ws / "x.txt")) == ws / "x.txt"
    assert w.resolve(".") == ws
    assert w.rel(ws / "a" / "b.txt") == "a/b.txt"
    assert w.rel(ws) == "."


@pytest.mark.parametrize("bad", ["../x", "/etc/passwd", "a/../../x", "~/x", "~", "x\x00y", "", "a" * 5000,
                                 "b" * 300 + "/x"])
def test_refuses_escapes_and_malformed(ws: Path, bad: str) -> None:
    with pytest.raises(PathEscapeError):
        Workspace(ws).resolve(bad)


def test_symlinks_are_resolved(ws: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (ws / "inner").mkdir()
    os.symlink(out, ws / "to_out")
    os.symlink(out / "missing.txt", ws / "dangling")
    os.symlink(ws / "inner", ws / "to_inner")
    w = Workspace(ws)
    for p in ["to_out", "to_out/new.txt", "dangling"]:
        with pytest.raises(PathEscapeError, match="outside the workspace"):
            w.resolve(p)
    # A link that stays inside is fine; not-yet-existing names below it resolve through it.
    assert w.resolve("to_inner/new.txt") == ws / "inner" / "new.txt"


def test_workspace_given_through_a_symlink(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    os.symlink(real, tmp_path / "alias")
    w = Workspace(tmp_path / "alias")
    assert w.resolve("f") == real / "f"
    assert w.resolve(str(tmp_path / "alias" / "f")) == real / "f"


def test_workdir_must_exist(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError, match=str(missing)):
        workspace_from_config({"workDir": str(missing)}, "read")
    assert not missing.exists()  # never created silently
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigError, match="not a directory"):
        workspace_from_config({"workDir": str(tmp_path / "file")}, "read")


def test_workdir_defaults_to_cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert workspace_from_config({}, "read").root == tmp_path.resolve()


def test_unknown_config_key_is_warned_and_a_bad_value_is_an_error(ws: Path) -> None:
    from chainreact.config import UnknownFieldWarning

    with pytest.warns(UnknownFieldWarning, match=r"tools\.bash\.config: unknown key\(s\) ignored: timout"):
        create_builtin("bash", {"workDir": str(ws), "timout": 5})
    with pytest.raises(ConfigError, match=r"tools\.read\.config\.maxLines: Input should be greater than"):
        create_builtin("read", {"workDir": str(ws), "maxLines": 0})


def test_registry_factories_and_descriptor_description(ws: Path) -> None:
    from chainreact.config import ToolDescriptor

    for name in ["bash", "read", "write", "edit", "grep", "glob"]:
        tool = create_builtin(name, {"workDir": str(ws)})
        assert tool.name == name
        assert tool.parameters["type"] == "object" and tool.description
    d = ToolDescriptor(name="read", description="Read project files.", config={"workDir": str(ws)})
    tool = create_builtin("read", d.config, d)
    assert isinstance(tool, ReadTool) and tool.description == "Read project files."
