"""Skills: `<dir>/<name>/SKILL.md` files (YAML frontmatter + markdown) the model loads on demand.

The system prompt carries only a catalog (name + description of each skill, see `inject_catalog`); the
`skill` tool returns a skill's full body and its directory when the model asks for it. Skill files are
re-read when they change (a few `stat` calls per access), so editing a skill needs no restart.

Sources, in increasing precedence on duplicate names: global dirs, then local dirs (and within each group,
later dirs win). A skill is listed when it is enabled (frontmatter `enabled`, default true), not in the
disabled list, and in the allowlist when one is given. A SKILL.md that cannot be parsed is skipped with a
warning naming the file; it never stops the agent.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ToolError
from .base import Tool, ToolContext, ToolOutput

__all__ = ["Skill", "SkillSet", "SkillTool", "create", "inject_catalog", "parse_skill_file"]

log = logging.getLogger("chainreact.tools.skills")

SKILL_FILE = "SKILL.md"
BEGIN_MARK = "<!-- chainreact:skills -->"
END_MARK = "<!-- /chainreact:skills -->"
_BLOCK = re.compile(re.escape(BEGIN_MARK) + r".*?" + re.escape(END_MARK), re.S)
_BLOCK_WITH_GAP = re.compile(r"\n*" + _BLOCK.pattern, re.S)
_MAX_LISTED_FILES = 50


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    body: str
    base_dir: Path  # the skill's directory: files the body mentions are relative to it
    path: Path  # the SKILL.md file
    enabled: bool = True
    meta: dict[str, Any] = field(default_factory=dict)  # the whole frontmatter


class SkillParseError(ConfigError):
    """A SKILL.md whose frontmatter cannot be read."""


def parse_skill_file(path: Path) -> Skill:
    """Read one SKILL.md. Raises SkillParseError naming the file when the frontmatter is invalid."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as e:
        msg = f"{path}: not UTF-8 text ({e.reason} at byte {e.start})"
        raise SkillParseError(msg, source=str(path)) from None
    meta: dict[str, Any] = {}
    body = text
    lines = text.splitlines(keepends=True)
    if lines and lines[0].rstrip() == "---":
        end = next((i for i in range(1, len(lines)) if lines[i].rstrip() in ("---", "...")), None)
        if end is None:
            raise SkillParseError(
                f"{path}: the frontmatter opened by '---' on line 1 is never closed (add a '---' line)",
                source=str(path),
            )
        import yaml

        from ..yamlutil import load_yaml

        try:
            # YAML 1.2 booleans: a skill named `no`, `on` or `yes` is a name, as in RuleGo (Go yaml.v3).
            loaded = load_yaml("".join(lines[1:end]))
        except yaml.YAMLError as e:
            mark = getattr(e, "problem_mark", None)
            where = f" (line {mark.line + 2})" if mark is not None else ""
            problem = getattr(e, "problem", None) or str(e)
            msg = f"{path}: invalid YAML frontmatter{where}: {problem}"
            raise SkillParseError(msg, source=str(path)) from None
        if loaded is None:
            loaded = {}
        if not isinstance(loaded, dict):
            raise SkillParseError(
                f"{path}: frontmatter must be a mapping (name: ..., description: ...), "
                f"got {type(loaded).__name__}",
                source=str(path),
            )
        meta = loaded
        body = "".join(lines[end + 1 :]).lstrip("\r\n")
    name = meta.get("name", path.parent.name)
    description = meta.get("description", "")
    enabled = meta.get("enabled", True)
    if meta and not isinstance(enabled, bool):
        from ..yamlutil import as_bool

        enabled = as_bool(enabled)  # `enabled: yes` / `off` keep their YAML 1.1 meaning
    checks: tuple[tuple[str, Any, type], ...] = (
        ("name", name, str), ("description", description, str), ("enabled", enabled, bool)
    )
    for key, value, typ in checks:
        if not isinstance(value, typ):
            raise SkillParseError(
                f"{path}: frontmatter field {key!r} must be a {typ.__name__}, got {type(value).__name__}"
                + (" (quote it)" if key == "name" else ""),
                source=str(path),
            )
    name = name.strip()
    if not name or any(c.isspace() for c in name):
        msg = f"{path}: skill name {name!r} must be non-empty and without spaces"
        raise SkillParseError(msg, source=str(path))
    return Skill(
        name=name,
        description=" ".join(description.split()),
        body=body,
        base_dir=path.parent.resolve(),
        path=path.resolve(),
        enabled=enabled,
        meta=meta,
    )


