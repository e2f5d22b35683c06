from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from chainreact.errors import ConfigError, ToolError
from chainreact.tools.base import ToolContext, ToolOutput
from chainreact.tools.registry import create_builtin
from chainreact.tools.skills import (
    BEGIN_MARK,
    END_MARK,
    SkillSet,
    SkillTool,
    create,
    inject_catalog,
    parse_skill_file,
)


def write_skill(root: Path, dirname: str, front: str | None, body: str = "Do the thing.\n") -> Path:
    d = root / dirname
    d.mkdir(parents=True, exist_ok=True)
    text = (f"---\n{front}\n---\n" if front is not None else "") + body
    (d / "SKILL.md").write_text(text, encoding="utf-8")
    return d


def bump_mtime(p: Path) -> None:
    # Make a change visible even on filesystems with coarse timestamps.
    st = p.stat()
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 2_000_000_000))


@pytest.fixture
def dirs(tmp_path: Path) -> tuple[Path, Path]:
    g, loc = tmp_path / "global", tmp_path / "local"
    write_skill(
        g, "pdf", "name: pdf\ndescription: Extract text and tables\n  from PDF files.", "# PDF\nUse x.py.\n"
    )
    write_skill(g, "git", "name: git\ndescription: Global git helper")
    write_skill(g, "old", "name: old\ndescription: Retired\nenabled: false")
    write_skill(loc, "git-local", "name: git\ndescription: Local git helper", "local body\n")
    write_skill(loc, "notes", "name: notes\ndescription: Take notes")
    (g / "pdf" / "scripts").mkdir()
    (g / "pdf" / "scripts" / "extract.py").write_text("print(1)\n")
    (g / "not-a-skill").mkdir()  # no SKILL.md: ignored
    return g, loc


def test_parse_skill_file(dirs: tuple[Path, Path]) -> None:
    g, _ = dirs
    s = parse_skill_file(g / "pdf" / "SKILL.md")
    assert s.name == "pdf"
    assert s.description == "Extract text and tables from PDF files."
    assert s.body == "# PDF\nUse x.py.\n"
    assert s.base_dir == (g / "pdf").resolve()
    assert s.path == (g / "pdf" / "SKILL.md").resolve()
    assert s.enabled


def test_no_frontmatter_uses_dir_name(tmp_path: Path) -> None:
    write_skill(tmp_path, "plain", None, "Just a body.\n")
    s = parse_skill_file(tmp_path / "plain" / "SKILL.md")
    assert (s.name, s.description, s.body) == ("plain", "", "Just a body.\n")


def test_catalog_precedence_and_filters(dirs: tuple[Path, Path]) -> None:
    g, loc = dirs
    ss = SkillSet([g], [loc])
    assert ss.names() == ["git", "notes", "pdf"]  # 'old' is disabled in its frontmatter
    assert ss.get("git").description == "Local git helper"  # local wins
    assert ss.get("git").body == "local body\n"

    ss = SkillSet([g], [loc], disabled=["notes"])
    assert ss.names() == ["git", "pdf"]
    with pytest.raises(ToolError, match="disabled"):
        ss.get("notes")

    ss = SkillSet([g], [loc], allow=["pdf", "old"])
    assert ss.names() == ["pdf"]  # the allowlist does not re-enable a disabled skill

    ss = SkillSet.from_agent(str(g), ["git"])
    assert [s.description for s in ss.catalog()] == ["Global git helper"]


def test_get_unknown_lists_available(dirs: tuple[Path, Path]) -> None:
    g, loc = dirs
    with pytest.raises(ToolError) as ei:
        SkillSet([g], [loc]).get("nope")
    assert "'nope'" in str(ei.value) and "git, notes, pdf" in str(ei.value)


def test_missing_dirs_are_empty(tmp_path: Path) -> None:
    assert SkillSet([tmp_path / "nowhere"]).catalog() == []


