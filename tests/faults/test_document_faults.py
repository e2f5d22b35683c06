"""Bad documents, as an attacker or an unlucky user writes them (issue 10 item 6): each is refused at
load with a ConfigError naming the JSON path, never a crash, a hang or a silent acceptance."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from chainreact.config import load_document, parse_text
from chainreact.config.limits import MAX_DEPTH
from chainreact.errors import ConfigError, UsageError

ROOT = Path(__file__).resolve().parents[2]

# 359 bytes that stand for 9**9 (387 million) strings once the aliases are expanded.
ALIAS_BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]" for p, n in zip("abcdefgh", "bcdefghi", strict=True)),
        "systemPrompt: hi",
    ]
) + "\n"


def errors_of(text: str, name: str, tmp_path: Path) -> list[tuple[str, str]]:
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(ConfigError) as e:
        load_document(p)
    assert str(p) in str(e.value)
    return e.value.errors


def test_yaml_alias_bomb_is_refused_at_load(tmp_path: Path) -> None:
    assert len(ALIAS_BOMB) < 700
    errors = errors_of(ALIAS_BOMB, "bomb.yaml", tmp_path)
    assert "expands to more than" in errors[0][1]


def test_yaml_alias_bomb_fails_run_and_validate_cleanly(tmp_path: Path) -> None:
    p = tmp_path / "bomb.yaml"
    p.write_text(ALIAS_BOMB)
    for args in (["validate", str(p)], ["run", str(p), "hi"]):
        r = subprocess.run([sys.executable, "-m", "chainreact", *args], capture_output=True, text=True,
                           cwd=ROOT, timeout=60)
        assert r.returncode == 1, (args, r.stderr[-500:])
        assert "expands to more than" in r.stderr and "Traceback" not in r.stderr


def test_recursive_yaml_alias_is_refused(tmp_path: Path) -> None:
    errors = errors_of("systemPrompt: hi\nparams:\n  extraFields:\n    x: &x [1, *x]\n", "rec.yaml", tmp_path)
    assert errors[0][0] == "$.params.extraFields.x[1]" and "contains itself" in errors[0][1]


def test_a_dict_that_contains_itself_is_refused() -> None:
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(ConfigError, match="contains itself"):
        load_document({"systemPrompt": "hi", "params": {"extraFields": {"x": loop}}})


@pytest.mark.parametrize("depth", [MAX_DEPTH + 5, 50_000])
def test_deep_nesting_is_refused(depth: int, tmp_path: Path) -> None:
    deep_json = '{"systemPrompt": "hi", "params": {"extraFields": {"x": ' + "[" * depth + "]" * depth + "}}}"
    assert "nested" in errors_of(deep_json, "deep.json", tmp_path)[0][1]
    deep_yaml = "systemPrompt: hi\nparams:\n  extraFields:\n    x: " + "[" * depth + "]" * depth + "\n"
    assert "nested" in errors_of(deep_yaml, "deep.yaml", tmp_path)[0][1]


@pytest.mark.parametrize(("text", "name", "path"), [
    ('{"systemPrompt": "hi", "params": {"extraFields": {"n": ' + "9" * 5000 + "}}}", "big.json", "$"),
    ("systemPrompt: hi\nparams:\n  extraFields:\n    n: " + "9" * 5000 + "\n", "big.yaml", "$"),
    ('{"systemPrompt": "hi", "params": {"extraFields": {"n": 18446744073709551616}}}', "b.json",
     "$.params.extraFields.n"),
    ('{"maxStep": 99999999999999999999999}', "steps.json", "$.maxStep"),
])
def test_huge_integers_are_refused_with_a_path(text: str, name: str, path: str, tmp_path: Path) -> None:
    errors = errors_of(text, name, tmp_path)
    assert errors[0][0] == path and "out of range" in errors[0][1]


@pytest.mark.parametrize(("text", "name"), [
    ("timeouts: {read: .inf}\n", "inf.yaml"),
    ("timeouts: {read: .nan}\n", "nan.yaml"),
    ('{"timeouts": {"read": Infinity}}', "inf.json"),
    ('{"timeouts": {"connect": -1}}', "neg.json"),
    ("timeouts: {read: 0}\n", "zero.yaml"),
])
def test_bad_timeouts_are_refused_with_a_path(text: str, name: str, tmp_path: Path) -> None:
    errors = errors_of(text, name, tmp_path)
    assert errors[0][0] in ("$.timeouts.read", "$.timeouts.connect")


def test_globals_files_get_the_same_limits(tmp_path: Path) -> None:
    from chainreact.config import build_globals

    g = tmp_path / "g.yaml"
    g.write_text(ALIAS_BOMB)
    with pytest.raises(UsageError, match="expands to more than"):
        build_globals([], [str(g)])


def test_a_normal_document_with_aliases_still_loads() -> None:
    data = parse_text("messages: [&m {role: user, content: hi}, *m]\nparams: {temperature: 0.2}\n")
    assert data["messages"] == [{"role": "user", "content": "hi"}] * 2
    assert load_document(json.dumps(data) + "\n").config.params.temperature == 0.2


@pytest.mark.parametrize("value", ["[" * 100_000 + "]" * 100_000, "9" * 5000, "[" * 200 + "]" * 200,
                                   "18446744073709551616"])
def test_bad_json_globals_are_usage_errors(value: str) -> None:
    from chainreact.config import build_globals

    with pytest.raises(UsageError, match="--global"):
        build_globals([f"x:={value}"])