def _as_dirs(value: Any, where: str) -> list[Path]:
    if value is None or value == "":
        return []
    if isinstance(value, str | os.PathLike):
        return [Path(value).expanduser()]
    if isinstance(value, list | tuple) and all(isinstance(v, str | os.PathLike) for v in value):
        return [Path(v).expanduser() for v in value if v != ""]
    raise ConfigError(f"{where}: expected a directory path or a list of them, got {value!r}",
                      errors=[(where, "expected a list of directory paths")])


def _as_names(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [value]
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return list(value)
    if isinstance(value, list | tuple) and any(isinstance(v, bool) for v in value):
        # A YAML 1.1 reader made `yes`/`no`/`on`/`off` booleans; the word itself is lost by now.
        raise ConfigError(f"{where}: skill names must be strings, got {value!r}; a name like yes, no, on "
                          "or off was read as a boolean: quote it",
                          errors=[(where, "a name read as boolean")])
    raise ConfigError(f"{where}: expected a list of skill names, got {value!r}",
                      errors=[(where, "expected a list of skill names")])


class SkillSet:
    """The skills of some directories, filtered, reloaded when their files change."""

    def __init__(
        self,
        global_dirs: Iterable[str | os.PathLike[str]] = (),
        local_dirs: Iterable[str | os.PathLike[str]] = (),
        *,
        allow: Iterable[str] | None = None,
        disabled: Iterable[str] = (),
    ):
        self.dirs: tuple[Path, ...] = tuple(Path(d).expanduser() for d in (*global_dirs, *local_dirs))
        self.allow: frozenset[str] | None = frozenset(allow) if allow else None  # empty = all
        self.disabled: frozenset[str] = frozenset(disabled)
        self.problems: list[str] = []  # messages about skipped SKILL.md files, from the last scan
        self._lock = threading.Lock()
        self._signature: tuple[Any, ...] | None = None
        self._watched: list[Path] = []  # skill subdirectories seen in the last scan
        self._all: dict[str, Skill] = {}

    @classmethod
    def from_agent(cls, skills_dir: str, skills: Sequence[str] = ()) -> SkillSet:
        """From an agent config's `skillsDir` and `skills` allowlist."""
        return cls([skills_dir] if skills_dir else [], allow=skills)

    @classmethod
    def from_config(cls, config: dict[str, Any], where: str = "skill.config") -> SkillSet:
        """From the `skill` builtin's config: globalDirs, localDirs, disabledSkills, skills (allowlist)."""
        return cls(
            _as_dirs(config.get("globalDirs"), f"{where}.globalDirs"),
            _as_dirs(config.get("localDirs"), f"{where}.localDirs"),
            allow=_as_names(config.get("skills"), f"{where}.skills"),
            disabled=_as_names(config.get("disabledSkills"), f"{where}.disabledSkills"),
        )

    # --- change detection ---

    def _current_signature(self) -> tuple[Any, ...]:
        sig: list[Any] = []
        for d in self.dirs:
            sig.append(_stamp(d))
        for sub in self._watched:
            sig.append(_stamp(sub))
            sig.append(_stamp(sub / SKILL_FILE))
        return tuple(sig)

    def _refresh(self) -> None:
        with self._lock:
            if self._signature is not None and self._current_signature() == self._signature:
                return
            self._scan()
            self._signature = self._current_signature()

    def _scan(self) -> None:
        found: dict[str, Skill] = {}
        problems: list[str] = []
        watched: list[Path] = []
        for d in self.dirs:
            try:
                entries = sorted(os.scandir(d), key=lambda e: e.name)
            except FileNotFoundError:
                continue
            except NotADirectoryError:
                problems.append(f"{d}: is not a directory")
                continue
            for entry in entries:
                if not entry.is_dir() or entry.name.startswith("."):
                    continue
                sub = Path(entry.path)
                watched.append(sub)
                f = sub / SKILL_FILE
                if not f.is_file():
                    continue
                try:
                    skill = parse_skill_file(f)
                except (SkillParseError, OSError) as e:
                    problems.append(str(e))
                    continue
                found[skill.name] = skill  # later dirs (local) override earlier ones (global)
        for msg in problems:
            if msg not in self.problems:
                log.warning("skill skipped: %s", msg)
        self.problems = problems
        self._watched = watched
        self._all = found

    # --- queries ---

    def _visible(self, s: Skill) -> bool:
        return s.enabled and s.name not in self.disabled and (self.allow is None or s.name in self.allow)

    def catalog(self) -> list[Skill]:
        """The usable skills, sorted by name."""
        self._refresh()
        return sorted((s for s in self._all.values() if self._visible(s)), key=lambda s: s.name)

    def names(self) -> list[str]:
        return [s.name for s in self.catalog()]

    def get(self, name: str) -> Skill:
        """The skill called `name`; ToolError listing the available names if there is none (or it is off)."""
        self._refresh()
        s = self._all.get(name)
        if s is None or not self._visible(s):
            avail = ", ".join(self.names()) or "none"
            why = " (it is disabled)" if s is not None else ""
            raise ToolError(f"unknown skill {name!r}{why}; available skills: {avail}")
        return s

    def __len__(self) -> int:
        return len(self.catalog())


def _stamp(p: Path) -> tuple[int, int] | None:
    try:
        st = p.stat()
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


def render_catalog(skills: Iterable[Skill]) -> str:
    lines = [
        "## Skills",
        "Skills are instructions for specialised tasks. When a task matches a skill below, call the "
        '`skill` tool with {"name": "<skill name>"} to load its full instructions before you start, '
        "then follow them.",
        "",
    ]
    lines += [f"- {s.name}: {s.description}" if s.description else f"- {s.name}" for s in skills]
    return "\n".join(lines)


def inject_catalog(system_prompt: str, skills: SkillSet) -> str:
    """Put the skill catalog into `system_prompt` between markers, replacing an earlier catalog block
    (so calling it on every run never stacks copies). With no usable skills the block is removed."""
    catalog = skills.catalog()
    block = f"{BEGIN_MARK}\n{render_catalog(catalog)}\n{END_MARK}" if catalog else ""
    if _BLOCK.search(system_prompt):
        if block:
            return _BLOCK.sub(lambda _m: block, system_prompt, count=1)
        return _BLOCK_WITH_GAP.sub("", system_prompt, count=1)
    if not block:
        return system_prompt
    if not system_prompt.strip():
        return block
    return system_prompt.rstrip("\n") + "\n\n" + block


def _list_files(base: Path) -> tuple[list[str], bool]:
    out: list[str] = []
    for root, dirs, files in os.walk(base):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for f in sorted(files):
            if f.startswith(".") or (root == str(base) and f == SKILL_FILE):
                continue
            out.append(os.path.relpath(os.path.join(root, f), base))
            if len(out) >= _MAX_LISTED_FILES:
                return out, True
    return out, False


class SkillTool(Tool):
    """The `skill` builtin: load a skill's instructions by name."""

    def __init__(self, skills: SkillSet, name: str = "skill"):
        self.skills = skills
        self.name = name
        self.parameters = {
            "type": "object",
            "properties": {"name": {"type": "string", "description": "The name of the skill to load."}},
            "required": ["name"],
        }
        self._description: str | None = None

    @property
    def description(self) -> str:
        # Computed on access so that new or edited skills show up without a restart.
        if self._description is not None:
            return self._description
        catalog = self.skills.catalog()
        head = "Load a skill: returns its instructions and its directory (its files are relative to it)."
        if not catalog:
            return head + " No skills are installed."
        items = "; ".join(
            f"{s.name}: {_clip(s.description, 80)}" if s.description else s.name for s in catalog
        )
        return f"{head} Available: {_clip(items, 1500)}"

    @description.setter
    def description(self, value: str) -> None:
        self._description = value

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str | ToolOutput:
        name = args.get("name")
        if not isinstance(name, str) or not name.strip():
            avail = ", ".join(self.skills.names()) or "none"
            return ToolOutput(f"Error: argument 'name' (a skill name) is required; available skills: {avail}",
                              is_error=True)
        # File system work (stat, scan, walk) off the event loop.
        return await asyncio.to_thread(self._load, name.strip())

    def _load(self, name: str) -> str | ToolOutput:
        try:
            skill = self.skills.get(name)
        except ToolError as e:
            return ToolOutput(f"Error: {e}", is_error=True)
        files, cut = _list_files(skill.base_dir)
        parts = [f'<skill name="{skill.name}" base_dir="{skill.base_dir}">']
        parts.append(f"Base directory: {skill.base_dir}\n"
                     "Relative paths in this skill refer to files in that directory.")
        if files:
            listing = "\n".join(f"- {f}" for f in files)
            more = f"\n- ... (more files; listing stopped at {_MAX_LISTED_FILES})" if cut else ""
            parts.append(f"Files:\n{listing}{more}")
        parts.append(skill.body.rstrip())
        parts.append("</skill>")
        return "\n\n".join(parts)


def _clip(s: str, n: int) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


def create(config: dict[str, Any], descriptor: Any = None) -> Tool:
    """Factory for the `skill` builtin (registered in chainreact.tools.registry)."""
    where = "tools.skill.config"
    dname = getattr(descriptor, "name", None) if descriptor is not None else None
    if isinstance(dname, str) and dname:
        where = f"tools.{dname}.config"
    return SkillTool(SkillSet.from_config(config or {}, where))