def test_bad_frontmatter_is_skipped_with_warning(
    dirs: tuple[Path, Path], caplog: pytest.LogCaptureFixture
) -> None:
    g, loc = dirs
    bad = write_skill(loc, "broken", "name: broken\ndescription: [unclosed")
    unclosed = loc / "unclosed"
    unclosed.mkdir()
    (unclosed / "SKILL.md").write_text("---\nname: unclosed\nbody without end\n", encoding="utf-8")
    write_skill(loc, "listy", "- a\n- b")
    write_skill(loc, "typed", "name: typed\nenabled: maybe")
    with caplog.at_level(logging.WARNING, logger="chainreact.tools.skills"):
        ss = SkillSet([g], [loc])
        assert ss.names() == ["git", "notes", "pdf"]
    problems = "\n".join(ss.problems)
    assert str(bad / "SKILL.md") in problems and "invalid YAML" in problems
    assert "never closed" in problems
    assert "must be a mapping" in problems
    assert "'enabled' must be a bool" in problems
    assert len(ss.problems) == 4
    assert any(str(bad / "SKILL.md") in r.getMessage() for r in caplog.records)


def test_changes_are_picked_up_without_restart(dirs: tuple[Path, Path]) -> None:
    g, loc = dirs
    ss = SkillSet([g], [loc])
    assert ss.names() == ["git", "notes", "pdf"]

    # a new skill directory
    write_skill(loc, "deploy", "name: deploy\ndescription: Ship it")
    bump_mtime(loc)
    assert "deploy" in ss.names()

    # an edited SKILL.md
    f = g / "pdf" / "SKILL.md"
    f.write_text("---\nname: pdf\ndescription: Changed description\n---\nnew body\n", encoding="utf-8")
    bump_mtime(f)
    assert ss.get("pdf").description == "Changed description"
    assert ss.get("pdf").body == "new body\n"

    # SKILL.md created inside an existing (previously ignored) directory
    (g / "not-a-skill" / "SKILL.md").write_text("---\nname: late\n---\nx\n", encoding="utf-8")
    bump_mtime(g / "not-a-skill")
    assert "late" in ss.names()

    # disabling through the frontmatter
    f2 = loc / "notes" / "SKILL.md"
    f2.write_text("---\nname: notes\nenabled: false\n---\n", encoding="utf-8")
    bump_mtime(f2)
    assert "notes" not in ss.names()

    # a removed skill
    (loc / "deploy" / "SKILL.md").unlink()
    bump_mtime(loc / "deploy")
    assert "deploy" not in ss.names()


def test_inject_catalog_replaces_block(dirs: tuple[Path, Path]) -> None:
    g, loc = dirs
    ss = SkillSet([g], [loc])
    once = inject_catalog("You are helpful.", ss)
    assert once.startswith("You are helpful.\n\n" + BEGIN_MARK)
    assert once.endswith(END_MARK)
    assert "- pdf: Extract text and tables from PDF files." in once
    assert "- git: Local git helper" in once
    assert "old" not in once.split(BEGIN_MARK)[1]
    assert "`skill` tool" in once
    twice = inject_catalog(once, ss)
    assert twice == once
    assert twice.count(BEGIN_MARK) == 1

    # the block is replaced in place, text after it is kept
    edited = once + "\nMore rules."
    write_skill(loc, "extra", "name: extra\ndescription: Extra skill")
    bump_mtime(loc)
    again = inject_catalog(edited, ss)
    assert again.count(BEGIN_MARK) == 1 and "- extra: Extra skill" in again
    assert again.endswith(END_MARK + "\nMore rules.")


def test_inject_catalog_without_skills(tmp_path: Path, dirs: tuple[Path, Path]) -> None:
    empty = SkillSet([tmp_path / "none"])
    assert inject_catalog("Prompt.", empty) == "Prompt."
    full = inject_catalog("Prompt.", SkillSet([dirs[0]]))
    assert inject_catalog(full, empty) == "Prompt."  # block removed when the skills are gone
    assert inject_catalog("", SkillSet([dirs[0]])).startswith(BEGIN_MARK)


