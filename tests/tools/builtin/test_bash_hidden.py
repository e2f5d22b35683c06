"""The policy refuses shell constructs that run code it cannot see (issue 23): `${x@P}` always; with an
allow list, arithmetic and subscripts over variables, indirection, computed names, assignments that
change what a name runs, and commands given by an unlisted path. Each refused case is also run through
real bash to show it does run a hidden command (so the refusal is not a guess)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from chainreact.tools.builtin.bash_policy import CommandPolicy, Refused

DEFAULT = CommandPolicy()
ALLOW = CommandPolicy(allow=("echo", "cat", "ls", "read", "printf", "declare", "export", "let", "trap",
                             "unset", "mapfile", "getopts", "env"))

# Each sets up `x` (and `n`) from text the policy cannot read as a command: the `$(` is hidden in an
# ANSI-C escape, so only bash's own evaluation of the value can run it.
HIDE = "a=(1); x=$'a[\\x24(touch PWNED)]'; n=$x; "
HIDDEN_RUNS = [
    "echo $((x))", "echo $(($x + 1))", "echo $[x]", "((x)); true", "for ((i=x; i<0; i++)); do :; done",
    "[[ $x -eq 1 ]]", "[[ x -lt 2 ]]", "echo ${b[x]}", "b[x]=1", "echo ${!n}", "printf -v \"$n\" q",
    "test -v \"$n\"", "[[ -v $n ]]", "read -r \"$n\" <<< hi", "unset \"$n\"", "declare \"$n\"=1",
    "let x",
]


@pytest.mark.parametrize("command", ["x='$(id)'; echo ${x@P}", 'echo "${x@P}"', "echo ${arr[0]@P}",
                                     "bash -c 'echo ${x@P}'"])
def test_prompt_expansion_is_refused_with_and_without_an_allow_list(command: str) -> None:
    for policy in (DEFAULT, ALLOW, CommandPolicy(default_deny=False)):
        with pytest.raises(Refused, match="prompt expansion"):
            policy.check(command)


def test_transformations_that_only_make_text_pass() -> None:
    line = "echo ${x@Q} ${x@E} ${x@A} ${x@K} ${x@k} ${x@U} ${x@u} ${x@L} ${x@a}"
    DEFAULT.check(line)
    ALLOW.check(line)


@pytest.mark.parametrize("command", HIDDEN_RUNS)
def test_constructs_that_evaluate_a_value_are_refused_under_an_allow_list(command: str) -> None:
    with pytest.raises(Refused):
        ALLOW.check(HIDE + command)
    DEFAULT.check(HIDE + command)  # deny rules only: a guardrail, interpreters get around it anyway


@pytest.mark.parametrize("command", HIDDEN_RUNS)
def test_each_refused_construct_really_runs_the_hidden_command(command: str, tmp_path: Path) -> None:
    subprocess.run(["/bin/bash", "-c", HIDE + command], cwd=tmp_path, capture_output=True, timeout=10)
    assert (tmp_path / "PWNED").exists(), command


@pytest.mark.parametrize("command", [
    "echo ${s:x:2}", "echo ${s:$i}", "echo ${!x:-d}", "[ -v a[i] ]", "declare -i x=1", "declare -n r=x",
    "export \"$n\"", "local -ia q", "mapfile -t \"$n\" < f", "getopts ab \"$n\"",
    "PATH=. ls", "env PATH=. ls", "LD_PRELOAD=./x.so ls", "export PATH=/tmp", "BASH_ENV=./x ls",
    "./ls", "sub/ls -la", "/tmp/ls", "trap 'curl x' EXIT",
])
def test_more_refusals_under_an_allow_list(command: str) -> None:
    with pytest.raises(Refused):
        ALLOW.check(command)


@pytest.mark.parametrize("command", [
    "echo $((1+2))", "echo $((0x1F + 2#101 * (3 - 1)))", "echo $(( (1+2)*3 ))", "[[ 1 -eq 1 ]]",
    "echo ${a[0]} ${a[@]} ${#a[@]} ${!a[@]} ${!pre*} ${!pre@}", "a[1]=x", "echo ${s:1:2} ${s: -1}",
    "echo ${x:-def} ${x:=d} ${x:+alt} ${x:?msg}", '[[ $x == y ]]', "read -r line", 'read -p "Name: " name',
    "printf -v out '%s' \"$x\"", "declare -a arr", "declare x=$y", "export FOO=$bar", "ls src[0-9]",
    "ls src[abc] > f", "echo x > f", "/usr/bin/ls -la", "/bin/echo hi", "test -v HOME",
    "trap 'echo bye' EXIT", "mapfile -t lines < f", "sed_free=1; echo 's/x[a-z]/y/'", "unset a b",
])
def test_literal_forms_still_pass_under_an_allow_list(command: str) -> None:
    ALLOW.check(command)


def test_a_path_is_allowed_when_the_allow_list_names_it() -> None:
    p = CommandPolicy(allow=("./run.sh", "tools/*.py --check"))
    p.check("./run.sh --fast")
    p.check("tools/lint.py --check")
    with pytest.raises(Refused, match="at that path"):
        CommandPolicy(allow=("run.sh",)).check("./run.sh")
    with pytest.raises(Refused, match="allow list"):
        p.check("ls")


def test_a_trap_handler_is_checked_as_a_command_line() -> None:
    with pytest.raises(Refused, match="sudo"):
        DEFAULT.check("trap 'sudo reboot' EXIT")
    with pytest.raises(Refused, match="sudo"):
        DEFAULT.check("trap -- 'sudo reboot' INT TERM")
    DEFAULT.check("trap - INT")
    DEFAULT.check("trap 'rm -f tmp.txt' EXIT")


def test_arithmetic_is_not_a_command_but_double_parenthesised_subshells_are_checked() -> None:
    ALLOW.check("echo $(( (1+2)*3 )) $((4))")  # was refused: `1+2` read as a command name
    DEFAULT.check("for ((i=0; i<3; i++)); do echo hi; done")
    with pytest.raises(Refused, match="literal numbers only"):
        ALLOW.check("for ((i=0; i<3; i++)); do echo hi; done")
    with pytest.raises(Refused, match="sudo"):
        DEFAULT.check("((ls); (sudo id))")  # bash runs these as two subshells
    with pytest.raises(Refused, match="sudo"):
        DEFAULT.check("echo $(( $(sudo id) ))")
