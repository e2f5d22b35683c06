"""Typed configuration of the builtin tools (the `config` object of a builtin tool descriptor).

One pydantic model per tool, validated like the agent document: errors name the JSON path
(`tools.bash.config.timeout: ...`), unknown keys are ignored with one `UnknownFieldWarning`, and
`builtin_config_schemas()` gives the JSON Schema of each. RuleGo's keys for the same tools are
accepted: honoured where chainreact can (`maxOutputSize`, `mode`, `denyArgs`, `shellPath`,
`maxReadLines`, `maxFileSize`, `maxHistory`, `hardMaxLimit`), else accepted with one
`IgnoredConfigWarning` that says why (`maxSearchResults`).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, ValidationError

from ...config import UnknownFieldWarning
from ...errors import ConfigError


class IgnoredConfigWarning(UserWarning):
    """A known key (often RuleGo's) that cannot apply in chainreact; the message says why."""


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise ValueError("expected a number, not true/false")
    return value


def _str_list(value: Any) -> Any:
    return [value] if isinstance(value, str) else value


Count = Annotated[int, Field(ge=1), BeforeValidator(_no_bool)]
Millis = Annotated[int, Field(ge=1, le=86_400_000), BeforeValidator(_no_bool)]
Strings = Annotated[list[Annotated[str, Field(min_length=1)]], BeforeValidator(_str_list)]


class BuiltinConfig(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    workDir: str | None = Field(None, description="Directory the tool is confined to (default: the current "
                                                  "directory). Must exist.")

    def notes(self) -> list[str]:
        """Why keys that were accepted cannot apply (one IgnoredConfigWarning lists them)."""
        return []


class ReadConfig(BuiltinConfig):
    maxLines: Count = Field(2000, description="Lines shown per call (and the cap of `limit`).")
    maxReadLines: Count | None = Field(None, description="RuleGo's name for maxLines.")
    maxLineLength: Count = Field(2000, description="Characters shown of one line.")
    maxOutput: Count = Field(100_000, description="Characters of one result.")
    maxEntries: Count = Field(1000, description="Entries listed of one directory.")
    maxSearchResults: Count | None = Field(None, description="RuleGo's read-tool search; not applicable.")

    def lines(self) -> int:
        return self.maxReadLines if self.maxReadLines is not None and "maxLines" not in \
            self.model_fields_set else self.maxLines

    def notes(self) -> list[str]:
        if self.maxSearchResults is not None:
            return ["maxSearchResults: chainreact's read tool does not search (use the grep tool and its "
                    "maxResults)"]
        return []


class WriteConfig(BuiltinConfig):
    backups: StrictBool = Field(True, description="Keep a backup before overwriting (undo with edit).")
    maxBackups: Count = Field(20, description="Backups kept per file.")
    maxFileSize: Annotated[int, Field(ge=0), BeforeValidator(_no_bool)] = Field(
        0, description="Largest content one write may have, in bytes (RuleGo); 0 = no limit.")


class EditConfig(BuiltinConfig):
    backups: StrictBool = Field(True, description="Keep a backup before each edit (undo).")
    maxBackups: Count = Field(20, description="Backups kept per file.")
    maxHistory: Count | None = Field(None, description="RuleGo's name for maxBackups.")

    def kept(self) -> int:
        return self.maxHistory if self.maxHistory is not None and "maxBackups" not in \
            self.model_fields_set else self.maxBackups


class SearchConfig(BuiltinConfig):
    timeout: Millis = Field(30_000, description="Milliseconds; the search stops there (results so far).")
    hardMaxLimit: Count | None = Field(None, description="Cap of the model's max_results (RuleGo); "
                                                         "default: maxResults.")


class GrepConfig(SearchConfig):
    maxResults: Count = Field(200, description="Matches shown by default.")
    maxFileSize: Count = Field(10 * 1024 * 1024, description="Larger files are skipped (bytes).")


class GlobConfig(SearchConfig):
    maxResults: Count = Field(500, description="Paths listed by default.")


class BashConfig(BuiltinConfig):
    timeout: Millis | None = Field(None, description="Milliseconds per command (default: the descriptor's "
                                                     "timeout, else 60000).")
    maxOutput: Count | None = Field(None, description="Characters of output (stdout and stderr share it); "
                                                      "at least 100; default 30000.")
    maxOutputSize: Count | None = Field(None, description="RuleGo's output cap in bytes; used as maxOutput.")
    allow: Strings = Field(default_factory=list, description="When set, every command must match an entry.")
    deny: Strings = Field(default_factory=list, description="Refused in addition to the default rules.")
    defaultDeny: StrictBool = Field(True, description="Apply the default deny rules.")
    mode: Literal["allow", "deny"] = Field("allow", description="RuleGo: `allow` enforces the allow list "
                                                                "when it is set; `deny` ignores it.")
    denyArgs: Strings = Field(default_factory=list, description="RuleGo: text that refuses a command line "
                                                                "containing it (`-rf /`, `/dev/sd`).")
    shellPath: str | None = Field(None, description="The shell run with -c (default /bin/bash; RuleGo).")
    env: dict[str, str] = Field(default_factory=dict, description="Extra environment variables.")
    sandbox: Literal["auto", "bwrap", "off"] = Field("auto", description="The OS sandbox (bubblewrap).")
    network: StrictBool = Field(False, description="Keep the network inside the sandbox.")
    readOnlyPaths: Strings = Field(default_factory=list, description="Extra read-only paths in the sandbox.")
    writablePaths: Strings = Field(default_factory=list, description="Extra writable paths in the sandbox.")
    maxProcesses: Annotated[int, Field(ge=0), BeforeValidator(_no_bool)] = Field(
        1024, description="Processes (and, with a pids cgroup, threads) one call may have; past it the call "
                          "is killed. 0: no limit.")
    maxTmpSize: Annotated[int, Field(ge=0), BeforeValidator(_no_bool)] = Field(
        512 << 20, description="Bytes the sandbox's /tmp (memory) may hold. 0: the kernel's default, half "
                               "the memory.")

    def output_budget(self) -> int:
        if self.maxOutput is not None:
            return self.maxOutput
        return self.maxOutputSize if self.maxOutputSize is not None else 30_000

    def notes(self) -> list[str]:
        out = []
        if self.maxOutput is not None and self.maxOutputSize is not None:
            out.append("maxOutputSize: maxOutput is set too and wins")
        if self.mode == "deny" and self.allow:
            out.append("allow: mode is \"deny\", so the allow list is not enforced")
        return out


MODELS: dict[str, type[BuiltinConfig]] = {
    "read": ReadConfig, "write": WriteConfig, "edit": EditConfig, "grep": GrepConfig, "glob": GlobConfig,
    "bash": BashConfig,
}
M = TypeVar("M", bound=BuiltinConfig)


def parse_config(model: type[M], config: Mapping[str, Any], tool: str) -> M:
    """Validate a builtin's config: ConfigError with JSON paths; unknown keys warned and ignored."""
    where = f"tools.{tool}.config"
    try:
        parsed = model.model_validate(dict(config))
    except ValidationError as e:
        errors = [(".".join([where, *map(str, err["loc"])]), _message(err)) for err in e.errors()]
        lines = "; ".join(f"{path}: {msg}" for path, msg in errors)
        raise ConfigError(f"{where}: invalid configuration ({len(errors)} error(s)): {lines}",
                          errors=errors) from None
    if parsed.model_extra:
        known = ", ".join(sorted(model.model_fields))
        warnings.warn(f"{where}: unknown key(s) ignored: {', '.join(sorted(parsed.model_extra))} "
                      f"(known: {known})", UnknownFieldWarning, stacklevel=3)
    notes = parsed.notes()
    if notes:
        warnings.warn(f"{where}: accepted but not applied: {'; '.join(notes)}", IgnoredConfigWarning,
                      stacklevel=3)
    return parsed


def _message(err: Any) -> str:
    msg = str(err.get("msg", "invalid")).removeprefix("Value error, ")
    if "input" in err and err["type"] not in ("missing",):
        msg += f" (got {_short(err['input'])})"
    return msg


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:60] + "…"


def builtin_config_schemas() -> dict[str, dict[str, Any]]:
    """The JSON Schema of each builtin tool's `config` object, by tool name."""
    return {name: model.model_json_schema() for name, model in MODELS.items()}


def expand_path(p: str) -> str:
    return os.path.realpath(os.path.expanduser(p))