async def test_skill_tool(dirs: tuple[Path, Path]) -> None:
    g, loc = dirs
    tool = create({"globalDirs": [str(g)], "localDirs": [str(loc)], "disabledSkills": ["notes"]}, None)
    assert isinstance(tool, SkillTool)
    assert tool.name == "skill"
    assert "pdf: Extract text" in tool.description and "notes" not in tool.description
    spec = tool.spec()
    assert spec["function"]["parameters"]["required"] == ["name"]
    assert spec["function"]["description"] == tool.description

    out = await tool.run({"name": "pdf"}, ToolContext())
    assert isinstance(out, str)
    base = str((g / "pdf").resolve())
    assert f"Base directory: {base}" in out
    assert "# PDF\nUse x.py." in out
    assert "- scripts/extract.py" in out
    assert "SKILL.md" not in out.split("Files:")[1].split("# PDF")[0]

    err = await tool.run({"name": "notes"}, ToolContext())
    assert isinstance(err, ToolOutput) and err.is_error
    assert err.content.startswith("Error: unknown skill 'notes'") and "git, pdf" in err.content

    err = await tool.run({}, ToolContext())
    assert isinstance(err, ToolOutput) and err.is_error and "required" in err.content


async def test_skill_tool_description_follows_changes(dirs: tuple[Path, Path]) -> None:
    g, _ = dirs
    tool = create({"globalDirs": [str(g)]}, None)
    assert "deploy" not in tool.description
    write_skill(g, "deploy", "name: deploy\ndescription: Ship it")
    bump_mtime(g)
    assert "deploy: Ship it" in tool.description
    out = await tool.run({"name": "deploy"}, ToolContext())
    assert isinstance(out, str) and "Do the thing." in out


def test_registry_creates_skill_tool(dirs: tuple[Path, Path]) -> None:
    tool = create_builtin("skill", {"localDirs": str(dirs[1])})
    assert isinstance(tool, SkillTool)
    assert tool.skills.names() == ["git", "notes"]


def test_bad_config_names_field() -> None:
    with pytest.raises(ConfigError, match="globalDirs"):
        create({"globalDirs": [1, 2]}, None)
    with pytest.raises(ConfigError, match="disabledSkills"):
        create({"disabledSkills": {"a": 1}}, None)


# --- names YAML 1.1 reads as booleans (issue 9 item 8) -----------------------------------------------------

@pytest.mark.parametrize("word", ["yes", "no", "on", "off", "Yes", "OFF"])
def test_skill_named_like_a_yaml_boolean_loads_as_a_name(tmp_path: Path, word: str) -> None:
    d = write_skill(tmp_path, "d", f"name: {word}\ndescription: A word\nenabled: yes")
    s = parse_skill_file(d / "SKILL.md")
    assert (s.name, s.enabled) == (word, True)
    assert SkillSet([tmp_path], allow=[word]).names() == [word]


@pytest.mark.parametrize(("value", "enabled"), [("no", False), ("off", False), ("On", True), ("true", True),
                                                ("false", False)])
def test_enabled_keeps_its_yaml_meaning(tmp_path: Path, value: str, enabled: bool) -> None:
    d = write_skill(tmp_path, "d", f"name: n\nenabled: {value}")
    assert parse_skill_file(d / "SKILL.md").enabled is enabled


def test_name_true_or_number_is_an_error_saying_quote_it(tmp_path: Path) -> None:
    from chainreact.tools.skills import SkillParseError

    d = write_skill(tmp_path, "d", "name: true")
    with pytest.raises(SkillParseError, match=r"'name' must be a str, got bool \(quote it\)"):
        parse_skill_file(d / "SKILL.md")


def test_skills_list_read_as_booleans_is_a_clear_error() -> None:
    with pytest.raises(ConfigError, match=r"skill\.config\.skills: .*read as a boolean: quote it"):
        create({"skills": [True, "git"]}, None)


def test_load_yaml_keeps_yes_no_on_off_as_strings() -> None:
    from chainreact.yamlutil import load_yaml

    assert load_yaml("a: [yes, no, on, off, true, False, 1, 1.5, null]") == {
        "a": ["yes", "no", "on", "off", True, False, 1, 1.5, None]}
